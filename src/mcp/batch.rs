//! JSON-RPC batches, which 2025-03-26 has servers take ("MCP implementations ... MUST support
//! receiving JSON-RPC batches"; 2025-06-18 removed them, so a later revision's batch is refused
//! as any other body that is not one message). Each message of the array is answered as if it
//! had come alone (the same checks, the fast path, rmcp), side by side, and the answers go back
//! together: a JSON array of the requests' responses, or, when one of them streams (a call that
//! reports progress), one event stream carrying every message of theirs as it comes. A batch of
//! notifications and responses alone is 202 with no body. `initialize` may not be batched
//! (2025-03-26's lifecycle page): its element is answered as an Invalid Request.

use super::message::Message;
use super::plumbing::{self, is_stream, rpc_error};
use super::{Mcp, answer};
use axum::body::{Body, Bytes};
use axum::response::Response;
use futures_util::{StreamExt, stream};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;
use serde_json::value::RawValue;
use sse_stream::{Sse, SseBody, SseStream};
use std::sync::Arc;

/// The most messages one batch holds: each is a request's worth of work.
pub(super) const MAX_MESSAGES: usize = 64;

/// The most bytes of one JSON answer read back to be put in the batch's answer.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Whether `body` is a batch its request's revision takes: an array, at 2025-03-26 (named by
/// the header, or no header: the revision a server assumes without one).
pub(super) fn is_batch(headers: &HeaderMap, body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
        && match plumbing::header_version(headers) {
            Ok(None) => true,
            Ok(Some(version)) => *version == rmcp::model::ProtocolVersion::V_2025_03_26,
            Err(()) => false,
        }
}

/// The answer to batch `body`.
pub(super) async fn serve(mcp: &Arc<Mcp>, parts: Parts, body: Bytes) -> Response {
    let messages = match serde_json::from_slice::<Vec<&RawValue>>(&body) {
        Ok(messages) if messages.is_empty() => return invalid("an empty batch"),
        Ok(messages) if messages.len() > MAX_MESSAGES => {
            return invalid("a batch of more than 64 messages");
        }
        Ok(messages) => messages,
        // No array of values (not JSON, or nesting past serde_json's limit): answered as any
        // body that is no message.
        Err(_) => return answer(mcp, parts, body.clone()).await,
    };
    let answers =
        futures_util::future::join_all(messages.iter().map(|message| one(mcp, &parts, message)))
            .await;
    together(answers).await
}

/// The answer to one message of a batch, as if it had come alone.
async fn one(mcp: &Arc<Mcp>, parts: &Parts, message: &RawValue) -> Response {
    let text = message.get();
    if let Ok(read) = Message::read(text.as_bytes())
        && read.method() == Some("initialize")
    {
        let why = "Invalid request: initialize must not be part of a batch";
        return rpc_error(StatusCode::BAD_REQUEST, read.id_value(), -32600, why);
    }
    // A batch within a batch is no message (JSON-RPC): answered as any other such body.
    let mut parts = parts.clone();
    parts.headers.remove(header::CONTENT_LENGTH);
    Box::pin(answer(mcp, parts, Bytes::copy_from_slice(text.as_bytes()))).await
}

/// The batch's answers as one: a refusal the whole request earned (by its headers: every
/// message refused alike, with a status of its own, not a message's 400) as it is; else what
/// each message answered, in the order they came.
async fn together(answers: Vec<Response>) -> Response {
    let first = answers[0].status();
    let whole = first.is_client_error() && first != StatusCode::BAD_REQUEST;
    if whole && answers.iter().all(|a| a.status() == first) {
        let mut answers = answers;
        return answers.swap_remove(0);
    }
    let streams = answers.iter().any(is_stream);
    let mut messages = Vec::with_capacity(answers.len());
    let mut events = Vec::new();
    for answer in answers {
        if is_stream(&answer) {
            events.push(SseStream::new(answer.into_body()).boxed());
            continue;
        }
        let Ok(bytes) = axum::body::to_bytes(answer.into_body(), MAX_ANSWER_BYTES).await else {
            continue;
        };
        // A notification's or a response's answer is no message (202, no body).
        if bytes.is_empty() {
            continue;
        }
        match streams {
            true => {
                let data = String::from_utf8_lossy(&bytes).into_owned();
                let event = Ok(Sse::default().data(data));
                events.push(stream::iter([event]).boxed());
            }
            // As it was written (rmcp's members in rmcp's order).
            false => messages.extend(
                String::from_utf8(bytes.to_vec())
                    .ok()
                    .and_then(|text| RawValue::from_string(text).ok()),
            ),
        }
    }
    if streams {
        let body = SseBody::new(stream::select_all(events));
        let mut response = Response::new(Body::new(body));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        return response;
    }
    if messages.is_empty() {
        let mut accepted = Response::new(Body::empty());
        *accepted.status_mut() = StatusCode::ACCEPTED;
        return accepted;
    }
    crate::server::json(StatusCode::OK, &messages)
}

fn invalid(why: &str) -> Response {
    let message = format!("Invalid request: {why}");
    rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32600, &message)
}
