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
async fn a_tool_id_that_resolves_to_nothing_comes_back_at_most_64_characters_without_control_characters()
 {
    // A tool id that resolved to nothing came back whole in both messages (up to the 256
    // characters an id may have, control characters included); now as every other refusal
    // shows what the caller sent.
    let app = app_with(common::example_tools::registry().unwrap(), test_config());
    let call = |tool_id: &str| {
        json!({"request": {"tool_id": tool_id, "input": {"a": 1, "b": 2}}}).to_string()
    };
    let a = |n: usize| "A".repeat(n);
    let cases = [
        // Malformed: a bell and a newline in it.
        (
            "Bad\u{7}\nName!".to_owned(),
            "Tool ID 'BadName!' is not valid".to_owned(),
            None,
        ),
        // No such tool: a 252-character name.
        (
            format!("X.{}", a(250)),
            format!("Tool 'X_{}…' was not found", a(62)),
            Some(format!("No tool named X.{}… is registered.", a(62))),
        ),
        // No such version: 206 characters of it.
        (
            format!("Calculator.Add@9.0.0-{}", "a".repeat(200)),
            "Tool 'Calculator_Add' was not found".to_owned(),
            Some(format!(
                "Calculator.Add version 9.0.0-{}… is not available.",
                "a".repeat(58)
            )),
        ),
    ];
    for (tool_id, message, developer) in cases {
        let reply = post(&app, "/tools/call", call(&tool_id)).await;
        assert_eq!(reply.status, 400, "{}", reply.text);
        assert_eq!(reply.json["message"], message.as_str(), "{}", reply.text);
        let detail = reply.json["developer_message"].as_str().unwrap();
        if let Some(developer) = developer {
            assert!(detail.starts_with(&developer), "{detail}");
        }
        assert!(!reply.text.contains(&a(65)), "{}", reply.text);
        assert!(!reply.text.contains("\\u0007"), "{}", reply.text);
    }
}

#[tokio::test]
async fn a_reused_call_id_comes_back_in_its_refusal_at_most_64_characters() {
    // The result names its call_id as sent (OXP's rule); the refusal of a second call under it
    // repeated all 251 characters, a bell among them, in its developer message.
    let app = app_with(common::example_tools::registry().unwrap(), test_config());
    let call_id = format!("\u{7}{}", "C".repeat(250));
    let call = |b: u32| {
        json!({"request": {"call_id": call_id, "tool_id": "Calculator.Add",
                           "input": {"a": 1, "b": b}}})
        .to_string()
    };
    assert_eq!(post(&app, "/tools/call", call(2)).await.status, 200);
    let reused = post(&app, "/tools/call", call(3)).await;
    assert_eq!(reused.status, 400, "{}", reused.text);
    let detail = reused.json["developer_message"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!("call_id '{}…' was used", "C".repeat(64))),
        "{detail}"
    );
}

#[tokio::test]
async fn what_rmcp_refuses_quotes_at_most_64_characters_of_the_callers_value_at_every_revision() {
    // rmcp's refusals name the caller's value: its version header (in plain text, which came
    // back whole up to 4 KB and empty beyond), an `initialize` body's version against the
    // header's, a 2026-07-28 request's `_meta` version against the header's (in parentheses,
    // which only backtick quotes were bounded in).
    let app = app_with(common::example_tools::registry().unwrap(), test_config());
    let long = |from: &str| format!("{from}{}", "x".repeat(6000));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": long("2025-06-18"), "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let meta = common::mcp::modern_meta(json!({}));
    let mut meta = meta.as_object().unwrap().clone();
    // A `)` of its own does not take the rest out of the bound.
    meta.insert(
        "io.modelcontextprotocol/protocolVersion".into(),
        long("2026-07-28)").into(),
    );
    let modern = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                        "params": {"_meta": meta}})
    .to_string();
    let version = long("9");
    let cases = [
        (
            list,
            vec![("mcp-protocol-version", version.as_str())],
            400,
            -32600,
        ),
        (
            initialize,
            vec![("mcp-protocol-version", "2025-06-18")],
            400,
            -32600,
        ),
        (
            modern,
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
            ],
            400,
            -32020,
        ),
    ];
    for (body, headers, status, code) in cases {
        let (got, _, text) = post_mcp(&app, &body, &headers).await;
        assert_eq!(got, status, "{}", &text[..300.min(text.len())]);
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["error"]["code"], code, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(!message.contains(&"x".repeat(65)), "{message}");
        assert!(message.len() < 400, "{message}");
        // What it says is still there: which value, and that it was cut.
        assert!(
            message.contains("Version") && message.contains('…'),
            "{message}"
        );
    }
}

#[tokio::test]
async fn an_mcp_request_whose_id_is_no_request_id_is_an_invalid_request_answered_with_a_null_id() {
    // A 100 KB object as the id came back whole in a -32602; JSON-RPC answers an id it cannot
    // read with `null`, and MCP's ids are strings or integers, never null.
    let app = app_with(common::example_tools::registry().unwrap(), test_config());
    let big = json!({"k": "v".repeat(100 * 1024)});
    for id in [big, Value::Null, json!(true), json!([1])] {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string();
        let (status, _, text) = post_mcp(&app, &body, &[]).await;
        assert_eq!(status, 400, "{}", &text[..200.min(text.len())]);
        assert!(text.len() < 1024, "{} bytes came back", text.len());
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
    }
    // A request id as JSON-RPC has them is still named in its error.
    let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": "tools/call", "params": 5});
    let (status, _, text) = post_mcp(&app, &body.to_string(), &[]).await;
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!((status, &answer["id"]), (400, &json!("r-1")), "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
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

#[tokio::test]
async fn a_request_head_of_64_kib_is_served_and_one_past_128_kib_refused_with_431() {
    // hyper's own bound was about 400 KiB a connection: 400 MiB for a thousand held open. It
    // reads at most 64 KiB at a time and refuses a head still incomplete past 64 KiB.
    let (addr, _stop) = serve_on_loopback(test_config()).await;
    let call = r#"{"request":{"tool_id":"Calculator.Add@1","input":{"a":1,"b":2}}}"#;
    let head = |bytes: usize| {
        format!(
            "Host: {addr}\r\nContent-Type: application/json\r\nX-Padding: {}\r\n",
            "a".repeat(bytes)
        )
    };
    let (status, body) = http_raw_with(&addr, "POST", "/tools/call", &head(63 * 1024), call).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = http_raw_with(&addr, "POST", "/tools/call", &head(129 * 1024), call).await;
    assert_eq!(status, 431);
}
