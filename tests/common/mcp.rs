//! MCP requests in-process: a POST to `/mcp` and its JSON-RPC answer.

use super::App;
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// What an MCP client accepts.
pub const ACCEPT: &str = "application/json, text/event-stream";

/// A JSON-RPC request.
pub fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The `_meta` of a 2026-07-28 request from a client declaring `capabilities`.
pub fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities
    })
}

/// A 2026-07-28 `tools/call` of `name` with `arguments` from a client declaring `capabilities`,
/// continuing with `state` and `responses` when given.
pub fn modern_call(
    id: u64,
    name: &str,
    arguments: Value,
    capabilities: Value,
    continued: Option<(&str, Value)>,
) -> Value {
    let mut params =
        json!({"name": name, "arguments": arguments, "_meta": modern_meta(capabilities)});
    if let Some((state, responses)) = continued {
        params["requestState"] = json!(state);
        params["inputResponses"] = responses;
    }
    rpc(id, "tools/call", params)
}

/// The raw answer of a POST to `/mcp` with `headers` on top of the usual ones.
pub async fn post_mcp(
    app: &App,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, http::HeaderMap, String) {
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", ACCEPT);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from(body.to_owned())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A request's JSON-RPC answer, which must be a 200 JSON body.
pub async fn answer(app: &App, message: Value) -> Value {
    let (status, headers, text) = post_mcp(app, &message.to_string(), &[]).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(headers["content-type"], "application/json", "JSON, not SSE");
    serde_json::from_str(&text).unwrap()
}

/// `tools/call` of `name` with `arguments` (request id 7).
pub async fn call_tool(app: &App, name: &str, arguments: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    answer(app, rpc(7, "tools/call", params)).await
}

/// The JSON object a tool result's first text block holds.
pub fn text_json(result: &Value) -> Value {
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

/// Sends `request` (a raw HTTP/1.1 `tools/call` of `Calculator_Add` with a=1, b=2) to the
/// server at `addr` and asserts it is answered within a second: a call left running (a
/// cancelled one that kept its slot) would hold the only slot far longer.
pub async fn the_slot_is_free_within_a_second(addr: &str, request: String) {
    use std::time::{Duration, Instant};
    let started = Instant::now();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
        .await
        .unwrap();
    let mut reply = String::new();
    tokio::time::timeout(
        Duration::from_secs(5),
        tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut reply),
    )
    .await
    .expect("answered")
    .unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("\"text\":\"3\""), "{reply}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the slot was held {:?}",
        started.elapsed()
    );
}
