//! Amazon Bedrock Agents action groups (`OXP_LAMBDA_ROLE=bedrock-agent`) as the values the app
//! takes: a direct-invocation role that answers groups defined either way, with its function
//! schema export (`oxp-lambda schema --bedrock-agent`), the API schema export of a group
//! defined with one (`oxp-lambda schema --bedrock-agent-api`), and `App::handle_bedrock_agent`.

use crate::app::App;
use crate::app::protocol::{Assembly, Contribution, Protocol};
use crate::bedrock::ActionGroup;
use crate::config::{Config, ConfigError, Env};
use crate::server::LambdaRole;
use oxp_lambda_core::registry::Registry;
use serde_json::Value;
use std::sync::Arc;

/// The role's name.
const ROLE: &str = "bedrock-agent";

/// Bedrock Agents action groups (function details or an API schema).
#[derive(Debug, Clone, Copy, Default)]
pub struct BedrockAgents;

impl Protocol for BedrockAgents {
    type Settings = ();

    fn name(&self) -> &'static str {
        ROLE
    }

    fn settings(&self, _env: &Env<'_>, _server: &Config) -> Result<(), ConfigError> {
        Ok(())
    }

    fn build(&self, (): (), assembly: &Assembly<'_>) -> Result<Contribution, String> {
        let group = Arc::new(ActionGroup::new(assembly.invoker.clone()));
        if assembly.config.lambda_role == ROLE {
            group.agent().map_err(str::to_owned)?;
        }
        Ok(Contribution::default().lambda_role(LambdaRole::direct(ROLE, group)))
    }

    fn schema(&self, (): &(), registry: &Registry) -> Option<Result<Value, String>> {
        Some(
            registry
                .served(&[], "")
                .and_then(|tools| crate::bedrock::schema::export(&tools)),
        )
    }
}

/// The API schema export of the same action group (`oxp-lambda schema --bedrock-agent-api`):
/// an export only, as [`BedrockAgents`]' role answers the events of groups defined either way.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BedrockAgentsApi;

impl Protocol for BedrockAgentsApi {
    type Settings = ();

    fn name(&self) -> &'static str {
        "bedrock-agent-api"
    }

    fn settings(&self, _env: &Env<'_>, _server: &Config) -> Result<(), ConfigError> {
        Ok(())
    }

    fn build(&self, (): (), _assembly: &Assembly<'_>) -> Result<Contribution, String> {
        Ok(Contribution::default())
    }

    fn schema(&self, (): &(), registry: &Registry) -> Option<Result<Value, String>> {
        Some(
            registry
                .served(&[], "")
                .and_then(|tools| crate::bedrock::openapi::export(&tools)),
        )
    }
}

impl App {
    /// Answers one Amazon Bedrock Agents action group invocation as the Lambda role
    /// `OXP_LAMBDA_ROLE=bedrock-agent` does: `event` is the raw event (`messageVersion`,
    /// `actionGroup`, `function` or `apiPath`, `parameters`, session attributes); the answer is
    /// the documented response of the group's kind (`response.functionResponse.responseBody.TEXT.body`,
    /// or `response.responseBody["application/json"].body` with `httpStatusCode`), with
    /// `responseState` `REPROMPT` or `FAILURE` when the call failed.
    pub async fn handle_bedrock_agent(&self, event: &[u8]) -> Value {
        match self.handle_direct(ROLE, event, None).await {
            Some(answer) => answer,
            // Not served by this app (a program that replaced the protocol): still the
            // documented response shape, never `null`.
            None => ActionGroup::not_served(),
        }
    }
}
