//! OXP wire format: plain serde types named as the OXP 1.0 specification names them.
//!
//! These types know nothing about the registry or the transports; the HTTP adapter
//! ([`crate::oxp`]) converts between them and the protocol-neutral registry types.
//!
//! Choices where the specification is loose:
//! - the request field is `input`; `inputs` (used by the schema text) is accepted as an alias;
//!   a missing or `null` input is treated as `{}`;
//! - optional fields that are absent are omitted from responses rather than sent as `null`,
//!   except `value: null` for a successful tool without output and `output_schema: null` for a
//!   tool that declares no output (both as in the specification's examples);
//! - `duration` is in milliseconds with microsecond precision (a JSON number, not always integral).

use serde::de::{Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The OXP version this server speaks, as sent in `$schema`.
pub const OXP_1_0: &str = "urn:oxp:1.0";

/// Every OXP version this server accepts in a request's `$schema`, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &[OXP_1_0];

/// Whether a client's `$schema` names a version this server supports (absent means latest).
pub fn is_supported_version(schema: Option<&str>) -> bool {
    schema.is_none_or(|s| SUPPORTED_VERSIONS.contains(&s))
}

/// One tool as listed by `GET /tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Fully qualified id with version, e.g. `Calculator.Add@1.0.0`.
    pub id: String,
    /// Model-friendly name, e.g. `Calculator_Add`.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// Semantic version of the tool.
    pub version: String,
    /// The tool's input parameters.
    pub input_schema: InputSchema,
    /// JSON Schema of the tool's output; `null` when the tool returns nothing.
    pub output_schema: Option<Value>,
    /// What a caller must provide in `context`; omitted when the tool needs nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirements: Option<ToolRequirements>,
}

/// Wrapper holding the JSON Schema of a tool's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputSchema {
    /// JSON Schema (an object schema) of the tool input.
    pub parameters: Value,
}

/// Requirements a caller must satisfy in `context` before the tool runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolRequirements {
    /// Authorization providers whose token must be passed in `context.authorization`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorization: Vec<AuthorizationRequirement>,
    /// Secrets the tool needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretRequirement>,
    /// Whether `context.user_id` must be present.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub user_id: bool,
}

/// A required authorization provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationRequirement {
    /// Provider id, e.g. `google`.
    pub id: String,
    /// OAuth 2.0 scopes the token must carry, when the provider uses OAuth 2.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth2: Option<OAuth2Requirement>,
}

/// OAuth 2.0 details of an authorization requirement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OAuth2Requirement {
    /// Scopes the token must have been granted.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// A required secret, by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecretRequirement {
    /// Secret id, e.g. `TWILIO_API_KEY`.
    pub id: String,
}

/// `GET /tools` response body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListToolsResponse {
    /// OXP version of the response.
    #[serde(rename = "$schema")]
    pub schema: String,
    /// Every tool version the server offers (empty when there are none), as the published 1.0
    /// OpenAPI names the list (errata of 2025-03-16): what the official SDKs read.
    pub items: Vec<ToolDefinition>,
    /// The same list under the name the specification pages use, for clients written from
    /// them.
    pub tools: Vec<ToolDefinition>,
}

/// A call of one tool.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CallToolRequest {
    /// `Toolkit.Tool`, `Toolkit.Tool@x.y.z` or `Toolkit.Tool@x` (the `Toolkit_Tool` form too).
    pub tool_id: String,
    /// Idempotency key; generated (UUID v4) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Trace or span id, passed to the tool and logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Tool parameters (`inputs` is accepted too); absent or `null` means `{}`.
    #[serde(default, alias = "inputs", skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Authorization tokens, secrets and user id.
    #[serde(
        default,
        deserialize_with = "crate::server::optional_object",
        skip_serializing_if = "Option::is_none"
    )]
    pub context: Option<CallContext>,
}

/// `context` of a call.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CallContext {
    /// Tokens per authorization provider.
    #[serde(
        default,
        deserialize_with = "crate::server::objects",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub authorization: Vec<AuthorizationToken>,
    /// Secrets sent by the client.
    #[serde(
        default,
        deserialize_with = "crate::server::objects",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub secrets: Vec<SecretValue>,
    /// The end user on whose behalf the tool runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// A token for one authorization provider. `Debug` never shows the token.
#[derive(Clone, Serialize, Deserialize)]
pub struct AuthorizationToken {
    /// Provider id.
    pub id: String,
    /// The token.
    pub token: String,
}

impl fmt::Debug for AuthorizationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationToken")
            .field("id", &self.id)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// A secret sent by the client. `Debug` never shows the value.
#[derive(Clone, Serialize, Deserialize)]
pub struct SecretValue {
    /// Secret id.
    pub id: String,
    /// The secret.
    pub value: String,
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretValue")
            .field("id", &self.id)
            .field("value", &"<redacted>")
            .finish()
    }
}

/// `POST /tools/call` response body with status 200.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallToolResponseEnvelope {
    /// OXP version of the response.
    #[serde(rename = "$schema")]
    pub schema: String,
    /// The outcome.
    pub result: CallToolResponse,
}

/// Outcome of a call that reached the tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolResponse {
    /// The request's `call_id`, or the one the server generated.
    pub call_id: String,
    /// Time spent in the tool, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    /// Whether the tool succeeded.
    pub success: bool,
    /// The tool output on success (`null` for a tool without output); absent on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Why the tool failed; absent on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolCallError>,
}

/// The `error` object of a failed call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallError {
    /// User-facing message.
    pub message: String,
    /// Detail for developers and logs, not for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_message: Option<String>,
    /// Whether the client may retry (absent means `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_retry: Option<bool>,
    /// Extra content for the model's retry prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_prompt_content: Option<String>,
    /// How long to wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

/// Status-400 (and 401) body: an error before the tool ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerErrorResponse {
    /// OXP version of the response.
    #[serde(rename = "$schema")]
    pub schema: String,
    /// User-facing message.
    pub message: String,
    /// Detail for developers and logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_message: Option<String>,
    /// What the caller must supply before the tool can run (the published 1.0 OpenAPI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_requirements: Option<MissingRequirements>,
}

/// `missing_requirements` of a [`ServerErrorResponse`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MissingRequirements {
    /// Authorizations the user must complete before the call can succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<Vec<AuthorizationChallenge>>,
    /// The tool needs a user id and the call named none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<bool>,
}

/// `ToolAuthorizationChallenge` of the published 1.0 OpenAPI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthorizationChallenge {
    /// The provider id.
    pub id: String,
    /// The URL the user opens to authorize.
    pub url: String,
    /// The URL answering `{"authorized": bool}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_url: Option<String>,
}

/// Status-422 body: the input does not match the tool's `input_schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationErrorResponse {
    /// OXP version of the response.
    #[serde(rename = "$schema")]
    pub schema: String,
    /// User-facing summary.
    pub message: String,
    /// Offending parameter (dotted path) to message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_errors: Option<BTreeMap<String, String>>,
}

/// Content items as OXP's `value` carries them, for a tool that answers content alone: an array
/// in the shape of MCP's content blocks (`text`; `image` and `audio` with base64 `data` and
/// `mimeType`; `resource` with `resource: {uri, mimeType, text | blob}`; `resource_link`), so a
/// client that reads one reads both.
pub(crate) fn content_value(items: &[oxp_lambda_core::content::Content]) -> Value {
    use base64::Engine;
    use oxp_lambda_core::content::{Content, ResourceBody};
    use serde_json::json;
    let b64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    let blocks = items.iter().map(|item| match item {
        Content::Text { text } => json!({"type": "text", "text": text}),
        Content::Image { data, media_type } => {
            json!({"type": "image", "data": b64(data), "mimeType": media_type})
        }
        Content::Audio { data, media_type } => {
            json!({"type": "audio", "data": b64(data), "mimeType": media_type})
        }
        Content::Resource {
            uri,
            media_type,
            body,
        } => {
            let mut resource = json!({"uri": uri});
            if let Some(m) = media_type {
                resource["mimeType"] = json!(m);
            }
            match body {
                ResourceBody::Text(t) => resource["text"] = json!(t),
                ResourceBody::Blob(b) => resource["blob"] = json!(b64(b)),
            }
            json!({"type": "resource", "resource": resource})
        }
        Content::Link {
            uri,
            name,
            media_type,
            description,
        } => {
            let mut link = json!({"type": "resource_link", "uri": uri, "name": name});
            if let Some(m) = media_type {
                link["mimeType"] = json!(m);
            }
            if let Some(d) = description {
                link["description"] = json!(d);
            }
            link
        }
    });
    Value::Array(blocks.collect())
}

/// `$schema` when present: a string (borrowed where the JSON has no escapes). `null`, a number
/// or any other type is an error, so the caller hears that the version is malformed instead of
/// being served as if it had sent none.
pub(crate) fn version<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::borrow::Cow<'de, str>>, D::Error> {
    struct Text;
    impl<'de> Visitor<'de> for Text {
        type Value = std::borrow::Cow<'de, str>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("`$schema` as a string")
        }
        fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(std::borrow::Cow::Borrowed(v))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(std::borrow::Cow::Owned(v.to_owned()))
        }
    }
    deserializer.deserialize_str(Text).map(Some)
}
