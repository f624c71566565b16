//! The server as an attacker meets it: a web page in the developer's browser, bodies shaped to
//! slip past the wire format, unbounded fields (one caller against another is in
//! `security_callers.rs`). Each test is a row of the table in docs/security.md.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::receiver::Receiver;
use common::*;
use oxp_lambda::{Config, NoInput, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

// ---- A web page in the developer's browser ---------------------------------------------------

#[tokio::test]
async fn every_post_route_refuses_a_body_that_is_not_declared_json() {
    let app = example_app();
    let add = json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}});
    // A page's `fetch(url, {mode: "no-cors", body})` sends no content type or text/plain.
    for (path, body) in [
        ("/tools/call", add.to_string()),
        ("/call", add.to_string()),
        ("/invoke", json!({"operation": "Calculator_Add", "arguments": {}, "id": "i", "group_id": "g", "callback_url": "http://127.0.0.1:9/cb"}).to_string()),
        ("/close_thread", json!({"group_id": "g"}).to_string()),
        ("/cancel_tool_call", json!({"thread_id": "g", "tool_call_id": "i"}).to_string()),
        ("/tool_call_status", json!({"thread_id": "g", "tool_call_id": "i"}).to_string()),
        ("/user_choice_response/t", json!({"id": "i", "selected": 0}).to_string()),
        ("/mcp", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "Calculator_Add", "arguments": {"a": 1, "b": 2}}}).to_string()),
    ] {
        for content_type in [None, Some("text/plain"), Some("application/x-www-form-urlencoded")] {
            let mut request = Request::post(path);
            if let Some(ct) = content_type {
                request = request.header("content-type", ct);
            }
            let reply = send(&app, request.body(Body::from(body.clone())).unwrap()).await;
            // OXP answers every error before the tool runs with a 400 (the published 1.0
            // OpenAPI); RAP and MCP keep 415. Refused either way: the tool never runs.
            let status = if path.starts_with("/tools") || path == "/call" { 400 } else { 415 };
            assert_eq!(reply.status, status, "{path} {content_type:?}: {}", reply.text);
        }
    }
}

#[tokio::test]
async fn a_loopback_server_refuses_other_host_names_and_web_origins() {
    let config = Config {
        allowed_origins: vec!["http://localhost:3000".into()],
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;
    let port = addr.rsplit(':').next().unwrap();
    let call = r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":2}}}"#;
    let json = "Content-Type: application/json\r\n";
    for (headers, expected) in [
        (format!("Host: {addr}\r\n{json}"), 200),
        (format!("Host: localhost:{port}\r\n{json}"), 200),
        // DNS rebinding: the page's own name, resolved to 127.0.0.1.
        (format!("Host: attacker.example:{port}\r\n{json}"), 403),
        (
            format!("Host: {addr}\r\nOrigin: https://attacker.example\r\n{json}"),
            403,
        ),
        (format!("Host: {addr}\r\nOrigin: null\r\n{json}"), 403),
        (
            format!("Host: {addr}\r\nOrigin: http://localhost:3000\r\n{json}"),
            200,
        ),
        // The server's own origin is same-origin (no page of another site can send it), and a
        // rebound name's "own origin" still fails on its Host.
        (
            format!("Host: {addr}\r\nOrigin: http://{addr}\r\n{json}"),
            200,
        ),
        (
            format!("Host: {addr}\r\nOrigin: http://127.0.0.1:1\r\n{json}"),
            403,
        ),
        (
            format!(
                "Host: attacker.example:{port}\r\nOrigin: http://attacker.example:{port}\r\n{json}"
            ),
            403,
        ),
    ] {
        let (status, body) = http_raw_with(&addr, "POST", "/tools/call", &headers, call).await;
        assert_eq!(status, expected, "{headers:?}: {body}");
        if status == 403 {
            let body: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(body["message"], "Forbidden");
            assert!(
                !body.to_string().contains("attacker"),
                "nothing echoed: {body}"
            );
        }
    }
    // The rule covers every route, /health included.
    let (status, _) =
        http_raw_with(&addr, "GET", "/health", "Host: attacker.example\r\n", "").await;
    assert_eq!(status, 403);
}

/// Whether `body`, a refusal's answer on `path`, has the shape of the protocol serving it.
fn shaped_as_its_protocol(path: &str, body: &Value) -> bool {
    match path {
        "/mcp" => {
            body["jsonrpc"] == "2.0" && body["id"].is_null() && body["error"]["code"].is_i64()
        }
        "/invoke" | "/tool_call_status" => body["error"]["kind"].is_string(),
        p if p.starts_with("/webhooks/") => body["error"].is_string(),
        _ => body["$schema"] == "urn:oxp:1.0" && body["message"].is_string(),
    }
}

/// `head` and `body` sent as they are (a body that never arrives whole, a malformed chunk):
/// the server's answer, as its status and JSON.
async fn sent_raw(addr: &str, head: &str, body: &str) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("{head}Host: {addr}\r\nContent-Type: application/json\r\n\r\n{body}");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    let read = stream.read_to_end(&mut reply);
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .unwrap()
        .unwrap();
    let reply = String::from_utf8(reply).unwrap();
    let status = reply[9..12].parse().unwrap();
    let body = reply.split_once("\r\n\r\n").unwrap().1;
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_refusal_in_front_of_the_routes_is_answered_in_the_shape_of_the_protocol_asked() {
    // A page's origin or a rebound name (403), another method (405), a request without one
    // valid Host (400), a body that never arrives whole (408) or does not read (400).
    let config = Config {
        body_read_timeout: Duration::from_millis(300),
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;
    let port = addr.rsplit(':').next().unwrap();
    let json = "Content-Type: application/json\r\n";
    let paths = [
        "/mcp",
        "/invoke",
        "/tool_call_status",
        "/tools/call",
        "/call",
        "/webhooks/demo",
    ];
    for path in paths {
        for (method, headers, status) in [
            (
                "POST",
                format!("Host: {addr}\r\nOrigin: https://attacker.example\r\n{json}"),
                403,
            ),
            (
                "POST",
                format!("Host: attacker.example:{port}\r\n{json}"),
                403,
            ),
            ("PATCH", format!("Host: {addr}\r\n{json}"), 405),
            // HTTP/1.1's Host rule (RFC 9112, 3.2): none, two, or one that is no host.
            ("POST", json.to_owned(), 400),
            (
                "POST",
                format!("Host: {addr}\r\nHost: attacker.example\r\n{json}"),
                400,
            ),
            ("POST", format!("Host: user@{addr}\r\n{json}"), 400),
        ] {
            let (got, body) = http_raw_with(&addr, method, path, &headers, "{}").await;
            assert_eq!(got, status, "{path} {headers:?}: {body}");
            assert!(!body.contains("attacker"), "nothing echoed: {body}");
            let body: Value = serde_json::from_str(&body).unwrap();
            assert!(
                shaped_as_its_protocol(path, &body),
                "{path} {status}: {body}"
            );
        }
        // An absolute target is for its own host, whatever the Host says (RFC 9112, 3.2.2).
        let target = format!("http://attacker.example:{port}{path}");
        let headers = format!("Host: {addr}\r\n{json}");
        let (got, body) = http_raw_with(&addr, "POST", &target, &headers, "{}").await;
        assert_eq!(got, 403, "{target}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert!(shaped_as_its_protocol(path, &body), "{target}: {body}");
        let head = format!("POST {path} HTTP/1.1\r\n");
        let (status, body) = sent_raw(&addr, &format!("{head}Content-Length: 100\r\n"), "{").await;
        assert_eq!(status, 408, "{path}: {body}");
        assert!(shaped_as_its_protocol(path, &body), "{path} 408: {body}");
        let chunked = format!("{head}Transfer-Encoding: chunked\r\n");
        let (status, body) = sent_raw(&addr, &chunked, "zz\r\n{}\r\n0\r\n\r\n").await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(shaped_as_its_protocol(path, &body), "{path} 400: {body}");
    }
    // The app served by a program of its own refuses a page's request in the same shapes; so
    // is a path under a protocol's that no route serves (a client's URL with a segment too many).
    let app = example_app();
    for path in paths {
        for (uri, origin, status) in [
            (path.to_owned(), Some("https://attacker.example"), 403),
            (format!("{path}/nowhere"), None, 404),
        ] {
            let mut request = Request::post(&uri).header("content-type", "application/json");
            if let Some(origin) = origin {
                request = request.header("origin", origin);
            }
            let reply = send(&app, request.body(Body::from("{}")).unwrap()).await;
            assert_eq!(reply.status, status, "{uri}: {}", reply.text);
            assert!(
                shaped_as_its_protocol(path, &reply.json),
                "{uri}: {}",
                reply.text
            );
        }
    }
    // A path no protocol serves gets the plumbing's own answer.
    let (status, body) =
        http_raw_with(&addr, "GET", "/health", "Host: attacker.example\r\n", "").await;
    assert_eq!(status, 403);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["message"],
        "Forbidden"
    );
}

// ---- Bodies shaped to slip past the wire format ------------------------------------------------

#[tokio::test]
async fn every_object_of_the_wire_format_must_be_a_json_object() {
    let app = example_app();
    for body in [
        json!([null, {"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}}]),
        json!({"request": ["Calculator.Add@1.0.0", null, null, {"a": 1, "b": 2}]}),
        json!({"request": {"tool_id": "SMS.Send", "input": {"to": "+1", "message": "m"}, "context": [[], [["TWILIO_API_KEY", "v"]]]}}),
        json!({"request": {"tool_id": "SMS.Send", "input": {"to": "+1", "message": "m"}, "context": {"secrets": [["TWILIO_API_KEY", "v"]]}}}),
        json!({"request": {"tool_id": "SMS.Send", "input": {"to": "+1", "message": "m"}, "context": {"authorization": [["google", "t"]]}}}),
    ] {
        let reply = call(&app, body.clone()).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
        assert_eq!(reply.json["$schema"], "urn:oxp:1.0");
    }
    let reply = call(
        &app,
        json!({"request": {"tool_id": "Calculator.Add", "input": [1, 2]}}),
    )
    .await;
    assert_eq!(reply.status, 422, "an input that is not an object");
}

#[tokio::test]
async fn an_empty_call_id_is_refused_not_shared() {
    let reply = call(
        &example_app(),
        json!({"request": {"tool_id": "Calculator.Add", "call_id": "", "input": {"a": 1, "b": 2}}}),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json["developer_message"]
            .as_str()
            .unwrap()
            .contains("call_id")
    );
}

#[tokio::test]
async fn ids_are_bounded_in_length() {
    let app = example_app();
    let long = "x".repeat(300);
    for body in [
        json!({"request": {"tool_id": "Calculator.Add", "call_id": long, "input": {"a": 1, "b": 2}}}),
        json!({"request": {"tool_id": "Calculator.Add", "trace_id": long, "input": {"a": 1, "b": 2}}}),
        json!({"request": {"tool_id": long}}),
        json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}, "context": {"user_id": long}}}),
    ] {
        let reply = call(&app, body).await;
        assert_eq!(reply.status, 400, "{}", reply.text);
        assert!(!reply.text.contains(&long), "not echoed");
    }
    let receiver = Receiver::ok().await;
    let invocation = |id: &str, operation: &str| {
        json!({"operation": operation, "arguments": {"a": 1, "b": 2}, "id": id,
               "group_id": "g", "callback_url": receiver.url})
    };
    let reply = post(
        &app,
        "/invoke",
        invocation(&long, "Calculator_Add").to_string(),
    )
    .await;
    assert_eq!(reply.status, 400, "no usable id to answer to");
    let reply = post(&app, "/invoke", invocation("ok-id", &long).to_string()).await;
    assert_eq!(reply.status, 200, "acknowledged, then reported");
    let result = receiver.result().await;
    let error = rap_error(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["kind"], "malformed_invocation");
}

// ---- Nothing unbounded -------------------------------------------------------------------------

#[tokio::test]
async fn the_rate_limit_counts_malformed_invocations_and_a_varying_user_id_does_not_reset_it() {
    let config = test_config_with(&[("OXP_RAP_RATE_LIMIT", "2/min")]);
    let app = app_with(common::example_tools::registry().unwrap(), config);
    let receiver = Receiver::ok().await;
    let invocation = |id: &str, user: &str, operation: &str| {
        json!({"operation": operation, "arguments": {"a": 1, "b": 2}, "id": id, "group_id": "g",
               "callback_url": receiver.url, "user_id": user})
    };
    for (body, status) in [
        (invocation("i1", "u1", "No_Such_Operation"), 200),
        (invocation("i2", "u2", "Calculator_Add"), 200),
        (invocation("i3", "u3", "Calculator_Add"), 429),
    ] {
        assert_eq!(post(&app, "/invoke", body.to_string()).await.status, status);
    }
    let hits = receiver.wait_for(2).await;
    let kinds: Vec<Value> = hits
        .iter()
        .map(|h| {
            let text = h.body["text"].as_str().unwrap();
            rap_error(text).map_or(json!("success"), |v| v["error"]["kind"].clone())
        })
        .collect();
    assert!(kinds.contains(&json!("unknown_operation")), "{kinds:?}");
    assert!(kinds.contains(&json!("success")), "{kinds:?}");
}

#[tokio::test]
async fn a_server_running_all_the_invocations_it_may_refuses_the_next_with_503_and_retry_after() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = gate.clone();
    let wait = Tool::builder("T.Wait", "1.0.0").handler(move |_: NoInput, _: ToolContext| {
        let gate = held.clone();
        async move {
            gate.acquire().await.unwrap().forget();
            Ok::<_, ToolError>(())
        }
    });
    let config = test_config_with(&[("OXP_RAP_MAX_PENDING", "1")]);
    let app = app_with(Registry::builder().tool(wait).build().unwrap(), config);
    let receiver = Receiver::ok().await;
    let invocation = |id: &str| json!({"operation": "T_Wait", "arguments": {}, "id": id, "group_id": "g", "callback_url": receiver.url});
    assert_eq!(
        post(&app, "/invoke", invocation("a").to_string())
            .await
            .status,
        200
    );
    let full = post(&app, "/invoke", invocation("b").to_string()).await;
    assert_eq!(full.status, 503, "{}", full.text);
    assert_eq!(full.headers["retry-after"], "1");
    assert_eq!(full.json["error"]["kind"], "busy");
    assert_eq!(full.json["error"]["can_retry"], true);
    gate.add_permits(1);
    assert_eq!(app.drain(Duration::from_secs(10)).await, 0);
    assert_eq!(
        post(&app, "/invoke", invocation("c").to_string())
            .await
            .status,
        200
    );
    gate.add_permits(1);
    assert_eq!(app.drain(Duration::from_secs(10)).await, 0);
}

#[tokio::test]
async fn a_404_does_not_repeat_the_path_it_was_asked_for() {
    let app = example_app();
    let reply = get(&app, "/no-such-route-%3Cscript%3E-TWILIO_API_KEY=sk_live").await;
    assert_eq!(reply.status, 404);
    assert!(!reply.text.contains("no-such-route"), "{}", reply.text);
    assert!(!reply.text.contains("sk_live"), "{}", reply.text);
}
