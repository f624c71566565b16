//! The invoker's answer as an MCP `CallToolResult`, for `/mcp` and the AgentCore Gateway target.
//!
//! Only a call the protocol cannot route (an unknown tool) is a JSON-RPC error. Everything the
//! model can act on is a tool result with `isError: true` whose text is a JSON object with the
//! OXP error fields (`message`, `can_retry`, `retry_after_ms`, `additional_prompt_content`)
//! or, for invalid arguments, `parameter_errors` naming each bad parameter. The 2025-11-25
//! revision asks for input validation errors as tool errors so that the model can correct its
//! call (a JSON-RPC -32602 is shown to the client, not to the model); earlier revisions leave
//! it open, so every revision gets the same answer.

use crate::core::invoke::{Outcome, RETRY_AFTER, Rejection};
use crate::core::registry::RegisteredTool;
use crate::core::tool::ToolError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The model-facing fields of an error. `developer_message` stays out: it is for the people
/// running the server and may name internals.
#[derive(Serialize)]
struct ErrorText<'a> {
    message: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    can_retry: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_prompt_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameter_errors: Option<&'a BTreeMap<String, String>>,
}

/// Whether `tool`'s output is served as `structuredContent` (MCP output schemas are objects).
pub(crate) fn has_structured_output(tool: &RegisteredTool) -> bool {
    tool.output_schema
        .as_ref()
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        == Some("object")
}

/// The result of a call that reached its tool.
pub(crate) fn from_outcome(outcome: Outcome) -> CallToolResult {
    match outcome.result {
        Ok(value) => {
            let text = match &value {
                // A string output is the text itself, not a quoted JSON string.
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            if has_structured_output(&outcome.tool) {
                result.structured_content = Some(value);
            }
            result
        }
        Err(error) => tool_error(&error),
    }
}

/// A failure of the tool, as the model sees it.
pub(crate) fn tool_error(error: &ToolError) -> CallToolResult {
    error_result(&ErrorText {
        message: &error.message,
        can_retry: error.can_retry,
        retry_after_ms: error.retry_after_ms,
        additional_prompt_content: error.additional_prompt_content.as_deref(),
        parameter_errors: None,
    })
}

/// A call refused before its tool ran. The messages are those of the OXP adapter's 400s: they
/// name ids and kinds, never a secret.
pub(crate) fn from_rejection(rejection: &Rejection) -> CallToolResult {
    let retry_ms = u64::try_from(RETRY_AFTER.as_millis()).unwrap_or(u64::MAX);
    let (message, can_retry, parameter_errors): (String, bool, _) = match rejection {
        Rejection::InvalidInput(errors) => (
            "The arguments do not match the tool's input schema".into(),
            false,
            Some(errors),
        ),
        Rejection::Busy { .. } => (
            "The tool server is busy; try again shortly".into(),
            true,
            None,
        ),
        Rejection::Store(_) => (
            "The call could not be recorded; try again shortly".into(),
            true,
            None,
        ),
        Rejection::Resolve(e) => (e.to_string(), false, None),
        Rejection::UserBinding(e) => (e.developer_message().to_owned(), false, None),
        Rejection::Missing(m) => (m.developer_message(), false, None),
        Rejection::KeyReused(_) => ("The call id was used for another call".into(), false, None),
    };
    error_result(&ErrorText {
        message: &message,
        can_retry,
        retry_after_ms: can_retry.then_some(retry_ms),
        additional_prompt_content: None,
        parameter_errors,
    })
}

fn error_result(text: &ErrorText<'_>) -> CallToolResult {
    let text = serde_json::to_string(text).unwrap_or_else(|_| r#"{"message":"error"}"#.into());
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// An answer as a tool result, whatever it was.
pub(crate) fn from_invoke(answer: Result<Outcome, Rejection>) -> CallToolResult {
    match answer {
        Ok(outcome) => from_outcome(outcome),
        Err(rejection) => from_rejection(&rejection),
    }
}
