//! The Bedrock AgentCore Gateway Lambda target: the gateway invokes the function directly with
//! the tool's arguments as the whole event, and names the tool in the client context
//! (`custom.bedrockAgentCoreToolName` = `<target>___<tool>`). The answer is an MCP
//! `CallToolResult` (`content`, `structuredContent`, `isError`), which the gateway hands to the
//! agent.
//!
//! Every answer is a result, never a function error: an unknown tool, a missing tool name or
//! arguments that are not an object come back as `isError: true` with a message, so the
//! agent sees why. The client context is read as plain JSON, so a non-string value among the
//! `custom` entries (which `lambda_runtime` types as strings) does not fail the invocation.

pub(crate) mod schema;

use crate::mcp::{Served, result};
use crate::server::{BoxFuture, CallContext, DirectHandler};
use crate::settings::{ConfigError, Env};
use oxp_lambda_core::invoke::{Invoker, Target};
use oxp_lambda_core::refusal::ErrorClass;
use oxp_lambda_core::tool::ToolError;
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// The AgentCore Gateway target's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCoreConfig {
    /// `OXP_MCP_TOOLS`: the versions served, as for MCP (the gateway's tools are MCP tools).
    pub pins: Vec<String>,
    /// `OXP_AGENTCORE_USER_ARGUMENT`: the argument (e.g. `oxp_user_id`) that carries the end
    /// user to the target, set by the gateway's request interceptor from the caller's token;
    /// taken out of the arguments before the tool sees them. None by default: the gateway's
    /// Lambda events name no user.
    pub user_argument: Option<String>,
}

impl AgentCoreConfig {
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            pins: env.list("OXP_MCP_TOOLS"),
            user_argument: env
                .get("OXP_AGENTCORE_USER_ARGUMENT")
                .map(|a| a.trim().to_owned()),
        })
    }
}

/// The target as the Lambda role runs it: its tools built by the first invocation (or at start
/// when the function serves the role, so a bad `OXP_MCP_TOOLS` fails there).
#[derive(Debug)]
pub(crate) struct GatewayTarget {
    invoker: Arc<Invoker>,
    config: AgentCoreConfig,
    served: OnceLock<Result<Arc<Served>, String>>,
}

impl GatewayTarget {
    pub(crate) fn new(invoker: Arc<Invoker>, config: AgentCoreConfig) -> Self {
        Self {
            invoker,
            config,
            served: OnceLock::new(),
        }
    }

    /// The served tools; `Err` names what in the configuration is wrong.
    pub(crate) fn served(&self) -> Result<&Arc<Served>, &str> {
        self.served
            .get_or_init(|| crate::mcp::served(self.invoker.clone(), &self.config.pins))
            .as_ref()
            .map_err(String::as_str)
    }
}

impl DirectHandler for GatewayTarget {
    fn handle<'a>(
        &'a self,
        event: &'a [u8],
        client_context: Option<&'a [u8]>,
        context: CallContext,
    ) -> BoxFuture<'a, Value> {
        Box::pin(async move {
            match self.served() {
                Ok(served) => {
                    let user_argument = self.config.user_argument.as_deref();
                    invoke(served, user_argument, event, client_context, context).await
                }
                Err(_) => refused("The AgentCore target is misconfigured (OXP_MCP_TOOLS)".into()),
            }
        })
    }

    fn too_large(&self) -> Value {
        refused("The event is too large".into())
    }
}

/// The separator between the gateway target's name and the tool's.
const TARGET_SEPARATOR: &str = "___";

/// The client context keys the gateway sets, as far as a call uses them.
const TOOL_NAME: &str = "bedrockAgentCoreToolName";
const REQUEST_ID: &str = "bedrockAgentCoreAwsRequestId";

/// The longest user id taken from the arguments.
const MAX_USER_ID_CHARS: usize = 256;

/// The client context as JSON. Lambda's Runtime API hands it over as JSON; cargo-lambda's
/// emulator passes on the base64 of `aws lambda invoke --client-context` untouched, so that is
/// read too (base64 text is never JSON, the two cannot be mistaken).
fn client_context_json(raw: &[u8]) -> Option<Value> {
    use base64::Engine as _;
    serde_json::from_slice::<Value>(raw).ok().or_else(|| {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(raw.trim_ascii())
            .ok()?;
        serde_json::from_slice(&decoded).ok()
    })
}

/// Runs one gateway invocation: `event` is the raw event (the arguments), `client_context`
/// the raw client context JSON; the answer is the `CallToolResult` as JSON. `user_argument`
/// (`OXP_AGENTCORE_USER_ARGUMENT`) names the argument the gateway's interceptor puts the end
/// user in.
pub(crate) async fn invoke(
    served: &Served,
    user_argument: Option<&str>,
    event: &[u8],
    client_context: Option<&[u8]>,
    context: CallContext,
) -> Value {
    let custom = client_context
        .and_then(client_context_json)
        .and_then(|mut cc| cc.get_mut("custom").map(Value::take))
        .unwrap_or(Value::Null);
    let Some(qualified) = custom.get(TOOL_NAME).and_then(Value::as_str) else {
        return refused(format!(
            "The invocation names no tool: the client context has no custom.{TOOL_NAME} \
             (this function serves a Bedrock AgentCore Gateway Lambda target)"
        ));
    };
    let name = qualified
        .split_once(TARGET_SEPARATOR)
        .map_or(qualified, |(_, tool)| tool);
    let Some(tool) = served.get(name) else {
        // Refused by the invoker as every protocol's call of an unknown tool is (its line, its
        // caller's rate): a caller over its rate is told so.
        let call = context.call("agentcore", Target::Unserved(name.to_owned()), Value::Null);
        let answer = served.invoker().invoke(call).await;
        if answer
            .as_ref()
            .is_err_and(|e| e.class() != ErrorClass::NotFound)
        {
            return to_json(&result::from_invoke(answer, result::Revision::ALL));
        }
        let shown = crate::server::shown(name);
        return refused(format!("Unknown tool: {shown}"));
    };
    let mut input = match serde_json::from_slice::<Value>(event) {
        Ok(Value::Null) => Value::Object(Default::default()),
        Ok(input) => input,
        Err(_) => return refused("The event is not JSON: it must be the tool's arguments".into()),
    };
    // The end user, as the gateway's interceptor wrote it: taken out before the tool sees the
    // arguments (its schema knows nothing of it).
    let user_id = user_argument
        .zip(input.as_object_mut())
        .and_then(|(name, args)| args.remove(name))
        .and_then(|v| v.as_str().map(str::to_owned))
        .filter(|u| !u.is_empty() && u.chars().count() <= MAX_USER_ID_CHARS);
    let mut call = context.call("agentcore", Target::Tool(tool.tool.clone()), input);
    call.user_id = user_id;
    // The gateway's request id ties the call's log line to the gateway's.
    call.trace_id = custom
        .get(REQUEST_ID)
        .and_then(Value::as_str)
        .map(|id| id.chars().take(256).collect());
    let answer = served.invoker().invoke(call).await;
    to_json(&result::from_invoke(answer, result::Revision::ALL))
}

/// A call refused before any tool ran, as the `isError` result the agent reads.
pub(crate) fn refused(message: String) -> Value {
    to_json(&result::tool_error(&ToolError::new(message)))
}

fn to_json(result: &rmcp::model::CallToolResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
