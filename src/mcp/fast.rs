//! The hot method without rmcp's per-request service: a plain `tools/call` is read with rmcp's
//! wire types, run through the same handler and answered as rmcp would answer it. rmcp serves a
//! stateless request by spawning a task that runs a whole service (peer, channels,
//! cancellation) for one message: about six times the OXP call path in-process at the
//! handshake revisions, about ten times at 2026-07-28, whose every call carries the revision's
//! `_meta` (docs/performance.md). Plain means: at a handshake revision, no per-request
//! metadata; at 2026-07-28, the revision's `_meta` and standard headers (`Mcp-Method`,
//! `Mcp-Name`) as rmcp's transport would accept them untouched, for a tool that takes no
//! `Mcp-Param-*` header (the checks rmcp makes, made here once: `plain`, `plain_meta`).
//! Anything else (another method, a round's state or answers, a progress token, a browser
//! `Origin`, a host list, a session, an unusual or repeated header) goes to rmcp, which
//! validates it in full; `tests/mcp_modern.rs` checks that both ways answer alike.

use super::call_tool::{Asking, Prepared, Rpc};
use super::declared::OnRequest;
use super::fast_meta::FastMeta;
use super::handler::McpServer;
use super::result::Revision;
use crate::server::Object;
use http::request::Parts;
use http::{HeaderMap, StatusCode, header};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, JsonRpcError, JsonRpcResponse,
    JsonRpcVersion2_0, RequestId, ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A plain `tools/call` as the fast path takes it, read in one pass: any other member, a
/// member twice, another method or version, and the request is read again by `message.rs`
/// (and goes to rmcp). Reading the message's members first and its `params` again cost the
/// call about a thousand instructions in serde_json skipping `params` to find its end.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastCall<'a> {
    #[allow(dead_code, reason = "read to check it: only 2.0")]
    #[serde(deserialize_with = "version_2")]
    jsonrpc: (),
    id: RequestId,
    #[allow(dead_code, reason = "read to check it: only tools/call")]
    #[serde(deserialize_with = "tools_call")]
    method: (),
    #[serde(borrow)]
    params: Object<FastParams<'a>>,
}

/// `text`, written without escapes, read without a copy (rmcp's `JsonRpcVersion2_0` makes a
/// `String` of `"2.0"` first).
fn exactly<'de, D: serde::Deserializer<'de>>(deserializer: D, text: &str) -> Result<(), D::Error> {
    match <&str>::deserialize(deserializer)? == text {
        true => Ok(()),
        false => Err(serde::de::Error::custom("another value")),
    }
}

fn version_2<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<(), D::Error> {
    exactly(deserializer, "2.0")
}

fn tools_call<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<(), D::Error> {
    exactly(deserializer, "tools/call")
}

/// A `tools/call`'s params as the fast path takes them; any other member sends the request to
/// rmcp.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastParams<'a> {
    /// Borrowed from the body where it can be (no escape in it).
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    /// Each member the fast path acts on read into rmcp's type, in the same pass. Boxed:
    /// inline, rmcp's capabilities made every call's parsed body (a handshake call's, which
    /// has none, too) several hundred bytes larger, copied as it moves.
    #[serde(rename = "_meta", default)]
    meta: Option<Box<FastMeta>>,
}

/// How a request's headers let the fast path take it: the revision it is answered in and, at
/// 2026-07-28, the `Mcp-Name` header, which must name the body's tool.
struct Plain<'a> {
    revision: Revision,
    named: Option<&'a str>,
}

/// Whether rmcp would let these headers through untouched: JSON in, both media types
/// accepted, no browser origin (but the server's own loopback one, which rmcp never sees), no
/// session, a known revision; at the handshake revisions none
/// of the 2026 standard headers, at 2026-07-28 `Mcp-Method: tools/call` and a plain `Mcp-Name`,
/// and at any revision no `Mcp-Param-*` header. One pass over the request's headers (a
/// handful) rather than a lookup for each name checked: the lookups cost the call more than the
/// checks. A checked header sent twice goes to rmcp.
fn plain(headers: &HeaderMap) -> Option<Plain<'_>> {
    use super::plumbing::{METHOD, NAME, PROTOCOL_VERSION};
    let (mut json, mut both) = (None, None);
    let (mut version, mut method, mut named) = (None, None, None);
    let (mut host, mut origin) = (None, None);
    for (name, value) in headers {
        let once = |seen: Option<&[u8]>| seen.is_none().then_some(value.as_bytes());
        if name == header::CONTENT_TYPE {
            if json
                .replace(exactly_json(value.to_str().unwrap_or("")))
                .is_some()
            {
                return None;
            }
        } else if name == header::ACCEPT {
            if both
                .replace(accepts_both(value.to_str().unwrap_or("")))
                .is_some()
            {
                return None;
            }
        } else if name == PROTOCOL_VERSION {
            version = Some(once(version)?);
        } else if name == METHOD {
            method = Some(once(method)?);
        } else if name == NAME {
            // Written plainly: a Base64 form (`=?base64?...?=`) is rmcp's to read.
            let text = value.to_str().ok().filter(|v| !v.starts_with("=?"))?;
            if named.replace(text).is_some() {
                return None;
            }
        } else if name == header::HOST {
            host = Some(once(host)?);
        } else if name == header::ORIGIN {
            origin = Some(once(origin)?);
        } else if name == super::elicit::SESSION_HEADER
            // A client with a session may be asked questions on the call's stream.
            || name.as_str().starts_with("mcp-param-")
        {
            return None;
        }
    }
    if json != Some(true) || both != Some(true) {
        return None;
    }
    // A browser's origin is rmcp's to check, but for the server's own loopback origin, which
    // `answer` takes out before rmcp sees it (no other page can send it).
    if let Some(origin) = origin {
        let host = host.and_then(|h| std::str::from_utf8(h).ok());
        let origin = std::str::from_utf8(origin).ok();
        if !origin.is_some_and(|o| crate::server::is_own_loopback_origin(host, o)) {
            return None;
        }
    }
    // Absent, 2025-03-26 (as rmcp takes it).
    let revision = match version {
        None => &rmcp::model::ProtocolVersion::V_2025_03_26,
        Some(sent) => super::plumbing::version_of(sent)?,
    };
    let modern = *revision == rmcp::model::ProtocolVersion::V_2026_07_28;
    let headed = match (method, named) {
        (None, None) => !modern && revision.has_initialize(),
        (Some(method), Some(_)) => modern && method == b"tools/call",
        _ => false,
    };
    headed.then(|| Plain {
        revision: Revision::of_version(revision),
        named,
    })
}

/// What a 2026-07-28 call's client declared, when its `_meta` is as the fast path takes it: the
/// revision's required members, read into rmcp's types and naming this revision, optionally the
/// client's identity (not decoded: rmcp answers alike whatever it holds) and a trace context,
/// and nothing else (a progress token or a log level is rmcp's to act on).
fn plain_meta(meta: FastMeta) -> Option<OnRequest> {
    let this = *meta.version? == rmcp::model::ProtocolVersion::V_2026_07_28;
    let capabilities = meta.capabilities?;
    (this && !meta.untaken).then(|| OnRequest::declared(Some(capabilities), true))
}

/// `Content-Type` is JSON, parameters aside.
fn exactly_json(value: &str) -> bool {
    // As clients send it, told without a scan.
    if value == "application/json" {
        return true;
    }
    let media = value.split_once(';').map_or(value, |(media, _)| media);
    media.trim().eq_ignore_ascii_case("application/json")
}

/// `Accept` takes both of Streamable HTTP's media types, none with a zero weight: one pass
/// over its items.
fn accepts_both(accept: &str) -> bool {
    // As the SDKs send it, told without a scan (a third of a plain call's header checks).
    if accept == "application/json, text/event-stream" {
        return true;
    }
    let (mut json, mut stream) = (false, false);
    for item in accept.split(',') {
        let item = item.trim_start();
        json |= item.starts_with("application/json");
        stream |= item.starts_with("text/event-stream");
    }
    json && stream && !accept.contains(";q=0")
}

/// The answer to `body` (its status and bytes) when it is a plain `tools/call`, else `None`
/// (rmcp takes it). Either revision's call is run by the one call future here: a 2026-07-28
/// call's steps before it are boxed where they are awaited, and the call itself is not boxed
/// apart from this future (which axum boxes anyway), which would copy it whole once more.
pub(super) async fn try_call(
    server: &McpServer,
    parts: &Parts,
    body: &[u8],
) -> Option<(StatusCode, Vec<u8>)> {
    let plain = plain(&parts.headers)?;
    // One UTF-8 check of the whole body, not one per string read from it.
    let text = std::str::from_utf8(body).ok()?;
    let Object(FastCall { id, params, .. }) = serde_json::from_str(text).ok()?;
    let Object(FastParams {
        name,
        arguments,
        mut meta,
    }) = params;
    let traceparent = meta.as_mut().and_then(|m| m.traceparent.take());
    let (prepared, tasks) = match plain.named {
        Some(named) => {
            let (request, on_request) = modern(server, named, name, arguments, meta)?;
            let tasks = on_request.tasks;
            let stream = || std::future::ready(None);
            let prepared = server.prepare(request, Some(parts), on_request, stream);
            (Box::pin(prepared).await, Some(tasks))
        }
        None => {
            // A tool served only as a task is refused on rmcp's path, which says what the
            // client lacks.
            let tool = server.tool(&name);
            if meta.as_deref().is_some_and(FastMeta::per_request)
                || tool.is_some_and(|served| served.task_required)
            {
                return None;
            }
            let run = match tool {
                Some(served) => Ok(Prepared::Run(&served.tool, arguments, Asking::Not)),
                None => Box::pin(server.unserved(&name, Some(parts))).await,
            };
            (run, None)
        }
    };
    let answer = match prepared {
        Ok(Prepared::Run(tool, arguments, asking)) => {
            let rpc = Rpc {
                id: Some(&id),
                traceparent: traceparent.as_deref(),
                revision: Some(plain.revision),
                ..Rpc::default()
            };
            let call = server.call(tool, arguments, Some(parts), rpc, asking);
            call.await
        }
        Ok(Prepared::Answered(answer)) => Ok(answer),
        Err(error) => Err(error),
    };
    match tasks {
        // rmcp's own guard: a task handle only for a client that declared tasks.
        Some(false) if matches!(answer, Ok(CallToolResponse::Task(_))) => {
            let needed = rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .build();
            let error = ErrorData::missing_required_client_capability(needed);
            answered(id, Err(error), true)
        }
        Some(_) => answered(id, answer, true),
        // Asking nothing, a handshake revision's call completes; those revisions know no
        // `resultType` (rmcp drops it for them too).
        None => match answer {
            Ok(CallToolResponse::Complete(mut result)) => {
                result.result_type = None;
                answered(id, Ok(CallToolResponse::Complete(result)), false)
            }
            Ok(_) => None,
            Err(error) => answered(id, Err(error), false),
        },
    }
}

/// A plain 2026-07-28 `tools/call` of tool `name` (its `Mcp-Name` header `named`) as rmcp's
/// service would hand it to the handler, and what its client declared: when its `_meta` and
/// headers are as rmcp's transport would accept them untouched.
fn modern(
    server: &McpServer,
    named: &str,
    name: Cow<'_, str>,
    arguments: Option<Map<String, Value>>,
    meta: Option<Box<FastMeta>>,
) -> Option<(CallToolRequestParams, OnRequest)> {
    // A tool that takes `Mcp-Param-*` headers, or none served (rmcp names it unknown).
    let headed = server
        .0
        .get(&name)
        .is_none_or(|served| served.param_headers);
    if named != name || headed {
        return None;
    }
    let on_request = plain_meta(*meta?)?;
    let mut request = CallToolRequestParams::new(name.into_owned());
    request.arguments = arguments;
    Some((request, on_request))
}

/// The JSON-RPC answer to request `id`, as rmcp writes it, and its status: 200, but for a
/// `modern` (2026-07-28) request's missing client capability (-32021), which is 400 (the
/// revision's rule, which rmcp and `modern.rs` apply; a plain call meets no other error with a
/// status of its own), its error's quotes of what the caller sent shortened as
/// `plumbing::message_shown` does.
fn answered(
    id: RequestId,
    answer: Result<CallToolResponse, ErrorData>,
    modern: bool,
) -> Option<(StatusCode, Vec<u8>)> {
    let mut status = StatusCode::OK;
    let message = match answer {
        Ok(response) => ServerJsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id,
            result: ServerResult::from(response),
        }),
        Err(mut error) if modern => {
            if error.code == ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
                status = StatusCode::BAD_REQUEST;
            }
            error.message = super::plumbing::message_shown(&error.message).into();
            ServerJsonRpcMessage::Error(JsonRpcError::new(Some(id), error))
        }
        Err(error) => ServerJsonRpcMessage::Error(JsonRpcError::new(Some(id), error)),
    };
    let mut bytes = Vec::with_capacity(256);
    serde_json::to_writer(&mut bytes, &message).ok()?;
    Some((status, bytes))
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
