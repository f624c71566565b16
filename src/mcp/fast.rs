//! The hot method without rmcp's per-request service: a plain `tools/call` of the handshake
//! revisions is read with rmcp's wire types, run through the same handler and answered with the
//! bytes rmcp would send. rmcp serves a stateless request by spawning a task that runs a whole
//! service (peer, channels, cancellation) for one message: about six times the OXP call path
//! in-process. Anything else (another method, the 2026-07-28 per-request metadata, a browser
//! `Origin`, a host list, an unusual header) goes to rmcp, which validates it in full;
//! `tests/mcp.rs` checks that both ways answer the same bytes.

use super::call_tool::{Asking, Rpc};
use super::handler::McpServer;
use super::message::Message;
use http::request::Parts;
use http::{HeaderMap, header};
use rmcp::model::{
    CallToolResponse, JsonRpcError, JsonRpcResponse, JsonRpcVersion2_0, ServerJsonRpcMessage,
    ServerResult,
};
use serde::Deserialize;
use serde_json::{Map, Value};

/// A `tools/call`'s params as the fast path takes them; any other member sends the request to
/// rmcp.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FastParams {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
}

/// Whether rmcp would let these headers through untouched: JSON in, both media types
/// accepted, no browser origin, a known handshake revision, none of the 2026 standard headers.
fn plain(headers: &HeaderMap) -> bool {
    let exactly_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        });
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let accepts_both = accept
        .split(',')
        .any(|m| m.trim().starts_with("application/json"))
        && accept
            .split(',')
            .any(|m| m.trim().starts_with("text/event-stream"))
        && !accept.contains(";q=0");
    // A revision with the `initialize` handshake (2026-07-28's requests carry `_meta`).
    let version_ok = match super::plumbing::header_version(headers) {
        Ok(None) => true,
        Ok(Some(version)) => version.has_initialize(),
        Err(()) => false,
    };
    exactly_json
        && accepts_both
        && version_ok
        && !headers.contains_key(header::ORIGIN)
        && !headers.contains_key("mcp-method")
        && !headers.contains_key("mcp-name")
        // A client with a session may be asked questions on the call's stream.
        && !headers.contains_key(super::elicit::SESSION_HEADER)
}

/// The answer to `message` when it is a plain `tools/call`, else `None` (rmcp takes it).
pub(super) async fn try_call(
    server: &McpServer,
    parts: &Parts,
    message: &Message<'_>,
) -> Option<Vec<u8>> {
    if !plain(&parts.headers) || !message.plain() || !message.is_request("tools/call") {
        return None;
    }
    let (id, params) = (message.id()?, message.params::<FastParams>()?);
    let per_request = params.meta.as_ref().is_some_and(|m| {
        // Progress makes the answer a stream, which rmcp writes.
        m.contains_key("progressToken")
            || m.keys().any(|k| k.starts_with("io.modelcontextprotocol/"))
    });
    // A tool served only as a task is refused on rmcp's path, which says what the client lacks.
    if per_request || server.0.task_required(&params.name) {
        return None;
    }
    let answer = match server
        .call(
            &params.name,
            params.arguments,
            Some(parts),
            Rpc {
                id: Some(&id),
                traceparent: params
                    .meta
                    .as_ref()
                    .and_then(|m| m.get("traceparent"))
                    .and_then(Value::as_str),
                ..Rpc::default()
            },
            // Only a request without per-request metadata comes here: no capabilities.
            Asking::Not,
        )
        .await
    {
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

    fn read(body: &str) -> Message<'_> {
        Message::read(body.as_bytes()).unwrap()
    }

    const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calc_Add","arguments":{}}}"#;

    #[tokio::test]
    async fn a_plain_tools_call_is_answered_here() {
        let answer = try_call(&server(), &parts(&[]), &read(CALL)).await.unwrap();
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");
        let versioned = parts(&[("mcp-protocol-version", "2025-11-25")]);
        assert!(try_call(&server(), &versioned, &read(CALL)).await.is_some());
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
                try_call(&server, &p, &read(CALL)).await.is_none(),
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
        ] {
            assert!(
                try_call(&server, &parts(&[]), &read(body)).await.is_none(),
                "{body}"
            );
        }
    }
}
