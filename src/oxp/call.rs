//! `GET /tools` and `POST /tools/call`: the OXP body to a [`Call`], and the outcome back to a
//! `CallToolResponse` or an error.

use super::Oxp;
use super::error::ApiError;
use super::wire::{
    self, CallToolRequest, CallToolResponse, CallToolResponseEnvelope, OXP_1_0, ToolCallError,
};
use crate::server::{CallContext, Object, json};
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use http::StatusCode;
use oxp_lambda_core::invoke::{Call, Outcome, Rejection, Target};
use oxp_lambda_core::naming::unfit;
use oxp_lambda_core::tool::{Secret, ToolError};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::sync::Arc;

pub(super) async fn list_tools(
    State(state): State<Arc<Oxp>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // A GET body is optional; when present it may carry `$schema`.
    let body = body.map_err(ApiError::from)?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        #[derive(Deserialize)]
        struct ListRequest<'a> {
            #[serde(
                rename = "$schema",
                borrow,
                default,
                deserialize_with = "wire::version"
            )]
            schema: Option<Cow<'a, str>>,
        }
        let Object(request) = parse_json::<Object<ListRequest<'_>>>(&body)?;
        check_version(request.schema.as_deref())?;
    }
    Ok(crate::server::json_response(
        StatusCode::OK,
        state.listing(),
    ))
}

pub(super) async fn call_tool(
    State(state): State<Arc<Oxp>>,
    context: CallContext,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(ApiError::from)?;
    let request = parse_call(&body)?;
    let mut call = to_call(request);
    context.apply(&mut call);
    let call_id = call.call_id.clone();
    match state.invoker.invoke(call).await {
        Ok(outcome) => Ok(json(StatusCode::OK, &response(outcome))),
        // A refusal that may pass unchanged later (busy, a store that did not answer) is a
        // retryable failure of a well-formed call: 200 with `can_retry`, not a 400.
        Err(rejection) if rejection.class().retryable() => {
            let error = rejection_error(&rejection);
            // `call_id` is required in the response: the client's, else one made now (a
            // refusal before the tool ran has none from the invoker).
            let call_id = match rejection {
                Rejection::Busy { call_id, .. } => call_id,
                _ => call_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            };
            Ok(json(StatusCode::OK, &retryable(call_id, error)))
        }
        Err(rejection) => Err(ApiError::from(rejection)),
    }
}

/// The protocol-neutral call of an OXP request.
fn to_call(request: CallToolRequest) -> Call {
    // An absent or null input is `{}`, for tools without parameters.
    let input = match request.input {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(input) => input,
    };
    let context = request.context.unwrap_or_default();
    let mut call = Call::new("oxp", Target::Id(request.tool_id), input);
    call.call_id = request.call_id;
    call.trace_id = request.trace_id;
    call.user_id = context.user_id;
    call.authorization = context
        .authorization
        .into_iter()
        .map(|t| (t.id, Secret::new(t.token)))
        .collect();
    call.secrets = context
        .secrets
        .into_iter()
        .map(|s| (s.id, Secret::new(s.value)))
        .collect();
    call
}

fn response(outcome: Outcome) -> CallToolResponseEnvelope {
    let duration_ms = (outcome.duration.as_secs_f64() * 1e6).round() / 1e3;
    let (success, value, error) = match outcome.result {
        // OXP has only `value`: a tool that answers content alone (no value) answers it as an
        // array of content blocks; beside a value, content is left out (docs/oxp.md).
        Ok(output) if output.value.is_null() && !output.content.is_empty() => {
            (true, Some(wire::content_value(&output.content)), None)
        }
        Ok(output) => (true, Some(output.value), None),
        Err(error) => (false, None, Some(call_error(error))),
    };
    CallToolResponseEnvelope {
        schema: OXP_1_0.into(),
        result: CallToolResponse {
            call_id: outcome.call_id,
            duration: Some(duration_ms),
            success,
            value,
            error,
        },
    }
}

/// A retryable refusal as a tool failure with retry guidance.
fn rejection_error(rejection: &Rejection) -> ToolError {
    let error =
        ToolError::new(rejection.user_message()).developer_message(rejection.developer_detail());
    match rejection.retry_after() {
        Some(after) => error.retry_after(after),
        None => error.retryable(),
    }
}

/// A failure of a well-formed call that may succeed unchanged a moment later (200, not 400).
fn retryable(call_id: String, error: ToolError) -> CallToolResponseEnvelope {
    CallToolResponseEnvelope {
        schema: OXP_1_0.into(),
        result: CallToolResponse {
            call_id,
            duration: Some(0.0),
            success: false,
            value: None,
            error: Some(call_error(error)),
        },
    }
}

pub(super) fn call_error(e: ToolError) -> ToolCallError {
    ToolCallError {
        message: e.message,
        developer_message: e.developer_message,
        can_retry: e.can_retry.then_some(true),
        additional_prompt_content: e.additional_prompt_content,
        retry_after_ms: e.retry_after_ms,
    }
}

/// The outer call body in one pass: what nearly every call is.
#[derive(Deserialize)]
struct FastEnvelope<'a> {
    #[serde(
        rename = "$schema",
        borrow,
        default,
        deserialize_with = "wire::version"
    )]
    schema: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "crate::server::optional_object")]
    request: Option<CallToolRequest>,
}

/// The outer call body with `request` kept raw, so that for a body that does not parse the
/// version is checked before the request's shape, and errors say what is wrong first.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(
        rename = "$schema",
        borrow,
        default,
        deserialize_with = "wire::version"
    )]
    schema: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
}

/// The call in `body`. A well-formed body is parsed once; any other is parsed again in two
/// steps to report its first problem.
fn parse_call(body: &[u8]) -> Result<CallToolRequest, ApiError> {
    let missing_request = || {
        ApiError::bad_request(
            "The request body is not a valid tool call",
            "missing field `request`: the body must be {\"$schema\"?, \"request\": {...}}",
        )
    };
    // One UTF-8 check of the whole body, not one per string read from it.
    let text = std::str::from_utf8(body).ok();
    if let Some(Ok(Object(envelope))) = text.map(serde_json::from_str::<Object<FastEnvelope<'_>>>) {
        check_version(envelope.schema.as_deref())?;
        return checked(envelope.request.ok_or_else(missing_request)?);
    }
    let Object(envelope) = parse_json::<Object<Envelope<'_>>>(body)?;
    check_version(envelope.schema.as_deref())?;
    let raw = envelope.request.ok_or_else(missing_request)?;
    serde_json::from_str::<Object<CallToolRequest>>(raw.get())
        .map_err(|e| {
            ApiError::bad_request(
                "The request body is not a valid tool call",
                format!("request: {}", unfit(&e)),
            )
        })
        .and_then(|Object(request)| checked(request))
}

/// Longest id (tool, call, trace, user, token or secret id) accepted.
const MAX_ID_CHARS: usize = 256;
/// Most tokens, or secrets, one call may carry.
const MAX_CREDENTIALS: usize = 64;

/// A call whose fields are well-formed and bounded. An empty `call_id` would be one idempotency
/// key that every client sending it shares, so it is refused rather than taken as absent.
fn checked(request: CallToolRequest) -> Result<CallToolRequest, ApiError> {
    let invalid = |detail: String| {
        Err(ApiError::bad_request(
            "The request body is not a valid tool call",
            detail,
        ))
    };
    if request.call_id.as_deref() == Some("") {
        return invalid(
            "request.call_id: must not be empty; omit it to have the server generate one".into(),
        );
    }
    let context = request.context.as_ref();
    let ids = [
        ("request.tool_id", Some(request.tool_id.as_str())),
        ("request.call_id", request.call_id.as_deref()),
        ("request.trace_id", request.trace_id.as_deref()),
        (
            "request.context.user_id",
            context.and_then(|c| c.user_id.as_deref()),
        ),
    ];
    let credential_ids = context.into_iter().flat_map(|c| {
        let tokens = c
            .authorization
            .iter()
            .map(|t| ("request.context.authorization.id", Some(t.id.as_str())));
        let secrets = c
            .secrets
            .iter()
            .map(|s| ("request.context.secrets.id", Some(s.id.as_str())));
        tokens.chain(secrets)
    });
    for (field, value) in ids.into_iter().chain(credential_ids) {
        if value.is_some_and(|v| v.chars().count() > MAX_ID_CHARS) {
            return invalid(format!("{field}: longer than {MAX_ID_CHARS} characters"));
        }
    }
    if let Some(c) = context
        && (c.authorization.len() > MAX_CREDENTIALS || c.secrets.len() > MAX_CREDENTIALS)
    {
        return invalid(format!(
            "request.context: at most {MAX_CREDENTIALS} tokens and {MAX_CREDENTIALS} secrets"
        ));
    }
    Ok(request)
}

fn check_version(schema: Option<&str>) -> Result<(), ApiError> {
    if wire::is_supported_version(schema) {
        return Ok(());
    }
    Err(ApiError::bad_request(
        format!(
            "OXP version '{}' is not supported. Supported versions: {}",
            crate::server::shown(schema.unwrap_or_default()),
            wire::SUPPORTED_VERSIONS.join(", ")
        ),
        "send one of the supported versions in $schema, or omit it to use the latest",
    ))
}

fn parse_json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        use serde_json::error::Category;
        match e.classify() {
            Category::Eof if body.iter().all(u8::is_ascii_whitespace) => ApiError::bad_request(
                "The request body is empty",
                "send a JSON object such as {\"request\": {\"tool_id\": \"...\"}}",
            ),
            Category::Syntax | Category::Eof | Category::Io => {
                ApiError::bad_request("The request body is not valid JSON", e.to_string())
            }
            // serde's own message quotes what it found (a caller's secret, say): `unfit` not.
            Category::Data => ApiError::bad_request(
                "The request body is not a valid tool call",
                format!("{}: the body must be a JSON object", unfit(&e)),
            ),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_body_is_described_without_anything_the_caller_sent() {
        for body in [
            r#"{"request": {"tool_id": "T", "context": "TWILIO_API_KEY=sk_live_1"}}"#,
            r#"{"request": {"tool_id": "T", "context": {"secrets": [{"id": "K", "value": 12345678}]}}}"#,
            r#"{"request": {"tool_id": 12345678}}"#,
        ] {
            let Err(ApiError::BadRequest {
                developer_message,
                message,
                ..
            }) = parse_call(body.as_bytes())
            else {
                panic!("{body} is refused");
            };
            let detail = developer_message.unwrap_or_default();
            for secret in ["sk_live", "TWILIO_API_KEY=", "12345678"] {
                assert!(
                    !detail.contains(secret) && !message.contains(secret),
                    "{detail}"
                );
            }
            assert!(detail.contains("line 1 column"), "{detail}");
        }
        let Err(ApiError::BadRequest {
            developer_message, ..
        }) = parse_call(br#"{"request": {"input": {}}}"#)
        else {
            panic!("refused");
        };
        assert!(
            developer_message
                .unwrap()
                .contains("missing field `tool_id`")
        );
    }

    #[test]
    fn a_parsed_requests_debug_form_never_shows_a_secret_or_a_token() {
        let body = br#"{"request": {"tool_id": "T", "context": {
            "secrets": [{"id": "TWILIO_API_KEY", "value": "sk_live_SECRET"}],
            "authorization": [{"id": "google", "token": "ya29.TOKEN"}]}}}"#;
        let Ok(request) = parse_call(body) else {
            panic!("parses");
        };
        let shown = format!("{request:?}");
        assert!(
            shown.contains("TWILIO_API_KEY") && shown.contains("google"),
            "{shown}"
        );
        assert!(
            !shown.contains("sk_live_SECRET") && !shown.contains("ya29.TOKEN"),
            "{shown}"
        );
    }
}
