//! MCP over Streamable HTTP at `/mcp`, stateless, as raw HTTP in-process: what the transport
//! spec asks of a server, the tool mapping, and JSON-RPC errors for bad input.

mod common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use http_body_util::BodyExt;
use oxp_lambda::{Config, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use tower::ServiceExt;

const ACCEPT: &str = "application/json, text/event-stream";

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn initialize(version: &str) -> Value {
    rpc(
        1,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
}

/// The raw answer of a POST to `/mcp` with `headers` on top of the usual ones.
async fn post_mcp(
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
async fn answer(app: &App, message: Value) -> Value {
    let (status, headers, text) = post_mcp(app, &message.to_string(), &[]).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(headers["content-type"], "application/json", "JSON, not SSE");
    serde_json::from_str(&text).unwrap()
}

async fn call_tool(app: &App, name: &str, arguments: Value) -> Value {
    answer(
        app,
        rpc(
            7,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        ),
    )
    .await
}

/// The JSON object a tool result's first text block holds.
fn text_json(result: &Value) -> Value {
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
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
async fn tools_list_serves_listing_names_and_object_output_schemas() {
    let reply = answer(&example_app(), rpc(2, "tools/list", json!({}))).await;
    let tools = reply["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "Calculator_Add",
            "Doorbell_Ring",
            "SMS_Send",
            "System_GetTimestamp"
        ]
    );
    let add = &tools[0];
    assert_eq!(add["description"], "Adds two numbers together.");
    assert_eq!(add["inputSchema"]["type"], "object");
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    assert!(
        add.get("outputSchema").is_none(),
        "a number output has no MCP output schema"
    );
    let timestamp = &tools[3];
    assert_eq!(timestamp["outputSchema"]["type"], "object");
}

fn versioned() -> Registry {
    let version = |v: &'static str| {
        Tool::builder("Echo.Version", v).handler(
            move |_: oxp_lambda::NoInput, _: ToolContext| async move {
                Ok::<_, ToolError>(v.to_owned())
            },
        )
    };
    Registry::builder()
        .tools([version("1.0.0"), version("2.0.0")])
        .build()
        .unwrap()
}

#[tokio::test]
async fn each_tool_serves_its_latest_release_unless_pinned() {
    let latest = app_with(versioned(), Config::default());
    let reply = call_tool(&latest, "Echo_Version", json!({})).await;
    assert_eq!(reply["result"]["content"][0]["text"], "2.0.0");

    let mut config = Config::default();
    config.mcp.pins = vec!["Echo.Version@1.0.0".into()];
    let pinned = app_with(versioned(), config);
    let reply = call_tool(&pinned, "Echo_Version", json!({})).await;
    assert_eq!(reply["result"]["content"][0]["text"], "1.0.0");

    let mut config = Config::default();
    config.mcp.pins = vec!["Echo.Version@3.0.0".into()];
    let error = oxp_lambda::App::builder(versioned())
        .config(config)
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("OXP_MCP_TOOLS: 'Echo.Version@3.0.0'"),
        "{error}"
    );
}

#[tokio::test]
async fn a_successful_call_answers_text_and_structured_content_where_the_output_is_an_object() {
    let app = example_app();
    let sum = call_tool(&app, "Calculator_Add", json!({"a": 10, "b": 5})).await;
    assert_eq!(sum["result"]["isError"], false);
    assert_eq!(
        sum["result"]["content"],
        json!([{"type": "text", "text": "15"}])
    );
    assert!(sum["result"].get("structuredContent").is_none());

    let time = call_tool(&app, "System_GetTimestamp", json!({})).await;
    let structured = &time["result"]["structuredContent"];
    assert!(structured["timestamp"].is_string(), "{time}");
    assert_eq!(
        text_json(&time["result"]),
        *structured,
        "the text is the same JSON"
    );
}

#[tokio::test]
async fn a_tool_without_input_takes_no_arguments_at_all() {
    let app = example_app();
    let reply = answer(
        &app,
        rpc(4, "tools/call", json!({"name": "System_GetTimestamp"})),
    )
    .await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
}

#[tokio::test]
async fn a_tool_error_is_is_error_with_the_oxp_error_fields_for_the_model() {
    let reply = call_tool(
        &example_app(),
        "Doorbell_Ring",
        json!({"doorbell_id": "nope"}),
    )
    .await;
    let result = &reply["result"];
    assert_eq!(result["isError"], true);
    let error = text_json(result);
    assert_eq!(error["message"], "Doorbell ID not found");
    assert_eq!(error["can_retry"], true);
    assert_eq!(error["retry_after_ms"], 500);
    assert_eq!(
        error["additional_prompt_content"],
        "ids: doorbell42,doorbell84"
    );
    assert!(
        error.get("developer_message").is_none(),
        "not for the model"
    );
}

#[tokio::test]
async fn invalid_arguments_are_a_tool_error_naming_each_bad_parameter() {
    let reply = call_tool(&example_app(), "Calculator_Add", json!({"a": "ten"})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let error = text_json(&reply["result"]);
    assert_eq!(error["parameter_errors"]["a"], "Must be a number");
    assert_eq!(error["parameter_errors"]["b"], "Is required");
}

#[tokio::test]
async fn an_unknown_tool_is_a_json_rpc_invalid_params_error() {
    let reply = call_tool(&example_app(), "No_Such", json!({})).await;
    assert_eq!(reply["error"]["code"], -32602);
    assert_eq!(reply["error"]["message"], "Unknown tool: No_Such");
    assert_eq!(reply["id"], 7);
}

#[tokio::test]
async fn a_missing_server_secret_is_a_tool_error_and_client_secrets_are_not_taken() {
    // SMS.Send needs TWILIO_API_KEY; MCP has no way to send one, and the server holds none.
    let reply = call_tool(
        &example_app(),
        "SMS_Send",
        json!({"to": "+1555", "message": "hi"}),
    )
    .await;
    assert_eq!(reply["result"]["isError"], true);
    assert!(
        text_json(&reply["result"])["message"]
            .as_str()
            .unwrap()
            .contains("TWILIO_API_KEY")
    );

    let held = build(
        oxp_lambda::App::builder(example_tools::registry().unwrap()).secret("TWILIO_API_KEY", "k"),
    );
    let reply = call_tool(&held, "SMS_Send", json!({"to": "+1555", "message": "hi"})).await;
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"status": "sent"})
    );
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
    // overflow, whether the whole body or the arguments nest.
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let (status, reply) = error_of(&app, &deep).await;
    assert_eq!(
        (status, reply["error"]["code"].as_i64()),
        (400, Some(-32600))
    );
    let deep_arguments = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"Calculator_Add","arguments":{{"a":{deep}}}}}}}"#
    );
    let (status, reply) = error_of(&app, &deep_arguments).await;
    assert_eq!(status, 400, "{reply}");

    for not_a_message in [
        "[1, 2]",
        "42",
        r#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#,
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

#[tokio::test]
async fn hosts_are_checked_when_configured_as_behind_api_gateway() {
    let ping = rpc(1, "ping", json!({})).to_string();
    // By default any Host is served (the API's own domain, a custom domain...).
    let (status, _, _) = post_mcp(&example_app(), &ping, &[("host", "abc.execute-api.aws")]).await;
    assert_eq!(status, 200);

    let mut config = Config::default();
    config.mcp.allowed_hosts = vec!["tools.example.com".into()];
    let app = app_with(example_tools::registry().unwrap(), config);
    let (status, _, _) = post_mcp(&app, &ping, &[("host", "tools.example.com")]).await;
    assert_eq!(status, 200);
    let (status, _, text) = post_mcp(&app, &ping, &[("host", "rebound.example")]).await;
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
async fn mcp_can_be_turned_off() {
    let mut config = Config::default();
    config.mcp.enabled = false;
    let app = app_with(example_tools::registry().unwrap(), config);
    let (status, _, _) = post_mcp(&app, &rpc(1, "ping", json!({})).to_string(), &[]).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn an_mcp_call_writes_the_one_call_log_line_with_its_protocol() {
    let captured = Captured::global();
    call_tool(&example_app(), "Calculator_Add", json!({"a": 1, "b": 41})).await;
    let line = captured
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| {
            l["fields"]["protocol"] == "mcp" && l["fields"]["tool_id"] == "Calculator.Add@1.0.0"
        });
    let line = line.expect("a call line for the MCP call");
    assert_eq!(line["fields"]["outcome"], "success");
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
