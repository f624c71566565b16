//! MCP's transport at the 2026-07-28 revision (no handshake: each request says its revision),
//! as raw HTTP in-process, and the fast `tools/call` path, which must answer every revision as
//! rmcp's own path does.

use crate::common;

use common::mcp::*;
use common::*;
use oxp_lambda::Config;
use serde_json::{Value, json};
use std::time::Duration;

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
