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
