//! Progress on a streamed answer: a `tools/call` that carries `_meta.progressToken` gets the
//! tool's progress as `notifications/progress` on the request's own SSE stream before the
//! result, on every revision; closing that stream cancels the tool.

use crate::common;

use common::mcp::*;
use common::*;
use oxp_lambda::Config;
use serde_json::{Value, json};
use std::time::Duration;

/// The JSON messages of an SSE body, in order.
fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .filter(|data| !data.is_empty())
        .map(|data| serde_json::from_str(data).expect("each event is one JSON-RPC message"))
        .collect()
}

fn modern_meta(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    meta.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    meta
}

#[tokio::test]
async fn progress_notifications_with_the_senders_token_and_increasing_values_come_before_the_result()
 {
    let app = example_app();
    let handshake = [("mcp-protocol-version", "2025-11-25")];
    let modern = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "Demo_Sleep"),
    ];
    let cases: [(&[(&str, &str)], Value); 2] = [
        (&handshake, json!({"progressToken": "sleep-1"})),
        (&modern, modern_meta(json!({"progressToken": "sleep-1"}))),
    ];
    for (headers, meta) in cases {
        let call = rpc(
            7,
            "tools/call",
            json!({"name": "Demo_Sleep", "arguments": {"ms": 200}, "_meta": meta}),
        );
        let (status, answer_headers, text) = post_mcp(&app, &call.to_string(), headers).await;
        assert_eq!(status, 200, "{text}");
        assert!(
            answer_headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream"),
            "a streamed answer: {answer_headers:?}"
        );
        let messages = sse_messages(&text);
        let (result, notifications) = messages.split_last().expect("messages");
        assert_eq!(result["id"], 7, "the result is the last message: {text}");
        assert_eq!(result["result"]["isError"], false, "{result}");
        assert_eq!(
            notifications.len(),
            10,
            "one per tenth of the sleep: {text}"
        );
        let mut last = f64::MIN;
        for note in notifications {
            assert_eq!(note["method"], "notifications/progress", "{note}");
            assert!(note.get("id").is_none(), "a notification: {note}");
            let params = &note["params"];
            assert_eq!(params["progressToken"], "sleep-1");
            let progress = params["progress"].as_f64().unwrap();
            assert!(progress > last, "the value MUST increase: {text}");
            last = progress;
            assert_eq!(params["total"], 200.0);
            assert!(params["message"].as_str().unwrap().starts_with("slept "));
        }
    }
}

#[tokio::test]
async fn without_a_progress_token_the_answer_is_one_json_body() {
    let call = rpc(
        8,
        "tools/call",
        json!({"name": "Demo_Sleep", "arguments": {"ms": 50}}),
    );
    let (status, headers, text) = post_mcp(&example_app(), &call.to_string(), &[]).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["id"], 8);
}

#[tokio::test]
async fn closing_a_streamed_answer_cancels_the_tool_and_frees_its_slot() {
    // One execution slot: a call left running would hold it.
    let config = Config {
        max_concurrent_calls: 1,
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;
    let request = |body: String| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    // A 20 s sleep with progress: its first notification opens the stream; then the client
    // goes away.
    let sleep = rpc(
        1,
        "tools/call",
        json!({"name": "Demo_Sleep", "arguments": {"ms": 20_000}, "_meta": {"progressToken": 1}}),
    );
    let mut sleeping = tokio::net::TcpStream::connect(&addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut sleeping, request(sleep.to_string()).as_bytes())
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    tokio::time::timeout(Duration::from_secs(10), async {
        while !String::from_utf8_lossy(&seen).contains("notifications/progress") {
            let n = tokio::io::AsyncReadExt::read(&mut sleeping, &mut buffer)
                .await
                .unwrap();
            assert!(n > 0, "the stream ended early");
            seen.extend_from_slice(&buffer[..n]);
        }
    })
    .await
    .expect("the first progress notification arrives while the tool runs");
    drop(sleeping);
    // The next call gets the slot within a second.
    let add = rpc(
        2,
        "tools/call",
        json!({"name": "Calculator_Add", "arguments": {"a": 1, "b": 2}}),
    );
    the_slot_is_free_within_a_second(&addr, request(add.to_string())).await;
}

/// Reads an HTTP answer from `stream` until it holds the JSON-RPC result: when the first
/// progress notification arrived, and when the result did.
async fn arrivals(stream: &mut tokio::net::TcpStream) -> (Duration, Duration) {
    let started = std::time::Instant::now();
    let (mut seen, mut buffer) = (String::new(), [0u8; 4096]);
    let mut first = None;
    loop {
        let n = tokio::io::AsyncReadExt::read(stream, &mut buffer)
            .await
            .unwrap();
        assert!(n > 0, "the answer ended before its result: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        if first.is_none() && seen.contains("notifications/progress") {
            first = Some(started.elapsed());
        }
        if seen.contains("\"result\"") {
            let first = first.unwrap_or_else(|| panic!("no progress before the result: {seen}"));
            return (first, started.elapsed());
        }
    }
}

#[tokio::test]
async fn at_every_revision_progress_reaches_the_client_as_the_tool_reports_it_not_with_the_result()
{
    let (addr, _stop) = serve_on_loopback(test_config()).await;
    for revision in ["2025-11-25", "2026-07-28"] {
        let meta = if revision == "2026-07-28" {
            modern_meta(json!({"progressToken": "p"}))
        } else {
            json!({"progressToken": "p"})
        };
        let body = rpc(
            1,
            "tools/call",
            json!({"name": "Demo_Sleep", "arguments": {"ms": 2000}, "_meta": meta}),
        )
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {revision}\r\nMcp-Method: tools/call\r\nMcp-Name: Demo_Sleep\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
            .await
            .unwrap();
        let (first, result) = arrivals(&mut stream).await;
        assert!(
            result >= first + Duration::from_secs(1),
            "{revision}: the first progress at {first:?}, the result at {result:?}"
        );
    }
}
