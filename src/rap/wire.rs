//! RAP wire types: the toolset definition, the invocation and the callback messages.
//!
//! Plain serde data, apart from the tool registry and the transports, like [`crate::protocol`]
//! is for OXP.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The toolset definition served at `GET /.well-known/rap-toolset`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Toolset {
    /// Unique identifier of the toolset (1 to 128 characters).
    pub(crate) name: String,
    /// What the toolset is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    /// The URL invocations are POSTed to.
    pub(crate) endpoint: String,
    /// Content hash of the served tools; an invocation carrying another `toolset_version` is
    /// answered 409.
    pub(crate) version: String,
    /// The operations.
    pub(crate) tools: Vec<ToolsetTool>,
}

/// One operation of a [`Toolset`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolsetTool {
    /// The operation name (letters, digits, `_` and `-`): what arrives as `operation`.
    pub(crate) name: String,
    /// What the operation does, for the model.
    pub(crate) description: String,
    /// JSON Schema of the arguments.
    #[serde(rename = "inputSchema")]
    pub(crate) input_schema: Value,
    /// How the operation behaves, when the tool says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) annotations: Option<Annotations>,
}

/// A toolset tool's `annotations`, in the published names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Annotations {
    /// The authorization provider the tool needs a token from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) requires_auth: Option<String>,
    /// It only reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) read_only: Option<bool>,
    /// It may destroy something: runtimes should ask the user first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) destructive: Option<bool>,
    /// It can be retried without side effects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) idempotent: Option<bool>,
    /// It may take minutes or hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) long_running: Option<bool>,
}

/// Longest callback URL accepted.
pub(crate) const MAX_URL_CHARS: usize = 2048;

/// Longest id, thread id, operation or user id accepted.
pub(crate) const MAX_ID_CHARS: usize = 256;

/// Where the result of an invocation goes: the fields without which nothing can be delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ReplyTo {
    /// The tool call id.
    pub(crate) id: String,
    /// The conversation thread id.
    pub(crate) group_id: String,
    /// The callback URL.
    pub(crate) callback_url: String,
    /// The secondary call id, when the invocation had a string one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) call_id: Option<String>,
}

impl ReplyTo {
    /// Reads the addressing fields of a body that may be malformed otherwise: `None` when
    /// `id`, `group_id` or `callback_url` is missing, empty or not a string.
    pub(crate) fn from_body(body: &Map<String, Value>) -> Option<Self> {
        let text = |name: &str, max: usize| {
            body.get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty() && s.chars().count() <= max)
                .map(str::to_owned)
        };
        Some(Self {
            id: text("id", MAX_ID_CHARS)?,
            group_id: text("group_id", MAX_ID_CHARS)?,
            callback_url: text("callback_url", MAX_URL_CHARS)?,
            call_id: text("call_id", MAX_ID_CHARS),
        })
    }
}

/// The `tool_result` message POSTed to the callback URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolResult {
    /// Always `"tool_result"`.
    #[serde(rename = "type")]
    pub(crate) kind: String,
    /// The invocation's `group_id`.
    pub(crate) group_id: String,
    /// The invocation's `id`.
    pub(crate) id: String,
    /// The invocation's `call_id`, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) call_id: Option<String>,
    /// The result: the output (a string as it is, anything else JSON-encoded), or a
    /// JSON-encoded [`ErrorText`].
    pub(crate) text: String,
    /// The result as content items, when the tool gave any (it supersedes `text` for the
    /// model; `text` stays for runtimes that read only it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<Vec<ContentItem>>,
    /// How to show the result to a person, when the tool said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) display_as: Option<Vec<Segment>>,
    /// `true` when the call opened a subscription: the runtime tracks it, and its events
    /// (`subscription_event`) follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) subscription: Option<bool>,
}

impl ToolResult {
    /// A `tool_result` for `to` carrying `text`.
    pub(crate) fn new(to: &ReplyTo, text: String) -> Self {
        Self {
            kind: "tool_result".into(),
            group_id: to.group_id.clone(),
            id: to.id.clone(),
            call_id: to.call_id.clone(),
            text,
            content: None,
            display_as: None,
            subscription: None,
        }
    }
}

/// A content item of a result: the published spec defines text and image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentItem {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 of the image bytes.
        data: String,
        /// Its media type.
        #[serde(rename = "mediaType")]
        media_type: String,
    },
}

/// A display segment: `{"type", "content"}`, the content's shape set by the type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "content", rename_all = "snake_case")]
pub(crate) enum Segment {
    /// A line of text.
    Text(String),
    /// A unified diff of one file.
    Diff {
        /// The file.
        path: String,
        /// The diff.
        patch: String,
    },
    /// An image.
    Image {
        /// Base64 of the image bytes.
        data: String,
        /// Its media type.
        #[serde(rename = "mediaType")]
        media_type: String,
    },
}

/// `POST /cancel_tool_call`: the runtime cancelled a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CancelToolCall {
    /// The thread (`group_id` of the invocation).
    pub(crate) thread_id: String,
    /// The call (`id` of the invocation).
    pub(crate) tool_call_id: String,
}

impl CancelToolCall {
    /// The call a `/cancel_tool_call` or `/tool_call_status` body names, when both its ids can
    /// be looked up and logged as they are.
    pub(crate) fn of_body(body: &[u8]) -> Option<Self> {
        crate::server::object(body)
            .filter(|c: &Self| is_loggable_id(&c.thread_id) && is_loggable_id(&c.tool_call_id))
    }
}

/// An id short enough and plain enough to log as it is (no control characters, so no forged
/// log lines).
pub(crate) fn is_loggable_id(id: &str) -> bool {
    !id.is_empty() && id.chars().count() <= MAX_ID_CHARS && !id.chars().any(char::is_control)
}

/// What the `text` of a failed call holds, JSON-encoded: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ErrorText {
    /// The error.
    pub(crate) error: ErrorBody,
}

/// The error of a failed call: the OXP error fields plus a machine-readable `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ErrorBody {
    /// `malformed_invocation`, `unknown_operation`, `invalid_arguments`, `rate_limited`,
    /// `missing_requirement` or `tool_error`.
    pub(crate) kind: String,
    /// What went wrong, for the model and the user.
    pub(crate) message: String,
    /// Whether the same call may succeed later.
    pub(crate) can_retry: bool,
    /// How long to wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retry_after_ms: Option<u64>,
    /// Extra guidance for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) additional_prompt_content: Option<String>,
    /// Invalid arguments by dotted path (`invalid_arguments` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parameter_errors: Option<std::collections::BTreeMap<String, String>>,
}

/// `POST /close_thread`: the runtime closed a conversation thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CloseThread {
    /// The closed thread, as the published spec names it.
    #[serde(default)]
    pub(crate) thread_id: Option<String>,
    /// The closed thread, as the first reading of the spec named it.
    #[serde(default)]
    pub(crate) group_id: Option<String>,
}
