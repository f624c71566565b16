//! The Bedrock AgentCore Gateway target (`OXP_LAMBDA_ROLE=agentcore`) as the value the app
//! takes: a direct-invocation role, its schema export (`oxp-lambda schema --agentcore`) and
//! `App::handle_agentcore`.

use crate::agentcore::{AgentCoreConfig, GatewayTarget, refused};
use crate::app::App;
use crate::app::protocol::{Assembly, Contribution, Protocol};
use crate::config::{Config, ConfigError, Env};
use crate::server::LambdaRole;
use oxp_lambda_core::registry::Registry;
use serde_json::Value;
use std::sync::Arc;

/// The role's name.
const ROLE: &str = "agentcore";

/// The AgentCore Gateway Lambda target.
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentCore;

impl Protocol for AgentCore {
    type Settings = AgentCoreConfig;

    fn name(&self) -> &'static str {
        ROLE
    }

    fn settings(&self, env: &Env<'_>, _server: &Config) -> Result<AgentCoreConfig, ConfigError> {
        AgentCoreConfig::from_env(env)
    }

    fn build(
        &self,
        settings: AgentCoreConfig,
        assembly: &Assembly<'_>,
    ) -> Result<Contribution, String> {
        if let Some(name) = &settings.user_argument {
            user_argument_kept_from_tools(name, assembly.invoker.registry())?;
        }
        let target = Arc::new(GatewayTarget::new(assembly.invoker.clone(), settings));
        if assembly.config.lambda_role == ROLE {
            target.served().map_err(str::to_owned)?;
        }
        Ok(Contribution::default().lambda_role(LambdaRole::direct(ROLE, target)))
    }

    fn schema(
        &self,
        settings: &AgentCoreConfig,
        registry: &Registry,
    ) -> Option<Result<Value, String>> {
        Some(
            registry
                .served(&settings.pins, "OXP_MCP_TOOLS")
                .and_then(|tools| crate::agentcore::schema::export(&tools)),
        )
    }
}

/// Refuses a tool whose own input has a property named like the user argument: the target takes
/// that argument out before the tool runs, so the tool would silently lose its value.
fn user_argument_kept_from_tools(name: &str, registry: &Registry) -> Result<(), String> {
    let clash = registry.tools().iter().find(|tool| {
        tool.input_schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.contains_key(name))
    });
    match clash {
        Some(tool) => Err(format!(
            "tool {}@{} has an input property named {name}, which OXP_AGENTCORE_USER_ARGUMENT takes for the user: rename one of them",
            tool.id, tool.version
        )),
        None => Ok(()),
    }
}

impl App {
    /// Answers one Bedrock AgentCore Gateway invocation as the Lambda role
    /// `OXP_LAMBDA_ROLE=agentcore` does: `event` is the raw event (the tool's arguments),
    /// `client_context` the raw client context JSON naming the tool
    /// (`custom.bedrockAgentCoreToolName`). The answer is an MCP `CallToolResult`.
    pub async fn handle_agentcore(&self, event: &[u8], client_context: Option<&[u8]>) -> Value {
        self.handle_direct(ROLE, event, client_context)
            .await
            .unwrap_or_else(|| refused("The AgentCore target is not served".into()))
    }
}
