//! RAP wire types: the toolset definition, the invocation and the callback messages.
//!
//! Plain serde data, apart from the tool registry and the transports, like [`crate::protocol`]
//! is for OXP.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The toolset definition served at `GET /.well-known/rap-toolset`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Toolset {
    /// Unique identifier of the toolset (1 to 128 characters).
    pub name: String,
    /// What the toolset is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The URL invocations are POSTed to.
    pub endpoint: String,
    /// Content hash of the served tools; an invocation carrying another `toolset_version` is
    /// answered 409.
    pub version: String,
    /// The operations.
    pub tools: Vec<ToolsetTool>,
}

/// One operation of a [`Toolset`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolsetTool {
    /// The operation name (letters, digits, `_` and `-`): what arrives as `operation`.
    pub name: String,
    /// What the operation does, for the model.
    pub description: String,
    /// JSON Schema of the arguments.
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

/// A tool invocation, once its every field has the type the protocol gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    /// The operation name.
    pub operation: String,
    /// The arguments (a JSON object).
    pub arguments: Map<String, Value>,
    /// The tool call id, echoed in the result.
    pub id: String,
    /// Optional secondary call id, echoed in the result when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Where the result is POSTed.
    pub callback_url: String,
    /// Conversation thread id, included in every callback message.
    pub group_id: String,
    /// Ancestor thread ids, root first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_ancestors: Option<Vec<String>>,
    /// End-user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The toolset version the runtime loaded, when it sends one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolset_version: Option<String>,
}

/// Where the result of an invocation goes: the fields without which nothing can be delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyTo {
    /// The tool call id.
    pub id: String,
    /// The conversation thread id.
    pub group_id: String,
    /// The callback URL.
    pub callback_url: String,
    /// The secondary call id, when the invocation had a string one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl ReplyTo {
    /// Reads the addressing fields of a body that may be malformed otherwise: `None` when
    /// `id`, `group_id` or `callback_url` is missing, empty or not a string.
    pub fn from_body(body: &Map<String, Value>) -> Option<Self> {
        let text = |name: &str| {
            body.get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Some(Self {
            id: text("id")?,
            group_id: text("group_id")?,
            callback_url: text("callback_url")?,
            call_id: text("call_id"),
        })
    }
}

/// The `tool_result` message POSTed to the callback URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// Always `"tool_result"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The invocation's `group_id`.
    pub group_id: String,
    /// The invocation's `id`.
    pub id: String,
    /// The invocation's `call_id`, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The result: the output (a string as it is, anything else JSON-encoded), or a
    /// JSON-encoded [`ErrorText`].
    pub text: String,
}

impl ToolResult {
    /// A `tool_result` for `to` carrying `text`.
    pub fn new(to: &ReplyTo, text: String) -> Self {
        Self {
            kind: "tool_result".into(),
            group_id: to.group_id.clone(),
            id: to.id.clone(),
            call_id: to.call_id.clone(),
            text,
        }
    }
}

/// What the `text` of a failed call holds, JSON-encoded: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorText {
    /// The error.
    pub error: ErrorBody,
}

/// The error of a failed call: the OXP error fields plus a machine-readable `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// `malformed_invocation`, `unknown_operation`, `invalid_arguments`, `rate_limited`,
    /// `missing_requirement` or `tool_error`.
    pub kind: String,
    /// What went wrong, for the model and the user.
    pub message: String,
    /// Whether the same call may succeed later.
    pub can_retry: bool,
    /// How long to wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// Extra guidance for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_prompt_content: Option<String>,
    /// Invalid arguments by dotted path (`invalid_arguments` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_errors: Option<std::collections::BTreeMap<String, String>>,
}

/// `POST /close_thread`: the runtime closed a conversation thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseThread {
    /// The closed thread.
    pub group_id: String,
}
