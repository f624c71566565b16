//! JSON-RPC batches at 2025-03-26, whose base protocol has implementations "MUST support
//! receiving JSON-RPC batches" (2025-06-18 removed them): each message answered as if it came
//! alone, the answers together; `initialize` never batched; later revisions refuse them.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::mcp::*;
use common::*;
use serde_json::{Value, json};

/// The 2025-03-26 client's headers: it sends no `MCP-Protocol-Version` (2025-06-18 brought
/// it), and a server assumes 2025-03-26 without one; or it names it.
const REVISION_2025_03_26: [&[(&str, &str)]; 2] = [&[], &[("mcp-protocol-version", "2025-03-26")]];

fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

#[tokio::test]
async fn a_batch_of_requests_and_notifications_gets_one_response_per_request_in_a_json_array() {
    let app = example_app();
    let batch = json!([
        rpc(1, "tools/list", json!({})),
        notification("notifications/initialized"),
        rpc(2, "tools/call", json!({"name": "Calculator_Add", "arguments": {"a": 1, "b": 2}})),
        {"jsonrpc": "2.0", "id": "p", "method": "ping"},
        rpc(3, "tools/call", json!({"name": "No_Such_Tool", "arguments": {}})),
    ]);
    for headers in REVISION_2025_03_26 {
        let (status, answered, text) = post_mcp(&app, &batch.to_string(), headers).await;
        assert_eq!(status, 200, "{text}");
        assert_eq!(answered["content-type"], "application/json");
        let answers: Vec<Value> = serde_json::from_str(&text).unwrap();
        let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
        assert_eq!(
            ids,
            [&json!(1), &json!(2), &json!("p"), &json!(3)],
            "{text}"
        );
        assert!(answers[0]["result"]["tools"].as_array().unwrap().len() > 1);
        assert_eq!(answers[1]["result"]["content"][0]["text"], "3", "{text}");
        assert_eq!(answers[2]["result"], json!({}));
        assert_eq!(answers[3]["error"]["code"], -32602, "{text}");
    }
}

#[tokio::test]
async fn a_batch_of_notifications_alone_is_202_with_no_body() {
    let app = example_app();
    let batch = json!([notification("notifications/initialized")]).to_string();
    let (status, _, text) = post_mcp(&app, &batch, &[]).await;
    assert_eq!((status, text.as_str()), (202, ""));
}

#[tokio::test]
async fn initialize_is_never_part_of_a_batch_and_the_rest_of_the_batch_is_answered() {
    let app = example_app();
    let initialize = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-03-26", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    let batch = json!([initialize, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]);
    let (status, _, text) = post_mcp(&app, &batch.to_string(), &[]).await;
    assert_eq!(status, 200, "{text}");
    let answers: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[0]["error"]["code"], -32600, "{text}");
    assert_eq!(answers[1], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
}

#[tokio::test]
async fn what_is_no_message_in_a_batch_is_an_invalid_request_each_as_json_rpc_answers_1_2_3() {
    // JSON-RPC's own example: `[1,2,3]` is three Invalid Requests, answered in an array.
    let app = example_app();
    let (status, _, text) = post_mcp(&app, "[1, 2, [3]]", &[]).await;
    assert_eq!(status, 200, "{text}");
    let answers: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(answers.len(), 3, "{text}");
    for answer in answers {
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
    }
}

#[tokio::test]
async fn a_batch_nesting_half_a_million_levels_deep_is_answered_and_crashes_nothing() {
    let app = example_app();
    let deep = "[".repeat(500_000) + &"]".repeat(500_000);
    let (status, _, text) = post_mcp(&app, &deep, &[]).await;
    assert_eq!(status, 200, "{}", &text[..200.min(text.len())]);
    let answers: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["error"]["code"], -32600);
    // Unclosed: no JSON, answered as any body that is none.
    let (status, _, _) = post_mcp(&app, &"[".repeat(500_000), &[]).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn an_empty_or_oversized_batch_and_a_later_revisions_batch_or_array_are_one_invalid_request()
{
    let app = example_app();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let too_many = Value::Array(vec![ping.clone(); 65]).to_string();
    let one = json!([ping]).to_string();
    // A call's members as an array (no message, nor a batch of any), which serde would read as
    // the call's struct.
    let fields =
        json!(["2.0", 1, "tools/call", {"name": "Calculator_Add", "arguments": {"a": 1, "b": 2}}]);
    let fields = fields.to_string();
    let cases: [(&str, &[(&str, &str)]); 6] = [
        ("[]", &[]),
        (&too_many, &[]),
        (&one, &[("mcp-protocol-version", "2025-06-18")]),
        (&one, &[("mcp-protocol-version", "2025-11-25")]),
        (&fields, &[("mcp-protocol-version", "2025-06-18")]),
        (&fields, &[("mcp-protocol-version", "2025-11-25")]),
    ];
    for (body, headers) in cases {
        let (status, _, text) = post_mcp(&app, body, headers).await;
        assert_eq!(status, 400, "{headers:?}: {text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(answer["error"]["code"], -32600, "{text}");
        assert_eq!(answer["id"], Value::Null);
    }
}

#[tokio::test]
async fn a_batch_whose_call_reports_progress_is_one_event_stream_of_every_message() {
    let app = example_app();
    let sleep = rpc(
        7,
        "tools/call",
        json!({"name": "Demo_Sleep", "arguments": {"ms": 600},
               "_meta": {"progressToken": "t1"}}),
    );
    let batch = json!([sleep, {"jsonrpc": "2.0", "id": "p", "method": "ping"}]);
    let (status, answered, text) = post_mcp(&app, &batch.to_string(), &[]).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(answered["content-type"], "text/event-stream");
    let messages: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect();
    let progress = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert!(progress >= 1, "{text}");
    let responses: Vec<&Value> = messages.iter().filter(|m| m.get("id").is_some()).collect();
    assert_eq!(responses.len(), 2, "one response per request: {text}");
    let call = responses
        .iter()
        .find(|m| m["id"] == 7)
        .expect("the call's response");
    assert_eq!(call["result"]["isError"], false, "{call}");
    assert!(responses.iter().any(|m| m["id"] == "p"));
}

#[tokio::test]
async fn a_refusal_of_the_whole_request_is_one_answer_as_for_a_single_message() {
    // Its headers are the batch's: every message would be refused alike (rmcp's 406 for an
    // `Accept` without event streams).
    let app = example_app();
    let batch = json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                       {"jsonrpc": "2.0", "id": 2, "method": "ping"}]);
    let request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(Body::from(batch.to_string()))
        .unwrap();
    let reply = send(&app, request).await;
    assert_eq!(reply.status, 406, "{}", reply.text);
    assert_eq!(reply.json["error"]["code"], -32600, "{}", reply.text);
}
