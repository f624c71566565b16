//! One call's questions named apart from every other call's. rmcp numbers the requests a
//! call sends its client from 0 in every call, so two calls of one session would ask under the
//! same ids, and a late answer to the first (its stream closed) would be taken by the second.
//! A call that may ask gets a token of its own ([`CallToken`], in the request's extensions);
//! its requests go out on its stream as `"<token>-<n>"` ([`renumbered`]), and its questions are
//! kept under that name, so an answer only ever reaches the question it was sent for.

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::Value;
use std::sync::Arc;

/// The token of one call, unique to it.
#[derive(Debug, Clone)]
pub(crate) struct CallToken(Arc<str>);

impl CallToken {
    /// A new call's token.
    pub(crate) fn new() -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string();
        Self(Arc::from(&id[..16]))
    }

    /// The id the call's `n`th request goes out under.
    pub(crate) fn id(&self, n: u32) -> String {
        format!("{}-{n}", self.0)
    }
}

/// `response` with every request of the server's on its SSE stream sent as `"<token>-<n>"`
/// where rmcp numbered it `n`; any other response as it is.
pub(crate) fn renumbered(response: Response, token: CallToken) -> Response {
    if !super::plumbing::is_stream(&response) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let mut pending: Vec<u8> = Vec::new();
    let events = body.into_data_stream().map(move |chunk| {
        pending.extend_from_slice(&chunk?);
        // Whole events only: an event ends with an empty line.
        let Some(end) = pending.windows(2).rposition(|w| w == b"\n\n") else {
            return Ok::<_, axum::Error>(Bytes::new());
        };
        let rest = pending.split_off(end + 2);
        let whole = std::mem::replace(&mut pending, rest);
        Ok(Bytes::from(renumber(&whole, &token)))
    });
    Response::from_parts(parts, Body::from_stream(events))
}

/// `events` (whole SSE events) with the requests in their data renumbered.
fn renumber(events: &[u8], token: &CallToken) -> Vec<u8> {
    let mut out = Vec::with_capacity(events.len() + 32);
    for line in events.split_inclusive(|&b| b == b'\n') {
        match line
            .strip_prefix(b"data:")
            .and_then(|data| request(data, token))
        {
            Some(request) => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(&request);
                out.push(b'\n');
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// `data` renumbered when it is a request of the server's (a `method` and a number `id`).
fn request(data: &[u8], token: &CallToken) -> Option<Vec<u8>> {
    // A result or a notification needs no parse.
    if !data.windows(8).any(|w| w == b"\"method\"") {
        return None;
    }
    let mut message: Value = serde_json::from_slice(data).ok()?;
    let object = message.as_object_mut()?;
    let n = object.get("id")?.as_u64()?;
    object.get("method")?;
    object.insert("id".into(), token.id(u32::try_from(n).ok()?).into());
    serde_json::to_vec(&message).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_request_of_the_servers_is_renumbered() {
        let token = CallToken(Arc::from("abc"));
        let events =
            b"data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"sampling/createMessage\"}\n\n\
            data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
            id: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"method\":1}}\n\n";
        let out = String::from_utf8(renumber(events, &token)).unwrap();
        assert!(out.contains("\"id\":\"abc-0\""), "{out}");
        assert!(out.contains("notifications/progress"), "{out}");
        assert!(out.contains("id: 7\n"), "{out}");
        assert!(out.contains("\"id\":3,\"result\""), "{out}");
        assert_eq!(out.matches("\n\n").count(), 3, "{out}");
    }
}
