//! The hot method without rmcp's per-request service: a plain `tools/call` is read with rmcp's
//! wire types, run through the same handler and answered as rmcp would answer it. rmcp serves a
//! stateless request by spawning a task that runs a whole service (peer, channels,
//! cancellation) for one message: about six times the OXP call path in-process at the
//! handshake revisions, about ten times at 2026-07-28, whose every call carries the revision's
//! `_meta` (docs/performance.md). Plain means: at a handshake revision, no per-request
//! metadata; at 2026-07-28, the revision's `_meta` and standard headers (`Mcp-Method`,
//! `Mcp-Name`) as rmcp's transport would accept them untouched, for a tool that takes no
//! `Mcp-Param-*` header (the checks rmcp makes, made here once: [`plain`], [`plain_meta`]).
//! Anything else (another method, a round's state or answers, a progress token, a browser
//! `Origin`, a host list, a session, an unusual or repeated header) goes to rmcp, which
//! validates it in full; `tests/mcp.rs` checks that both ways answer alike.

use super::call_tool::{Asking, Rpc};
use super::handler::McpServer;
use super::result::Revision;
use http::request::Parts;
use http::{HeaderMap, StatusCode, header};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, JsonRpcError, JsonRpcResponse,
    JsonRpcVersion2_0, RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerResult,
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
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[allow(dead_code, reason = "read to check it: only tools/call")]
    method: ToolsCall,
    #[serde(borrow)]
    params: FastParams<'a>,
}

/// The method `tools/call` (written without escapes).
struct ToolsCall;

impl<'de> Deserialize<'de> for ToolsCall {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match <&str>::deserialize(deserializer)? {
            "tools/call" => Ok(Self),
            _ => Err(serde::de::Error::custom("another method")),
        }
    }
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
    /// Read with rmcp's type, whose accessors name its members (`traceparent`).
    #[serde(rename = "_meta", default)]
    meta: Option<RequestMetaObject>,
}

/// How a request's headers let the fast path take it: the revision it is answered in and, at
/// 2026-07-28, the `Mcp-Name` header, which must name the body's tool.
struct Plain<'a> {
    revision: Revision,
    named: Option<&'a str>,
}

/// Whether rmcp would let these headers through untouched: JSON in, both media types
/// accepted, no browser origin, no session, a known revision; at the handshake revisions none
/// of the 2026 standard headers, at 2026-07-28 `Mcp-Method: tools/call` and a plain `Mcp-Name`,
/// and at any revision no `Mcp-Param-*` header. One pass over the request's headers (a
/// handful) rather than a lookup for each name checked: the lookups cost the call more than the
/// checks. A checked header sent twice goes to rmcp.
fn plain(headers: &HeaderMap) -> Option<Plain<'_>> {
    use super::plumbing::{METHOD, NAME, PROTOCOL_VERSION};
    let (mut json, mut both) = (None, None);
    let (mut version, mut method, mut named) = (None, None, None);
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
        } else if name == header::ORIGIN
            // A client with a session may be asked questions on the call's stream.
            || name == super::elicit::SESSION_HEADER
            || name.as_str().starts_with("mcp-param-")
        {
            return None;
        }
    }
    if json != Some(true) || both != Some(true) {
        return None;
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

/// A 2026-07-28 call's `_meta` as the fast path takes it: the revision's required members,
/// valid as rmcp's accessors read them and naming the revision, the client's identity, a trace
/// context, and nothing else (a progress token or a log level is rmcp's to act on).
fn plain_meta(meta: Option<&RequestMetaObject>) -> bool {
    const TAKEN: [&str; 6] = [
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/clientInfo",
        "traceparent",
        "tracestate",
        "baggage",
    ];
    let modern = rmcp::model::ProtocolVersion::V_2026_07_28;
    meta.is_some_and(|meta| {
        meta.0.keys().all(|key| TAKEN.contains(&key.as_str()))
            && meta.protocol_version() == Some(modern.clone())
            && meta.missing_required_keys(&modern).is_empty()
            && (!meta.0.contains_key(TAKEN[2]) || meta.client_info().is_some())
    })
}

/// `Content-Type` is JSON, parameters aside.
fn exactly_json(value: &str) -> bool {
    let media = value.split_once(';').map_or(value, |(media, _)| media);
    media.trim().eq_ignore_ascii_case("application/json")
}

/// `Accept` takes both of Streamable HTTP's media types, none with a zero weight: one pass
/// over its items.
fn accepts_both(accept: &str) -> bool {
    let (mut json, mut stream) = (false, false);
    for item in accept.split(',') {
        let item = item.trim_start();
        json |= item.starts_with("application/json");
        stream |= item.starts_with("text/event-stream");
    }
    json && stream && !accept.contains(";q=0")
}

/// The answer to `body` (its status and bytes) when it is a plain `tools/call`, else `None`
/// (rmcp takes it).
pub(super) async fn try_call(
    server: &McpServer,
    parts: &Parts,
    body: &[u8],
) -> Option<(StatusCode, Vec<u8>)> {
    let plain = plain(&parts.headers)?;
    let FastCall { id, params, .. } = serde_json::from_slice(body).ok()?;
    if let Some(named) = plain.named {
        return Box::pin(modern(server, parts, id, params, named)).await;
    }
    let per_request = params.meta.as_ref().is_some_and(|m| {
        // Progress makes the answer a stream, which rmcp writes (a token rmcp cannot read asks
        // for none, on either path); any of 2026-07-28's per-request members, whatever its
        // value, is rmcp's to read.
        m.get_progress_token().is_some()
            || m.0
                .keys()
                .any(|k| k.starts_with("io.modelcontextprotocol/"))
    });
    // A tool served only as a task is refused on rmcp's path, which says what the client lacks.
    if per_request || server.0.task_required(&params.name) {
        return None;
    }
    let rpc = Rpc {
        id: Some(&id),
        traceparent: params.meta.as_ref().and_then(|m| m.get_traceparent()),
        revision: Some(plain.revision),
        ..Rpc::default()
    };
    // Only a request without per-request metadata comes here: no capabilities, no asking.
    let answer = match server.tool(&params.name) {
        Ok(tool) => {
            let call = server.call(tool, params.arguments, Some(parts), rpc, Asking::Not);
            call.await
        }
        Err(unknown) => Err(unknown),
    };
    let answer = match answer {
        // Asking nothing, a call completes.
        Ok(CallToolResponse::Complete(mut result)) => {
            // Handshake revisions know no `resultType`; rmcp drops it for them too.
            result.result_type = None;
            Ok(CallToolResponse::Complete(result))
        }
        Ok(_) => return None,
        Err(error) => Err(error),
    };
    answered(id, answer, false)
}

/// A plain 2026-07-28 `tools/call` (its `Mcp-Name` header `named`): its `_meta` and headers as
/// rmcp's transport would accept them untouched, answered by the handler rmcp would call, with
/// the status rmcp and `modern.rs` give its errors. Boxed where it is awaited: the handshake
/// revisions' plain call does not carry its state.
async fn modern(
    server: &McpServer,
    parts: &Parts,
    id: RequestId,
    params: FastParams<'_>,
    named: &str,
) -> Option<(StatusCode, Vec<u8>)> {
    let meta = params.meta.as_ref();
    if named != params.name || !plain_meta(meta) || server.0.param_headers(&params.name) {
        return None;
    }
    let on_request = super::questions::OnRequest::of(meta?);
    let tasks = on_request.tasks;
    let rpc = Rpc {
        id: Some(&id),
        traceparent: meta.and_then(|m| m.get_traceparent()),
        revision: Some(Revision::ALL),
        ..Rpc::default()
    };
    let mut request = CallToolRequestParams::new(params.name.into_owned());
    request.arguments = params.arguments;
    let stream = || std::future::ready(None);
    let answer = server
        .answer_call(request, Some(parts), on_request, rpc, stream)
        .await;
    // rmcp's own guard: a task handle only for a client that declared tasks.
    let answer = match answer {
        Ok(CallToolResponse::Task(_)) if !tasks => {
            Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            ))
        }
        answer => answer,
    };
    answered(id, answer, true)
}

/// The JSON-RPC answer to request `id`, as rmcp writes it, and its status: 200, but for a
/// `modern` (2026-07-28) request's missing client capability (-32021), which is 400 (the
/// revision's rule, which rmcp and `modern.rs` apply; a plain call meets no other error with a
/// status of its own), its error's quotes of what the caller sent shortened as `modern.rs`
/// does.
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
            error.message = super::modern::quotes_shown(&error.message).into();
            ServerJsonRpcMessage::Error(JsonRpcError::new(Some(id), error))
        }
        Err(error) => ServerJsonRpcMessage::Error(JsonRpcError::new(Some(id), error)),
    };
    let mut bytes = Vec::with_capacity(256);
    serde_json::to_writer(&mut bytes, &message).ok()?;
    Some((status, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Served;
    use crate::{Tool, ToolContext, ToolError};
    use oxp_lambda_core::invoke::Invoker;
    use oxp_lambda_core::registry::Registry;
    use oxp_lambda_core::secrets::Secrets;
    use std::sync::Arc;

    fn server() -> McpServer {
        let add = Tool::builder("Calc.Add", "1.0.0").raw_handler(
            serde_json::json!({"type": "object"}),
            Some(serde_json::json!({"type": "integer"})),
            |_: Value, _: ToolContext| async move { Ok::<_, ToolError>(Value::from(3)) },
        );
        let registry = Arc::new(Registry::builder().tool(add).build().unwrap());
        let invoker = Arc::new(Invoker::new(
            registry.clone(),
            Secrets::default(),
            None,
            4,
            None,
        ));
        let tools = registry.served(&[], "pins").unwrap();
        McpServer(Arc::new(Served::new(invoker, tools)))
    }

    fn parts(extra: &[(&str, &str)]) -> Parts {
        let mut request = http::Request::post("/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (name, value) in extra {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    fn read(body: &str) -> &[u8] {
        body.as_bytes()
    }

    const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calc_Add","arguments":{}}}"#;

    #[tokio::test]
    async fn a_plain_tools_call_is_answered_here() {
        let (status, answer) = try_call(&server(), &parts(&[]), read(CALL)).await.unwrap();
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");
        let versioned = parts(&[("mcp-protocol-version", "2025-11-25")]);
        assert!(try_call(&server(), &versioned, read(CALL)).await.is_some());
        // A trace context, and a progress token rmcp cannot read (it asks for no progress on
        // rmcp's path either): still a plain call.
        let traced = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calc_Add","_meta":{"progressToken":true,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}}}"#;
        assert!(
            try_call(&server(), &parts(&[]), read(traced))
                .await
                .is_some()
        );
    }

    #[test]
    fn a_plain_calls_future_is_less_than_twice_the_invokers() {
        // axum boxes a handler's future by copying it whole, every call: the round's, the
        // task's and rmcp's steps are boxed where they are awaited, so they add nothing here.
        let server = server();
        let message = read(CALL);
        let parts = parts(&[]);
        let call = oxp_lambda_core::invoke::Call::new(
            "mcp",
            oxp_lambda_core::invoke::Target::Id("Calc.Add".into()),
            Value::Null,
        );
        let invoker = std::mem::size_of_val(&server.0.invoker().invoke(call));
        let fast = std::mem::size_of_val(&try_call(&server, &parts, message));
        assert!(fast < 2 * invoker, "{fast} bytes, the invoker's {invoker}");
    }

    #[test]
    fn headers_rmcp_would_look_at_again_are_not_plain() {
        assert!(plain(&parts(&[]).headers).is_some());
        for extra in [
            ("mcp-name", "Calc_Add"),
            ("mcp-session-id", "s"),
            // A checked header sent twice: which one rmcp reads is rmcp's to say.
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ] {
            assert!(plain(&parts(&[extra]).headers).is_none(), "{extra:?}");
        }
    }

    #[test]
    fn a_plain_call_accepts_both_media_types_and_sends_json() {
        for accept in [
            "application/json, text/event-stream",
            "text/event-stream,application/json",
            "application/json;q=1, text/event-stream",
        ] {
            assert!(accepts_both(accept), "{accept}");
        }
        for accept in [
            "application/json",
            "text/event-stream",
            "application/json, text/event-stream;q=0",
            // Any weight that reads `q=0...` is left to rmcp to weigh.
            "application/json;q=0.9, text/event-stream",
            "*/*",
        ] {
            assert!(!accepts_both(accept), "{accept}");
        }
        for json in ["application/json", "Application/JSON ; charset=utf-8"] {
            assert!(exactly_json(json), "{json}");
        }
        for other in ["application/json-seq", "text/plain", ""] {
            assert!(!exactly_json(other), "{other}");
        }
    }

    #[test]
    fn the_revision_a_plain_call_is_answered_in_is_its_headers_once_read() {
        let links = |version: Option<&str>| {
            let headers = version.map(|v| ("mcp-protocol-version", v));
            plain(&parts(headers.as_slice()).headers).map(|plain| plain.revision.links)
        };
        // No header: 2025-03-26, which knows no `resource_link`.
        assert_eq!(links(None), Some(false));
        assert_eq!(links(Some("2025-03-26")), Some(false));
        assert_eq!(links(Some("2025-06-18")), Some(true));
        assert_eq!(links(Some("2025-11-25")), Some(true));
        // Sent twice, even alike: rmcp says which counts.
        let twice = parts(&[
            ("mcp-protocol-version", "2025-06-18"),
            ("mcp-protocol-version", "2025-06-18"),
        ]);
        assert!(plain(&twice.headers).is_none());
    }

    #[tokio::test]
    async fn anything_rmcp_must_check_goes_to_rmcp() {
        let server = server();
        for headers in [
            vec![("origin", "http://localhost:3000")],
            vec![("mcp-protocol-version", "2026-07-28")],
            vec![("mcp-protocol-version", "1999-01-01")],
            vec![("mcp-method", "tools/call")],
            vec![("accept", "application/json")],
        ] {
            let mut p = parts(&[]);
            for (name, value) in headers.iter().copied() {
                p.headers.insert(
                    http::HeaderName::from_static(name),
                    http::HeaderValue::from_static(value),
                );
            }
            assert!(
                try_call(&server, &p, read(CALL)).await.is_none(),
                "{headers:?}"
            );
        }
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calc_Add","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calc_Add","requestState":"x"}}"#,
            // Progress makes a stream of the answer.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calc_Add","_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"Calc_Add"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"Calc_Add"}}"#,
            // A member the fast path does not know, or one sent twice: rmcp's to judge.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calc_Add"},"x":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"Calc_Add"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"Calc_Add"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"Calc_Add"}}"#,
        ] {
            assert!(
                try_call(&server, &parts(&[]), read(body)).await.is_none(),
                "{body}"
            );
        }
    }

    /// The headers of a 2026-07-28 `tools/call` of `Calc_Add`, and more.
    fn modern_parts(extra: &[(&str, &str)]) -> Parts {
        let mut headers = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "Calc_Add"),
        ];
        headers.extend_from_slice(extra);
        parts(&headers)
    }

    /// A 2026-07-28 `tools/call` of `Calc_Add` whose `_meta` is `meta`.
    fn modern_call(meta: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"Calc_Add","arguments":{{}},"_meta":{meta}}}}}"#
        )
    }

    const MODERN_META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}"#;

    #[tokio::test]
    async fn a_plain_2026_07_28_call_is_answered_here_with_its_result_type() {
        let body = modern_call(MODERN_META);
        let (status, answer) = try_call(&server(), &modern_parts(&[]), read(&body))
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");
    }

    #[tokio::test]
    async fn a_2026_07_28_call_rmcp_must_check_goes_to_rmcp() {
        let server = server();
        let body = modern_call(MODERN_META);
        // Headers the revision's transport checks against the body, or that rmcp reads.
        for (name, value) in [
            ("mcp-name", "Other_Tool"),
            ("mcp-name", "=?base64?Q2FsY19BZGQ=?="),
            ("mcp-method", "tools/list"),
            ("mcp-param-region", "eu"),
            ("mcp-protocol-version", "2026-07-28"),
        ] {
            let mut p = modern_parts(&[]);
            if name != "mcp-param-region" && name != "mcp-protocol-version" {
                p.headers.remove(name);
            }
            p.headers.append(
                http::HeaderName::from_static(name),
                http::HeaderValue::from_static(value),
            );
            assert!(
                try_call(&server, &p, read(&body)).await.is_none(),
                "{name}: {value}"
            );
        }
        // Without the standard headers, or with the handshake's version.
        for name in ["mcp-method", "mcp-name"] {
            let mut p = modern_parts(&[]);
            p.headers.remove(name);
            assert!(try_call(&server, &p, read(&body)).await.is_none(), "{name}");
        }
        let handshake = parts(&[
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "Calc_Add"),
        ]);
        assert!(try_call(&server, &handshake, read(&body)).await.is_none());
        // A `_meta` short of the revision's members, naming another revision, or carrying what
        // rmcp acts on.
        for meta in [
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"c"}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1}"#,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}"#,
        ] {
            let body = modern_call(meta);
            assert!(
                try_call(&server, &modern_parts(&[]), read(&body))
                    .await
                    .is_none(),
                "{meta}"
            );
        }
        let stateful = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"Calc_Add","requestState":"s","_meta":{MODERN_META}}}}}"#
        );
        assert!(
            try_call(&server, &modern_parts(&[]), read(&stateful))
                .await
                .is_none()
        );
    }
}
