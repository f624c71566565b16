//! The Bedrock AgentCore Gateway Lambda target (`OXP_LAMBDA_ROLE=agentcore`) as the value the
//! app takes: a direct-invocation role, and `App::handle_agentcore`.

use crate::agentcore::{invoke, refused};
use crate::app::App;
use crate::app::StartError;
use crate::app::protocol::{Assembly, BoxFuture, Contribution, Protocol};
use crate::config::LambdaRole;
use crate::mcp::Served;
use crate::transport::lambda::direct::DirectHandler;
use oxp_lambda_core::invoke::Invoker;
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The gateway target. It serves the tools MCP serves (`OXP_MCP_TOOLS` pins them), built for
/// the role at start and for [`App::handle_agentcore`] on its first call.
pub(crate) struct AgentCoreProtocol;

/// The served tools, built once.
struct GatewayTarget {
    invoker: Arc<Invoker>,
    config: crate::mcp::McpConfig,
    served: OnceLock<Result<Arc<Served>, String>>,
}

impl GatewayTarget {
    fn served(&self) -> Result<&Arc<Served>, &str> {
        self.served
            .get_or_init(|| crate::mcp::served(self.invoker.clone(), &self.config))
            .as_ref()
            .map_err(String::as_str)
    }
}

/// The target as the direct Runtime API loop runs it, with `OXP_AGENTCORE_USER_ARGUMENT`.
struct Direct(Arc<Served>, Option<String>);

impl DirectHandler for Direct {
    fn handle<'a>(
        &'a self,
        event: &'a [u8],
        client_context: Option<&'a [u8]>,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Value> {
        Box::pin(invoke(
            &self.0,
            self.1.as_deref(),
            event,
            client_context,
            deadline,
        ))
    }

    fn too_large(&self) -> Value {
        refused("The event is too large".into())
    }
}

impl Protocol for AgentCoreProtocol {
    fn build(&self, assembly: &Assembly<'_>) -> Result<Contribution, StartError> {
        let target = Arc::new(GatewayTarget {
            invoker: assembly.invoker.clone(),
            config: assembly.config.mcp.clone(),
            served: OnceLock::new(),
        });
        let mut contribution = Contribution::default();
        if assembly.config.lambda_role == LambdaRole::AgentCore {
            let served = target
                .served()
                .map_err(|e| StartError::Mcp(e.to_owned()))?
                .clone();
            contribution.lambda_role = Some((
                LambdaRole::AgentCore,
                super::direct_runner(Arc::new(Direct(
                    served,
                    assembly.config.mcp.agentcore_user_argument.clone(),
                ))),
            ));
        }
        contribution.state.insert(target);
        Ok(contribution)
    }
}

impl App {
    /// Answers one Bedrock AgentCore Gateway invocation as the Lambda role
    /// `OXP_LAMBDA_ROLE=agentcore` does: `event` is the raw event (the tool's arguments),
    /// `client_context` the raw client context JSON naming the tool
    /// (`custom.bedrockAgentCoreToolName`). The answer is an MCP `CallToolResult`.
    pub async fn handle_agentcore(&self, event: &[u8], client_context: Option<&[u8]>) -> Value {
        let Some(target) = self.protocol_state::<Arc<GatewayTarget>>() else {
            return refused("The AgentCore target is not served".into());
        };
        if event.len() > self.config().max_body_bytes {
            return refused("The event is too large".into());
        }
        match target.served() {
            Ok(served) => {
                let user_argument = target.config.agentcore_user_argument.as_deref();
                invoke(served, user_argument, event, client_context, None).await
            }
            Err(_) => refused("The AgentCore target is misconfigured (OXP_MCP_TOOLS)".into()),
        }
    }
}
