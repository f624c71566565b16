//! The fourth security read (docs/security.md), each finding as the attack it was: one MCP
//! request's close stopping another of the same caller and JSON-RPC id; a caller's input echoed
//! back unbounded; and what must stay private or refuse to run (files, templates, keys).

use crate::common;

use common::mcp::post_mcp;
use common::*;
use serde_json::{Value, json};
use std::time::Duration;

fn sleep_call(ms: u64) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "Demo_Sleep", "arguments": {"ms": ms}}})
    .to_string()
}

#[tokio::test]
async fn closing_one_mcp_request_leaves_another_of_the_same_caller_and_id_running() {
    let app = app_with(common::example_tools::registry().unwrap(), test_config());
    // Two requests of one caller (every local client, authentication off), both `"id": 1`.
    let first = tokio::spawn({
        let app = app.clone();
        async move { post_mcp(&app, &sleep_call(1500), &[]).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = tokio::spawn({
        let app = app.clone();
        async move { post_mcp(&app, &sleep_call(60_000), &[]).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The second's client goes away: its request, and its call, end.
    second.abort();
    let (status, _, text) = first.await.unwrap();
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let slept = common::mcp::text_json(&answer["result"]);
    assert_eq!(
        slept["cancelled"], false,
        "the first ran to its end: {answer}"
    );
    assert!(slept["slept_ms"].as_u64().unwrap() >= 1500, "{slept}");
}

#[tokio::test]
async fn an_oxp_version_of_100_kb_is_not_repeated_in_the_answer() {
    let app = app_with(common::example_tools::registry().unwrap(), test_config());
    let schema = format!("urn:oxp:{}", "9".repeat(100 * 1024));
    let body = json!({"$schema": schema, "request": {"tool_id": "Calculator.Add@1",
                      "input": {"a": 1, "b": 2}}});
    let reply = post(&app, "/tools/call", body.to_string()).await;
    assert_eq!(
        reply.status,
        400,
        "{}",
        &reply.text[..200.min(reply.text.len())]
    );
    assert!(
        reply.text.len() < 1024,
        "{} bytes came back",
        reply.text.len()
    );
    let message = reply.json["message"].as_str().unwrap();
    assert!(message.contains("urn:oxp:999"), "{message}");
}

#[tokio::test]
async fn a_100_kb_tool_name_that_its_mcp_name_header_contradicts_is_not_repeated() {
    let app = app_with(common::example_tools::registry().unwrap(), test_config());
    let name = "N".repeat(100 * 1024);
    let params = json!({"name": name, "arguments": {},
                        "_meta": common::mcp::modern_meta(json!({}))});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "Calculator_Add"),
    ];
    let (status, _, text) = post_mcp(&app, &body.to_string(), &headers).await;
    assert_eq!(status, 400, "{}", &text[..200.min(text.len())]);
    assert!(text.len() < 1024, "{} bytes came back", text.len());
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["error"]["code"], -32020, "{answer}");
}

#[tokio::test]
async fn servers_sharing_a_state_table_without_a_shared_sealing_key_refuse_to_start_naming_it() {
    // Each would seal requestStates and sessions with a key of its own: a round asked on one
    // and answered on the other would be "forged", and a restart would void every open state.
    let shared = test_config_with(&[("OXP_STATE_TABLE", "oxp-state")]);
    let refused = oxp_lambda::App::builder(common::example_tools::registry().unwrap())
        .config(shared.clone())
        .build()
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("MCP_STATE_KEY"), "{refused}");
    // With the one key they share, it starts.
    let started = oxp_lambda::App::builder(common::example_tools::registry().unwrap())
        .config(shared)
        .secret("MCP_STATE_KEY", common::STATE_KEY)
        .build()
        .await;
    assert!(started.is_ok(), "{:?}", started.err());
}
