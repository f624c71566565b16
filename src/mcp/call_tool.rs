//! `tools/call` as a request: a long-running tool for a client that declared the tasks
//! extension becomes a task; any other call runs here, asking its client for input the way
//! the request's revision allows. Run within the Lambda invocation it came in (rmcp gives the
//! request a task of its own, which would not carry the invocation's fields).

use super::handler::{Asking, McpServer, Rpc};
use crate::server::CallContext;
use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use serde_json::Value;
use std::sync::Arc;

impl McpServer {
    /// Answers a `tools/call` request.
    pub(super) async fn call_tool_request(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<http::request::Parts>();
        let fields = parts
            .and_then(|p| p.extensions.get::<Arc<crate::observe::Fields>>())
            .cloned();
        crate::observe::within(fields, async {
            // A long-running tool (or one served only as a task) called by a client that
            // declared the tasks extension runs as a task: the answer is its handle, at once.
            let required = self.0.task_required(&request.name);
            let declared = declares_tasks(&context.meta);
            if let Some(tasks) = self.0.tasks()
                && declared
                && let Some(tool) = self.0.get(&request.name)
                && (required || tool.annotations.long_running == Some(true))
            {
                let context = parts.map(CallContext::of).unwrap_or_default();
                let arguments = request.arguments.unwrap_or_default();
                let created = tasks.create(context, &request.name, arguments).await?;
                return Ok(CallToolResponse::Task(created));
            }
            if required && !declared {
                return Err(missing_tasks_capability());
            }
            let asking = match elicitation_modes(&context.meta) {
                Some((form, url)) => Asking::Rounds {
                    form,
                    url,
                    state: request.request_state.as_deref(),
                    responses: request.input_responses.as_ref(),
                },
                None => Asking::Not,
            };
            let rpc = Rpc {
                id: Some(&context.id),
                traceparent: context.meta.get_traceparent(),
                progress: super::progress::Streamed::of(&context),
                closed: Some(&context.ct),
            };
            self.call(&request.name, request.arguments, parts, rpc, asking)
                .await
        })
        .await
    }
}

/// The -32021 of a call to a tool served only as a task (`OXP_MCP_TASK_REQUIRED`) from a client
/// that did not declare the tasks extension (SEP-2663, "Required Capabilities").
fn missing_tasks_capability() -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode(super::round_trip::MISSING_REQUIRED_CLIENT_CAPABILITY),
        "Missing required client capability: the tool runs only as a task (io.modelcontextprotocol/tasks)",
        Some(serde_json::json!({"requiredCapabilities": {"extensions": {
            rmcp::model::TASKS_EXTENSION_ID: {}
        }}})),
    )
}

/// Whether the request's client declared the tasks extension on it.
fn declares_tasks(meta: &rmcp::model::MetaObject) -> bool {
    meta.0
        .get("io.modelcontextprotocol/clientCapabilities")
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(rmcp::model::TASKS_EXTENSION_ID))
        .is_some()
}

/// The elicitation modes (form, URL) a 2026-07-28 request's client declared on the request
/// (`_meta["io.modelcontextprotocol/clientCapabilities"].elicitation`; an empty object is
/// form alone); `None` for a request of an earlier revision, which declares them at
/// `initialize` only, which a stateless server does not see on `tools/call`.
fn elicitation_modes(meta: &rmcp::model::MetaObject) -> Option<(bool, bool)> {
    let modern = meta
        .0
        .get("io.modelcontextprotocol/protocolVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| v >= "2026-07-28");
    if !modern {
        return None;
    }
    let elicitation = meta
        .0
        .get("io.modelcontextprotocol/clientCapabilities")
        .and_then(|c| c.get("elicitation"))
        .and_then(Value::as_object);
    Some(match elicitation {
        None => (false, false),
        Some(modes) if modes.is_empty() => (true, false),
        Some(modes) => (modes.contains_key("form"), modes.contains_key("url")),
    })
}
