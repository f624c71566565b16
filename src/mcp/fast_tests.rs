//! The fast path's own tests: what it takes, and what it leaves to rmcp.

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

const CALL: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calc_Add","arguments":{}}}"#;

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

#[tokio::test]
async fn a_body_that_is_not_utf_8_is_left_to_the_reading_that_refuses_it() {
    // The body is checked as UTF-8 once, then read as text: bytes that are not UTF-8 in a
    // string are no plain call, and `message.rs` answers the parse error.
    let mut body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calc_Add","arguments":{"s":""#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe]);
    body.extend_from_slice(br#""}}}"#);
    assert!(try_call(&server(), &parts(&[]), &body).await.is_none());
    use super::super::message::{Message, Unread};
    assert!(matches!(Message::read(&body), Err(Unread::NotJson(_))));
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
fn a_browsers_origin_is_rmcps_to_check_but_the_servers_own_loopback_origin() {
    let with = |headers: &[(&str, &str)]| plain(&parts(headers).headers).is_some();
    assert!(with(&[
        ("host", "127.0.0.1:8080"),
        ("origin", "http://127.0.0.1:8080")
    ]));
    assert!(with(&[
        ("host", "localhost:3000"),
        ("origin", "http://LOCALHOST:3000")
    ]));
    for foreign in [
        [
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
        ],
        [
            ("host", "127.0.0.1:8080"),
            ("origin", "https://127.0.0.1:8080"),
        ],
        [("host", "127.0.0.1:8080"), ("origin", "null")],
        // A rebound name is no loopback host.
        [("host", "evil.example"), ("origin", "http://evil.example")],
    ] {
        assert!(!with(&foreign), "{foreign:?}");
    }
    assert!(!with(&[("origin", "http://127.0.0.1:8080")]), "no host");
    let twice = [
        ("host", "127.0.0.1:8080"),
        ("origin", "http://127.0.0.1:8080"),
        ("origin", "http://127.0.0.1:8080"),
    ];
    assert!(!with(&twice), "an origin sent twice");
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
        // Arrays, which serde reads a struct from by position: the message's members, the
        // call's params (JSON-RPC's by-position params, which rmcp refuses -32602).
        r#"["2.0",1,"tools/call",{"name":"Calc_Add"}]"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["Calc_Add",{}]}"#,
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
    // The client's identity is not read (rmcp answers alike whatever it holds).
    let unread = MODERN_META.replace(r#"{"name":"c","version":"1"}"#, r#""c""#);
    let body = modern_call(&unread);
    assert!(
        try_call(&server(), &modern_parts(&[]), read(&body))
            .await
            .is_some()
    );
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
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1}"#,
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}"#,
        // A member read here sent twice: rmcp's to judge.
        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientCapabilities":{}}"#,
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

#[test]
fn a_2026_07_28_call_is_run_in_the_fast_paths_one_future_its_steps_before_boxed_small() {
    // axum boxes the fast path's future by copying it whole, every call: a 2026-07-28 call
    // runs in it (as the handshake call does, within twice the invoker's), and what it does
    // before the call (the round and the task it may become, themselves boxed where they are
    // awaited) is boxed small; boxed with the call inside, it was copied whole a second time.
    let server = server();
    let (parts, body) = (modern_parts(&[]), modern_call(MODERN_META));
    let call = oxp_lambda_core::invoke::Call::new(
        "mcp",
        oxp_lambda_core::invoke::Target::Id("Calc.Add".into()),
        Value::Null,
    );
    let invoker = std::mem::size_of_val(&server.0.invoker().invoke(call));
    let fast = std::mem::size_of_val(&try_call(&server, &parts, read(&body)));
    assert!(fast < 2 * invoker, "{fast} bytes, the invoker's {invoker}");
    let request = CallToolRequestParams::new("Calc_Add");
    let on_request = OnRequest::declared(None, true);
    let stream = || std::future::ready(None);
    let before = std::mem::size_of_val(&server.prepare(request, Some(&parts), on_request, stream));
    assert!(
        before < invoker / 4,
        "{before} bytes, the invoker's {invoker}"
    );
}
