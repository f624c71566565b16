//! What `/mcp` answers around rmcp: the signal of a request its client closed, JSON-RPC
//! errors for what rmcp refuses in plain text or does not reach, what its refusals quote of the
//! caller's bounded, and the 401 of the plumbing.

use super::message::Message;
use crate::server::{ServerError, json, shown};
use axum::body::{Body, Bytes};
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

/// Fires when the HTTP request it was made for is dropped before its answer: the client closed
/// it. Handed to the call through the request's parts.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestClosed(pub(crate) oxp_lambda_core::tool::Cancellation);

impl RequestClosed {
    pub(super) fn guard(&self) -> ClosedGuard {
        ClosedGuard(Some(self.0.clone()))
    }
}

/// Fires its signal when dropped, unless disarmed first.
pub(super) struct ClosedGuard(Option<oxp_lambda_core::tool::Cancellation>);

impl ClosedGuard {
    pub(super) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for ClosedGuard {
    fn drop(&mut self) {
        if let Some(signal) = self.0.take() {
            signal.cancel();
        }
    }
}

/// rmcp answers some refusals in plain text; the client gets a JSON-RPC error instead. Its 415
/// after the plumbing accepted the content type means the JSON was no JSON-RPC message
/// (`message` is `None`, names no method, or has an id that is no request id, answered with a
/// `null` id) or, as rmcp reads unknown methods as custom requests, a message with a method
/// failed on its params.
pub(super) async fn plain_error_as_rpc(
    response: http::Response<
        impl axum::body::HttpBody<Data = Bytes, Error = std::convert::Infallible> + Send + 'static,
    >,
    message: Option<&Message<'_>>,
) -> Response {
    let (parts, body) = response.into_parts();
    if parts.status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        let id = message.map_or(Value::Null, Message::id_value);
        let request = message.filter(|m| !m.has_unreadable_id());
        return if request.is_some_and(|m| m.method().is_some()) {
            rpc_error(StatusCode::BAD_REQUEST, id, -32602, "Invalid params")
        } else {
            rpc_error(
                StatusCode::BAD_REQUEST,
                id,
                -32600,
                "Invalid request: the body must be one JSON-RPC 2.0 message",
            )
        };
    }
    // rmcp's other texts are fixed (406, 403 for a Host or Origin, ...) but one, which names
    // the version header as sent. Read whole (rmcp made it in memory, the header bounded by
    // the server's), so it never comes back empty.
    let text = axum::body::to_bytes(Body::new(body), 1024 * 1024)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let text = match text.trim() {
        "" => parts
            .status
            .canonical_reason()
            .unwrap_or("Bad Request")
            .to_owned(),
        text => match text.strip_prefix(UNSUPPORTED_VERSION) {
            Some(sent) => format!("{UNSUPPORTED_VERSION}{}", shown(sent)),
            None => message_shown(text),
        },
    };
    let mut answer = rpc_error(parts.status, Value::Null, -32600, &text);
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        answer.headers_mut().insert(header::ALLOW, allow.clone());
    }
    answer
}

/// How rmcp's transport begins its refusal of a version header naming no revision it knows;
/// the header as sent follows.
const UNSUPPORTED_VERSION: &str = "Bad Request: Unsupported MCP-Protocol-Version: ";

/// The most characters of an error message of rmcp's, its own words and its quotes together.
const MESSAGE_SHOWN: usize = 256;

/// An error message of rmcp's as the client gets it: each value it quotes (between backticks,
/// or in parentheses: the headers and `_meta` members a -32020 compares, the versions an
/// `initialize` compares) shown at most 64 characters, as every refusal shows what the caller
/// sent, and the whole at most 256, so that even a value that opens a quote of its own comes
/// back bounded.
pub(super) fn message_shown(message: &str) -> String {
    let mut kept = String::with_capacity(message.len().min(MESSAGE_SHOWN));
    let mut rest = message;
    while let Some(open) = rest.find(['`', '(']) {
        let (close, next) = match rest[open..].starts_with('`') {
            true => ('`', " `"),
            false => (')', " ("),
        };
        // To the last closing mark before the next quote opens: a value's own `)` or backtick
        // stays inside its quote.
        let inner = &rest[open + 1..];
        let until = inner.find(next).unwrap_or(inner.len());
        let Some(length) = inner[..until].rfind(close) else {
            break;
        };
        let (before, quoted) = (&rest[..=open], &rest[open + 1..open + 1 + length]);
        kept.push_str(before);
        kept.push_str(&shown(quoted));
        kept.push(close);
        rest = &rest[open + 1 + length + 1..];
    }
    kept.push_str(rest);
    oxp_lambda_core::naming::shown_at_most(&kept, MESSAGE_SHOWN)
}

/// A JSON answer of rmcp's to a request it refused (a 4xx status), its error's message as
/// [`message_shown`] has it.
pub(super) async fn refusal_shown(response: Response) -> Response {
    edit_answer(response, |_, answer| shown_in(answer)).await
}

/// Whether `answer`'s error message needed [`message_shown`], which it now has.
pub(super) fn shown_in(answer: &mut Value) -> bool {
    let Some(Value::String(message)) = answer.pointer_mut("/error/message") else {
        return false;
    };
    let shown = message_shown(message);
    let changed = shown != *message;
    *message = shown;
    changed
}

/// `response`, a JSON answer of the server's own (read whole, bounded by `ANSWER_MAX`), as
/// `edit` leaves its head and its value; `edit` says whether it changed the value (if not, the
/// bytes pass on as they came). An answer that is not JSON passes on untouched.
pub(super) async fn edit_answer(
    response: Response,
    edit: impl FnOnce(&mut http::response::Parts, &mut Value) -> bool,
) -> Response {
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, ANSWER_MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let Ok(mut answer) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    if !edit(&mut parts, &mut answer) {
        return Response::from_parts(parts, Body::from(bytes));
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    let bytes = serde_json::to_vec(&answer).expect("answers serialize");
    Response::from_parts(parts, Body::from(bytes))
}

/// The most of an answer [`edit_answer`] reads: the server made it in memory (a listing of
/// its tools, rmcp's errors), so this bounds a mistake, not a caller.
const ANSWER_MAX: usize = 16 * 1024 * 1024;

/// The request id (as JSON text) a `notifications/cancelled` names, if `message` is one.
pub(super) fn cancelled_request(message: &Message<'_>) -> Option<String> {
    if !message.is_notification("notifications/cancelled") {
        return None;
    }
    let params: rmcp::model::CancelledNotificationParam = message.params()?;
    serde_json::to_string(&params.request_id?).ok()
}

/// Whether `response` is an event stream (rmcp's answer once a call sends a message before its
/// result), which passes on as it comes rather than read whole.
pub(super) fn is_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// 401, as the MCP authorization spec has it: a bearer challenge naming the metadata.
pub(super) fn unauthenticated(challenge: HeaderValue) -> Response {
    let mut response = rpc_error(
        StatusCode::UNAUTHORIZED,
        Value::Null,
        -32001,
        "Authentication required: send a valid bearer token",
    );
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, challenge);
    response
}

#[derive(serde::Serialize)]
struct RpcError<'a> {
    jsonrpc: &'static str,
    id: Value,
    error: RpcErrorBody<'a>,
}

#[derive(serde::Serialize)]
struct RpcErrorBody<'a> {
    code: i64,
    message: &'a str,
}

/// A JSON-RPC error response with HTTP `status`.
pub(super) fn rpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    let error = RpcError {
        jsonrpc: "2.0",
        id,
        error: RpcErrorBody { code, message },
    };
    json(status, &error)
}

/// What the plumbing refuses on `/mcp` (a browser's request, another method, a body that did
/// not arrive), as a JSON-RPC error with no id (Streamable HTTP's answer to a foreign `Origin`:
/// 403 whose body "MAY comprise a JSON-RPC error response that has no id") and the refusal's
/// status.
pub(crate) fn refused(refusal: &ServerError) -> Response {
    rpc_error(
        refusal.status(),
        Value::Null,
        -32600,
        &refusal.developer_message(),
    )
}

/// The authenticated caller of a request (`None` without authentication).
pub(super) fn subject(parts: &http::request::Parts) -> Option<&str> {
    parts
        .extensions
        .get::<oxp_lambda_core::principal::Principal>()
        .and_then(|p| p.subject.as_deref())
}

/// `MCP-Protocol-Version`. The headers the adapter reads are named once, as constants: a
/// lookup by a `&str` name parses the name first, which the fast path paid on every call.
pub(super) const PROTOCOL_VERSION: http::HeaderName =
    http::HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method` (2026-07-28's standard header).
pub(super) const METHOD: http::HeaderName = http::HeaderName::from_static("mcp-method");
/// `Mcp-Name` (2026-07-28's standard header).
pub(super) const NAME: http::HeaderName = http::HeaderName::from_static("mcp-name");

/// What a request's `MCP-Protocol-Version` header names, read in one place for every step that
/// depends on it: `Ok(None)` when none was sent (2025-03-26, as rmcp takes it), `Err(())` for a
/// header naming no revision rmcp knows (rmcp's transport refuses it).
pub(super) fn header_version(
    headers: &http::HeaderMap,
) -> Result<Option<&'static rmcp::model::ProtocolVersion>, ()> {
    let Some(sent) = headers.get(PROTOCOL_VERSION) else {
        return Ok(None);
    };
    version_of(sent.as_bytes()).map(Some).ok_or(())
}

/// The revision rmcp knows by the name `sent`, if any.
pub(super) fn version_of(sent: &[u8]) -> Option<&'static rmcp::model::ProtocolVersion> {
    rmcp::model::ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str().as_bytes() == sent)
}

#[cfg(test)]
mod tests {
    use super::message_shown;

    #[test]
    fn each_value_rmcp_quotes_is_shown_at_most_64_characters_and_its_own_words_kept() {
        let x = "x".repeat(5000);
        let cut = format!("{}…", "x".repeat(64));
        // Backticks, as a -32020 on `Mcp-Method` has them.
        let ticks = format!("Mcp-Method header `{x}` does not match body method `tools/list`");
        assert_eq!(
            message_shown(&ticks),
            format!("Mcp-Method header `{cut}` does not match body method `tools/list`")
        );
        // Parentheses, with a `)` of the caller's inside the value.
        let parens = format!("header (2026-07-28) does not match protocolVersion (v){x})");
        assert_eq!(
            message_shown(&parens),
            format!(
                "header (2026-07-28) does not match protocolVersion (v){}…)",
                "x".repeat(62)
            )
        );
        // A value that opens a quote of its own and never closes it: bounded as a whole.
        let open = format!("Unknown tool: `{x}");
        assert_eq!(message_shown(&open).chars().count(), 257);
        // rmcp's own words alone pass as they are.
        let fixed =
            "Not Acceptable: Client must accept both application/json and text/event-stream";
        assert_eq!(message_shown(fixed), fixed);
    }
}
