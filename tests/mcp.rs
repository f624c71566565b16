//! MCP's transport at `/mcp`, stateless Streamable HTTP, as raw HTTP in-process: what the
//! transport spec asks of a server, JSON-RPC errors for bad input, the Host and Origin checks.
//! The 2026-07-28 revision's transport and the fast path's answers are in `mcp_modern.rs`.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::mcp::*;
use common::*;
use oxp_lambda::Config;
use serde_json::{Value, json};

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
async fn mcp_can_be_turned_off() {
    let config = Config::from_vars(false, [("OXP_MCP", "off")]).unwrap();
    let app = app_with(example_tools::registry().unwrap(), config);
    let (status, _, _) = post_mcp(&app, &rpc(1, "ping", json!({})).to_string(), &[]).await;
    assert_eq!(status, 404);
}
