//! MCP's transport at `/mcp`, stateless Streamable HTTP, as raw HTTP in-process: what the
//! transport spec asks of a server, JSON-RPC errors for bad input, the Host and Origin checks.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::mcp::*;
use common::*;
use oxp_lambda::Config;
use serde_json::{Value, json};
use std::time::Duration;

fn initialize(version: &str) -> Value {
    rpc(
        1,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
}
#[tokio::test]
async fn initialize_negotiates_each_handshake_revision_and_opens_no_session() {
    let app = example_app();
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let (status, headers, text) = post_mcp(&app, &initialize(version).to_string(), &[]).await;
        assert_eq!(status, 200, "{text}");
        assert!(
            headers.get("mcp-session-id").is_none(),
            "stateless: no session"
        );
        let reply: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(reply["result"]["protocolVersion"], version);
        assert_eq!(reply["result"]["serverInfo"]["name"], "oxp-lambda");
        assert!(reply["result"]["capabilities"]["tools"].is_object());
    }
}

#[tokio::test]
async fn an_initialize_asking_for_a_revision_before_2025_03_26_gets_the_latest_handshake_one() {
    // "If the server supports the requested protocol version, it MUST respond with the same
    // version. Otherwise, the server MUST respond with another protocol version it supports":
    // 2024-11-05 (HTTP+SSE's revision) is not served here, though rmcp knows it.
    let app = example_app();
    for asked in ["2024-11-05", "1999-01-01"] {
        let (status, _, text) = post_mcp(&app, &initialize(asked).to_string(), &[]).await;
        assert_eq!(status, 200, "{text}");
        let reply: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            reply["result"]["protocolVersion"], "2025-11-25",
            "{asked}: {reply}"
        );
    }
}

#[tokio::test]
async fn a_request_needs_no_session_nor_an_earlier_initialize() {
    let app = example_app();
    let headers = [("mcp-protocol-version", "2025-11-25")];
    let (status, _, text) =
        post_mcp(&app, &rpc(2, "tools/list", json!({})).to_string(), &headers).await;
    assert_eq!(status, 200, "{text}");
    // An unknown session id is no obstacle either: there are no sessions.
    let headers = [
        ("mcp-protocol-version", "2025-06-18"),
        ("mcp-session-id", "gone"),
    ];
    let (status, _, text) =
        post_mcp(&app, &rpc(3, "tools/list", json!({})).to_string(), &headers).await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn a_notification_is_accepted_with_202_and_no_body() {
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, text) = post_mcp(&example_app(), &note.to_string(), &[]).await;
    assert_eq!(status, 202);
    assert!(text.is_empty());
}

#[tokio::test]
async fn get_and_delete_are_405_for_there_is_no_stream_and_no_session() {
    let app = example_app();
    for method in ["GET", "DELETE"] {
        let request = Request::builder()
            .method(method)
            .uri("/mcp")
            .header("accept", "text/event-stream")
            .body(Body::empty())
            .unwrap();
        let reply = send(&app, request).await;
        assert_eq!(reply.status, 405, "{method}");
        assert_eq!(reply.headers["allow"], "POST");
    }
}

async fn error_of(app: &App, body: &str) -> (u16, Value) {
    let (status, headers, text) = post_mcp(app, body, &[]).await;
    assert_eq!(headers["content-type"], "application/json", "{text}");
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["jsonrpc"], "2.0");
    (status, reply)
}

#[tokio::test]
async fn malformed_bodies_get_json_rpc_errors_and_never_a_5xx() {
    let app = example_app();
    let (status, reply) = error_of(&app, "{not json").await;
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32700))
    );
    assert_eq!(reply["id"], Value::Null);

    // Deep nesting is valid JSON but no message (serde_json stops at 128 levels): no stack
    // overflow, whether the whole body or the arguments nest. (At 2025-03-26 an array is a
    // batch, each of its elements answered: `mcp_batch`.)
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let later = [("mcp-protocol-version", "2025-06-18")];
    let (status, _, text) = post_mcp(&app, &deep, &later).await;
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32600))
    );
    let deep_arguments = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"Calculator_Add","arguments":{{"a":{deep}}}}}}}"#
    );
    let (status, reply) = error_of(&app, &deep_arguments).await;
    assert_eq!(status, 400, "{reply}");

    // A batch is no message after 2025-03-26 (which takes them: `mcp_batch`).
    let (status, _, text) = post_mcp(&app, "[1, 2]", &later).await;
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32600))
    );
    for not_a_message in [
        "42",
        r#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#,
        // A member named twice: which one counts is no one's guess.
        r#"{"jsonrpc": "2.0", "id": 1, "method": "ping", "method": "tools/list"}"#,
    ] {
        let (status, reply) = error_of(&app, not_a_message).await;
        assert_eq!(
            (status, reply["error"]["code"].as_i64()),
            (400, Some(-32600)),
            "{not_a_message}"
        );
    }

    let (status, reply) = error_of(&app, &rpc(5, "no/such", json!({})).to_string()).await;
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (200, Some(-32601))
    );
    assert_eq!(reply["id"], 5);

    let bad_params = rpc(6, "tools/call", json!({"arguments": {}}));
    let (_, reply) = error_of(&app, &bad_params.to_string()).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert_eq!(reply["id"], 6);
}

#[tokio::test]
async fn bodies_over_the_limit_are_413_and_other_content_types_415() {
    let config = Config {
        max_body_bytes: 1024,
        ..Config::default()
    };
    let app = app_with(example_tools::registry().unwrap(), config);
    let big = rpc(
        1,
        "tools/call",
        json!({"name": "Calculator_Add", "arguments": {"x": "y".repeat(4096)}}),
    );
    let (status, reply) = error_of(&app, &big.to_string()).await;
    assert_eq!(status, 413, "{reply}");

    let request = Request::post("/mcp")
        .header("content-type", "text/plain")
        .header("accept", ACCEPT)
        .body(Body::from(rpc(1, "ping", json!({})).to_string()))
        .unwrap();
    let reply = send(&app, request).await;
    assert_eq!(reply.status, 415);
    assert_eq!(reply.json["jsonrpc"], "2.0");
}

#[tokio::test]
async fn an_origin_outside_the_allowed_list_is_403_and_a_listed_one_passes() {
    let config = Config {
        allowed_origins: vec!["http://localhost:3000".into()],
        ..Config::default()
    };
    let app = app_with(example_tools::registry().unwrap(), config);
    let ping = rpc(1, "ping", json!({})).to_string();
    let (status, _, text) = post_mcp(&app, &ping, &[("origin", "https://evil.example")]).await;
    assert_eq!(status, 403, "{text}");
    let (status, _, text) = post_mcp(&app, &ping, &[("origin", "http://localhost:3000")]).await;
    assert_eq!(status, 200, "{text}");
}

/// `body` to /mcp as a Lambda event through API Gateway (HTTP API) with `Host: host`.
async fn post_mcp_through_api_gateway(app: &App, body: &str, host: &str) -> (u16, String) {
    use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
    use lambda_http::request::RequestContext;
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", ACCEPT)
        .header("host", host)
        .body(Body::from(body.to_owned()))
        .unwrap();
    request
        .extensions_mut()
        .insert(RequestContext::ApiGatewayV2(
            ApiGatewayV2httpRequestContext::default(),
        ));
    let reply = send(app, request).await;
    (reply.status.as_u16(), reply.text)
}

#[tokio::test]
async fn hosts_are_checked_when_configured_as_behind_api_gateway() {
    let ping = rpc(1, "ping", json!({})).to_string();
    // By default any Host is served (the API's own domain, a custom domain...).
    let (status, _) =
        post_mcp_through_api_gateway(&example_app(), &ping, "abc.execute-api.aws").await;
    assert_eq!(status, 200);

    let config =
        Config::from_vars(false, [("OXP_MCP_ALLOWED_HOSTS", "tools.example.com")]).unwrap();
    let app = app_with(example_tools::registry().unwrap(), config);
    let (status, _) = post_mcp_through_api_gateway(&app, &ping, "tools.example.com").await;
    assert_eq!(status, 200);
    let (status, text) = post_mcp_through_api_gateway(&app, &ping, "rebound.example").await;
    assert_eq!(status, 403, "{text}");
}

#[tokio::test]
async fn the_handshake_free_2026_07_28_revision_is_served_per_request() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let call = rpc(
        9,
        "tools/call",
        json!({"name": "Calculator_Add", "arguments": {"a": 1, "b": 2}, "_meta": meta}),
    );
    let (status, _, text) = post_mcp(
        &example_app(),
        &call.to_string(),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "Calculator_Add"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["result"]["content"][0]["text"], "3", "{reply}");
}

#[tokio::test]
async fn a_2026_07_28_client_closing_its_request_cancels_the_tool_and_frees_its_slot() {
    // One execution slot: a call left running would hold it.
    let config = Config {
        max_concurrent_calls: 1,
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let call = |id: u64, name: &str, arguments: Value| {
        rpc(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments, "_meta": meta}),
        )
        .to_string()
    };
    let request = |body: String, name: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    // A 20 s sleep, whose client gives up after 300 ms by closing the connection.
    let mut sleeping = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let sleep = request(call(1, "Demo_Sleep", json!({"ms": 20_000})), "Demo_Sleep");
    tokio::io::AsyncWriteExt::write_all(&mut sleeping, sleep.as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(sleeping);
    // The next call gets the slot within a second.
    let add = request(
        call(2, "Calculator_Add", json!({"a": 1, "b": 2})),
        "Calculator_Add",
    );
    the_slot_is_free_within_a_second(&addr, add).await;
}

#[tokio::test]
async fn at_2026_07_28_a_removed_or_unknown_method_is_404_method_not_found_and_lists_carry_cache_hints()
 {
    let app = example_app();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "tasks/list",
        "no/such",
    ] {
        let message = rpc(5, method, json!({"_meta": meta}));
        let (status, _, text) = post_mcp(
            &app,
            &message.to_string(),
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
            ],
        )
        .await;
        assert_eq!(status, 404, "{method}: {text}");
        let reply: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
        assert_eq!(reply["id"], 5);
    }
    // The handshake revisions keep their answers: ping is a method there.
    let (status, _, _) = post_mcp(&app, &rpc(6, "ping", json!({})).to_string(), &[]).await;
    assert_eq!(status, 200);
    // tools/list says how long it stays fresh, and for whom.
    let list = rpc(7, "tools/list", json!({"_meta": meta}));
    let (status, _, text) = post_mcp(
        &app,
        &list.to_string(),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["result"]["ttlMs"], 300_000, "{reply}");
    assert_eq!(reply["result"]["cacheScope"], "private", "{reply}");
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    // The handshake revisions' listing has no such members: listed as they were published.
    for revision in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let headers = [("mcp-protocol-version", revision)];
        let list = rpc(8, "tools/list", json!({})).to_string();
        let (status, _, text) = post_mcp(&app, &list, &headers).await;
        assert_eq!(status, 200, "{text}");
        let reply: Value = serde_json::from_str(&text).unwrap();
        let result = reply["result"].as_object().unwrap();
        assert!(!result.contains_key("ttlMs"), "{revision}: {reply}");
        assert!(!result.contains_key("cacheScope"), "{revision}: {reply}");
    }
}

#[tokio::test]
async fn mcp_can_be_turned_off() {
    let config = Config::from_vars(false, [("OXP_MCP", "off")]).unwrap();
    let app = app_with(example_tools::registry().unwrap(), config);
    let (status, _, _) = post_mcp(&app, &rpc(1, "ping", json!({})).to_string(), &[]).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_fast_tools_call_path_answers_the_same_bytes_as_rmcp() {
    // A request with a browser Origin always goes through rmcp's full service; the same request
    // without one takes the adapter's fast path for plain `tools/call`s.
    let config = Config {
        allowed_origins: vec!["http://localhost:3000".into()],
        ..Config::default()
    };
    let app = app_with(example_tools::registry().unwrap(), config);
    let calls = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "Calculator_Add", "arguments": {"a": 10, "b": 5}}}),
        json!({"jsonrpc": "2.0", "id": "call-two", "method": "tools/call",
            "params": {"name": "Doorbell_Ring", "arguments": {"doorbell_id": "x"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "Calculator_Add", "arguments": {"a": "ten"}, "_meta": {"progressToken": 9}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "No_Such"}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "SMS_Send", "arguments": {"to": "+1", "message": "m"}}}),
        // A progress token rmcp cannot read (no progress either way) beside a trace context.
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
            "params": {"name": "Calculator_Add", "arguments": {"a": 1, "b": 2},
                "_meta": {"progressToken": true,
                    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}}}),
    ];
    for call in calls {
        for version in [None, Some("2025-06-18"), Some("2025-11-25")] {
            let mut headers = vec![];
            if let Some(v) = version {
                headers.push(("mcp-protocol-version", v));
            }
            let (fast_status, _, fast) = post_mcp(&app, &call.to_string(), &headers).await;
            headers.push(("origin", "http://localhost:3000"));
            let (status, _, full) = post_mcp(&app, &call.to_string(), &headers).await;
            assert_eq!((fast_status, status), (200, 200));
            assert_eq!(fast, full, "{call} {version:?}");
        }
    }
}

#[tokio::test]
async fn the_fast_path_answers_a_2026_07_28_call_as_rmcps_path_does_with_its_status() {
    // As above, at 2026-07-28: the standard headers and the revision's `_meta` on each call,
    // each answered as rmcp's path answers it (the unit tests in src/mcp/fast.rs check that
    // such a call takes the fast path).
    let config = Config {
        allowed_origins: vec!["http://localhost:3000".into()],
        ..Config::default()
    };
    let app = app_with(example_tools::registry().unwrap(), config);
    let form = json!({"elicitation": {"form": {}}});
    let info = json!({"name": "t", "version": "1"});
    let calls = [
        (
            "Calculator_Add",
            json!({"a": 10, "b": 5}),
            json!({}),
            info.clone(),
        ),
        (
            "Calculator_Add",
            json!({"a": "ten"}),
            json!({}),
            info.clone(),
        ),
        (
            "SMS_Send",
            json!({"to": "+1", "message": "m"}),
            json!({}),
            info.clone(),
        ),
        // A tool that asks, for a client that takes no form (-32021, 400) and for one that does
        // (the round's `input_required`, whose sealed state differs call by call).
        (
            "Demo_Confirm",
            json!({"prompt": "Go?", "choices": ["a", "b"], "default": 0}),
            json!({}),
            info.clone(),
        ),
        (
            "Demo_Confirm",
            json!({"prompt": "Go?", "choices": ["a", "b"], "default": 0}),
            form,
            info,
        ),
        // A client identity that is no `Implementation`: neither way reads it.
        (
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
            json!({}),
            json!("t"),
        ),
    ];
    for (n, (name, arguments, capabilities, info)) in calls.into_iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": info}}})
        .to_string();
        let mut headers = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
        ];
        let (fast_status, fast_headers, fast) = post_mcp(&app, &call, &headers).await;
        headers.push(("origin", "http://localhost:3000"));
        let (status, rmcp_headers, full) = post_mcp(&app, &call, &headers).await;
        assert_eq!(fast_status, status, "{call}");
        assert_eq!(
            fast_headers.get("content-type"),
            rmcp_headers.get("content-type")
        );
        // The same JSON (an error rmcp's path answers is written again by `modern.rs`, its
        // members in another order), but for a round's sealed state.
        let unsealed = |text: &str| {
            let mut answer: Value = serde_json::from_str(text).unwrap();
            if let Some(result) = answer["result"].as_object_mut() {
                assert_eq!(result.remove("requestState").is_some(), n == 4, "{text}");
            }
            answer
        };
        assert_eq!(unsealed(&fast), unsealed(&full), "{call}");
    }
}
