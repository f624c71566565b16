//! The invoker's answer as an MCP `CallToolResult`, for `/mcp` and the AgentCore Gateway target:
//! the tool's content items as content blocks, its value as text and, for object outputs,
//! `structuredContent`.
//!
//! Only a call the protocol cannot route (an unknown tool) is a JSON-RPC error. Everything the
//! model can act on is a tool result with `isError: true` whose text is a JSON object with the
//! OXP error fields (`message`, `can_retry`, `retry_after_ms`, `additional_prompt_content`)
//! or, for invalid arguments, `parameter_errors` naming each bad parameter. The 2025-11-25
//! revision asks for input validation errors as tool errors so that the model can correct its
//! call (a JSON-RPC -32602 is shown to the client, not to the model); earlier revisions leave
//! it open, so every revision gets the same answer.

use base64::Engine;
use oxp_lambda_core::content::{Content, ResourceBody, ToolOutput};
use oxp_lambda_core::invoke::{Outcome, Rejection};
use oxp_lambda_core::refusal::Missing;
use oxp_lambda_core::registry::RegisteredTool;
use oxp_lambda_core::tool::ToolError;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, InputRequest, InputRequests, InputRequiredResult,
    ProtocolVersion, Resource, ResourceContents,
};
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

/// What a request's revision lets a result carry: `resource_link` came with 2025-06-18.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Revision {
    /// `resource_link` content blocks (else a link is a text block).
    pub(crate) links: bool,
}

impl Revision {
    /// Every content kind (the revisions since 2025-06-18, and tasks, which came later).
    pub(crate) const ALL: Self = Self { links: true };

    /// The revision of a request with `parts`: its `MCP-Protocol-Version` header, which every
    /// revision since 2025-06-18 sends (absent, 2025-03-26, as rmcp takes it). `None` (no HTTP
    /// request) serves every kind.
    pub(crate) fn of(parts: Option<&http::request::Parts>) -> Self {
        let Some(parts) = parts else {
            return Self::ALL;
        };
        match super::plumbing::header_version(&parts.headers) {
            Ok(version) => Self::of_version(version.unwrap_or(&ProtocolVersion::V_2025_03_26)),
            // Refused by rmcp's transport before a call runs.
            Err(()) => Self::ALL,
        }
    }

    /// What `version` lets a result carry.
    pub(crate) fn of_version(version: &ProtocolVersion) -> Self {
        Self {
            links: version >= &ProtocolVersion::V_2025_06_18,
        }
    }
}

/// The result of a call that reached its tool.
pub(crate) fn from_outcome(outcome: Outcome, revision: Revision) -> CallToolResult {
    match outcome.result {
        Ok(output) => success(&outcome.tool, output, revision),
        Err(error) => tool_error(&error),
    }
}

/// The content blocks of a result: the tool's content items, then its value as JSON text (a
/// string as it is) when it has one, or when there is nothing else to show. The value is also
/// `structuredContent` when the output schema is an object (MCP's rule); a non-object value is
/// only text. Display segments are for RAP runtimes: MCP has no place for them.
fn success(tool: &RegisteredTool, output: ToolOutput<Value>, revision: Revision) -> CallToolResult {
    let mut blocks: Vec<ContentBlock> = output
        .content
        .iter()
        .map(|item| block(item, revision))
        .collect();
    if blocks.is_empty() || !output.value.is_null() {
        let text = match &output.value {
            // A string output is the text itself, not a quoted JSON string.
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        blocks.push(ContentBlock::text(text));
    }
    let mut result = CallToolResult::success(blocks);
    if has_structured_output(tool) {
        result.structured_content = Some(output.value);
    }
    result
}

/// One content item as an MCP content block of `revision`.
pub(crate) fn block(item: &Content, revision: Revision) -> ContentBlock {
    let b64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    match item {
        Content::Text { text } => ContentBlock::text(text.clone()),
        Content::Image { data, media_type } => ContentBlock::image(b64(data), media_type.clone()),
        Content::Audio { data, media_type } => ContentBlock::audio(b64(data), media_type.clone()),
        Content::Resource {
            uri,
            media_type,
            body,
        } => ContentBlock::resource(match body {
            ResourceBody::Text(text) => ResourceContents::TextResourceContents {
                uri: uri.clone(),
                mime_type: media_type.clone(),
                text: text.clone(),
                meta: None,
            },
            ResourceBody::Blob(data) => ResourceContents::BlobResourceContents {
                uri: uri.clone(),
                mime_type: media_type.clone(),
                blob: b64(data),
                meta: None,
            },
        }),
        Content::Link {
            uri,
            name,
            media_type,
            description,
        } if !revision.links => {
            // Before 2025-06-18 a link is text: its name, what it is, where.
            let described = description.as_ref().map(|d| format!(" ({d})"));
            let kind = media_type.as_ref().map(|m| format!(" [{m}]"));
            let (described, kind) = (described.unwrap_or_default(), kind.unwrap_or_default());
            ContentBlock::text(format!("{name}{described}: {uri}{kind}"))
        }
        Content::Link {
            uri,
            name,
            media_type,
            description,
        } => {
            let mut link = Resource::new(uri.clone(), name.clone());
            link.mime_type = media_type.clone();
            link.description = description.clone();
            ContentBlock::resource_link(link)
        }
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

/// A call refused before its tool ran: the core's user message and retry guidance, never its
/// developer detail.
pub(crate) fn from_rejection(rejection: &Rejection) -> CallToolResult {
    let message = rejection.user_message();
    let retry_after_ms = rejection
        .retry_after()
        .map(|after| u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
    let parameter_errors = match rejection {
        Rejection::InvalidInput(errors) => Some(errors),
        _ => None,
    };
    error_result(&ErrorText {
        message: &message,
        can_retry: rejection.class().retryable(),
        retry_after_ms,
        additional_prompt_content: None,
        parameter_errors,
    })
}

fn error_result(text: &ErrorText<'_>) -> CallToolResult {
    let text = serde_json::to_string(text).unwrap_or_else(|_| r#"{"message":"error"}"#.into());
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The provider and the URL-mode elicitation (`mode`, `url`, `message`) of a call refused for
/// want of the user's authorization at a provider whose flow the server runs.
fn authorization_link(rejection: &Rejection) -> Option<(&str, Value)> {
    let Rejection::Missing(Missing::Authorization {
        provider,
        challenge: Some(challenge),
    }) = rejection
    else {
        return None;
    };
    let elicitation = serde_json::json!({
        "mode": "url",
        "url": challenge.url,
        "message": format!("Authorize access to '{provider}' to continue."),
    });
    Some((provider, elicitation))
}

/// The `input_required` result of a 2026-07-28 call refused for want of the user's
/// authorization at a provider whose flow the server runs: a URL-mode `elicitation/create`
/// with the link. The client opens it for its user and calls again, which then finds the token.
pub(crate) fn url_elicitation(rejection: &Rejection) -> Option<InputRequiredResult> {
    let (provider, params) = authorization_link(rejection)?;
    let request = serde_json::json!({"method": "elicitation/create", "params": params});
    let request: InputRequest = serde_json::from_value(request).ok()?;
    let mut requests = InputRequests::new();
    requests.insert(format!("authorize_{provider}"), request);
    Some(InputRequiredResult::from_input_requests(requests))
}

/// The 2025-11-25 `URLElicitationRequiredError` (-32042) of a call refused for want of the
/// user's authorization: the link as a URL-mode elicitation the client opens for its user
/// before it calls again.
pub(crate) fn url_elicitation_required(rejection: &Rejection) -> Option<ErrorData> {
    let (_, mut elicitation) = authorization_link(rejection)?;
    elicitation["elicitationId"] = uuid::Uuid::new_v4().to_string().into();
    Some(ErrorData::new(
        rmcp::model::ErrorCode(-32042),
        "This request requires the user's authorization",
        Some(serde_json::json!({"elicitations": [elicitation]})),
    ))
}

/// An answer as a tool result of `revision`, whatever it was.
pub(crate) fn from_invoke(
    answer: Result<Outcome, Rejection>,
    revision: Revision,
) -> CallToolResult {
    match answer {
        Ok(outcome) => from_outcome(outcome, revision),
        Err(rejection) => from_rejection(&rejection),
    }
}
