//! The hot method without rmcp's per-request service: a plain `tools/call` of the handshake
//! revisions is read with rmcp's wire types, run through the same handler and answered with the
//! bytes rmcp would send. rmcp serves a stateless request by spawning a task that runs a whole
//! service (peer, channels, cancellation) for one message: about six times the OXP call path
//! in-process. Anything else (another method, the 2026-07-28 per-request metadata, a browser
//! `Origin`, a host list, an unusual header) goes to rmcp, which validates it in full;
//! `tests/mcp.rs` checks that both ways answer the same bytes.

use super::call_tool::{Asking, Rpc};
use super::handler::McpServer;
use super::result::Revision;
use http::request::Parts;
use http::{HeaderMap, header};
use rmcp::model::{
    CallToolResponse, JsonRpcError, JsonRpcResponse, JsonRpcVersion2_0, RequestId,
    RequestMetaObject, ServerJsonRpcMessage, ServerResult,
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

/// Whether rmcp would let these headers through untouched: JSON in, both media types
/// accepted, no browser origin, a known handshake revision, none of the 2026 standard headers.
/// One pass over the request's headers (a handful) rather than a lookup for each name checked:
/// the lookups cost the call more than the checks. A checked header sent twice goes to rmcp.
fn plain(headers: &HeaderMap) -> Option<Revision> {
    use super::plumbing::{METHOD, NAME, PROTOCOL_VERSION};
    let (mut json, mut both) = (None, None);
    // Absent, 2025-03-26 (as rmcp takes it).
    let (mut revision, mut versioned) = (&rmcp::model::ProtocolVersion::V_2025_03_26, false);
    for (name, value) in headers {
        let value = value.to_str().unwrap_or("");
        if name == header::CONTENT_TYPE {
            if json.replace(exactly_json(value)).is_some() {
                return None;
            }
        } else if name == header::ACCEPT {
            if both.replace(accepts_both(value)).is_some() {
                return None;
            }
        } else if name == PROTOCOL_VERSION {
            // A revision with the `initialize` handshake (2026-07-28's requests carry `_meta`).
            match super::plumbing::version_of(value.as_bytes()) {
                Some(known) if known.has_initialize() && !versioned => revision = known,
                _ => return None,
            }
            versioned = true;
        } else if name == header::ORIGIN
            || name == METHOD
            || name == NAME
            // A client with a session may be asked questions on the call's stream.
            || name == super::elicit::SESSION_HEADER
        {
            return None;
        }
    }
    (json == Some(true) && both == Some(true)).then(|| Revision::of_version(revision))
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

/// The answer to `body` when it is a plain `tools/call`, else `None` (rmcp takes it).
pub(super) async fn try_call(server: &McpServer, parts: &Parts, body: &[u8]) -> Option<Vec<u8>> {
    let revision = plain(&parts.headers)?;
    let FastCall { id, params, .. } = serde_json::from_slice(body).ok()?;
    // Progress makes the answer a stream, which rmcp writes (a token rmcp cannot read asks for
    // none, on either path); any of 2026-07-28's per-request members, whatever its value, is
    // rmcp's to read.
    let per_request = params.meta.as_ref().is_some_and(|m| {
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
        revision: Some(revision),
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
            ServerJsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: JsonRpcVersion2_0,
                id,
                result: ServerResult::CallToolResult(result),
            })
        }
        Ok(_) => return None,
        Err(error) => ServerJsonRpcMessage::Error(JsonRpcError::new(Some(id), error)),
    };
    let mut bytes = Vec::with_capacity(256);
    serde_json::to_writer(&mut bytes, &answer).ok()?;
    Some(bytes)
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
        let answer = try_call(&server(), &parts(&[]), read(CALL)).await.unwrap();
        let answer: Value = serde_json::from_slice(&answer).unwrap();
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
            plain(&parts(headers.as_slice()).headers).map(|revision| revision.links)
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
}
