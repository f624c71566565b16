//! What the 2026-07-28 revision changes at the HTTP layer, for requests that name it
//! (`MCP-Protocol-Version: 2026-07-28`): a method the server does not implement, or one the
//! revision removed (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`,
//! `resources/unsubscribe`, and `tasks/list` and `tasks/result`, which the tasks extension
//! removed), is
//! `404 Not Found` with the JSON-RPC error -32601 (Streamable HTTP, "Protocol Version
//! Header"), and a missing client capability (-32021) is `400 Bad Request` (Base Protocol,
//! "Per-request protocol fields"). Earlier revisions keep their answers.

use super::message::Message;
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use rmcp::model::ErrorCode;
use serde_json::Value;

/// Methods 2026-07-28 removed, or that this server does not offer at it.
const REMOVED: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    // Removed by the tasks extension (the result is inlined on tasks/get).
    "tasks/list",
    "tasks/result",
];

/// Whether the request names 2026-07-28 in its header.
pub(super) fn is_modern(headers: &HeaderMap) -> bool {
    super::plumbing::header_version(headers)
        == Ok(Some(&rmcp::model::ProtocolVersion::V_2026_07_28))
}

/// The 404 of a modern request for a removed method, else `None`.
pub(super) fn removed_method(message: &Message<'_>) -> Option<Response> {
    let method = message.method()?;
    REMOVED
        .contains(&method)
        .then(|| not_found(message.id_value(), method))
}

fn not_found(id: Value, method: &str) -> Response {
    let shown = crate::server::shown(method);
    super::rpc_error(
        StatusCode::NOT_FOUND,
        id,
        -32601,
        &format!("Method not found: {shown}"),
    )
}

/// A modern request's answer, with the status the revision gives its errors: `404 Not Found`
/// for -32601 (method not found), `400 Bad Request` for -32021 (a missing client capability).
/// Only a single JSON answer is read for its error; a stream passes on untouched.
pub(super) async fn status_of_errors(response: Response) -> Response {
    // A stream (a call's progress before its result) is passed on as it comes: its errors, if
    // any, come after a 200 anyway, and holding it would hold the progress until the end.
    if super::plumbing::is_stream(&response) {
        return response;
    }
    // Answers here are single JSON messages (rmcp's JSON response mode).
    super::plumbing::edit_answer(response, |parts, answer| {
        match answer.pointer("/error/code").and_then(Value::as_i64) {
            Some(-32601) => parts.status = StatusCode::NOT_FOUND,
            Some(code) if code == i64::from(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY.0) => {
                parts.status = StatusCode::BAD_REQUEST;
            }
            None => return false,
            _ => {}
        }
        // rmcp's errors quote what the caller sent (-32020: a header and the body's value).
        super::plumbing::shown_in(answer)
    })
    .await
}
