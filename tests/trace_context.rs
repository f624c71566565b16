//! The caller's trace context follows the call: a W3C `traceparent` header (OXP, RAP, MCP) or
//! an MCP request's `_meta.traceparent` reaches the tool's context and the call line, and a
//! RAP result's callback carries it. A malformed one is dropped, never passed on.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::mcp::*;
use common::receiver::Receiver;
use common::*;
use oxp_lambda::{App, NoInput, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::time::Duration;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const OTHER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

fn app() -> App {
    let echo = Tool::builder("Trace.Echo", "1.0.0")
        .description("Answers the trace context it was called with.")
        .handler(|_: NoInput, ctx: ToolContext| async move {
            Ok::<_, ToolError>(json!({ "traceparent": ctx.traceparent }))
        });
    app_with(
        Registry::builder().tool(echo).build().unwrap(),
        test_config(),
    )
}

async fn oxp_with(app: &App, traceparent: &str) -> Value {
    let request = Request::post("/tools/call")
        .header("content-type", "application/json")
        .header("traceparent", traceparent)
        .body(Body::from(
            json!({"request": {"tool_id": "Trace.Echo", "input": {}}}).to_string(),
        ))
        .unwrap();
    send(app, request).await.json["result"]["value"].clone()
}

#[tokio::test]
async fn an_oxp_callers_traceparent_reaches_the_tool_and_a_malformed_one_does_not() {
    let app = app();
    assert_eq!(oxp_with(&app, PARENT).await["traceparent"], PARENT);
    assert_eq!(
        oxp_with(
            &app,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01;forged=1"
        )
        .await["traceparent"],
        Value::Null
    );
    assert_eq!(
        oxp_with(&app, "not a trace").await["traceparent"],
        Value::Null
    );
}

#[tokio::test]
async fn an_mcp_requests_meta_traceparent_wins_over_the_header() {
    let app = app();
    let params = json!({"name": "Trace_Echo", "arguments": {}, "_meta": {"traceparent": PARENT}});
    let message = rpc(7, "tools/call", params).to_string();
    let (status, _, text) = post_mcp(&app, &message, &[("traceparent", OTHER)]).await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(text_json(&answer["result"])["traceparent"], PARENT);
    // Without `_meta`, the header's.
    let message = rpc(
        8,
        "tools/call",
        json!({"name": "Trace_Echo", "arguments": {}}),
    )
    .to_string();
    let (_, _, text) = post_mcp(&app, &message, &[("traceparent", OTHER)]).await;
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(text_json(&answer["result"])["traceparent"], OTHER);
}

#[tokio::test]
async fn a_rap_invocations_traceparent_reaches_the_tool_and_its_results_callback() {
    let app = app();
    let receiver = Receiver::ok().await;
    let body = json!({"operation": "Trace_Echo", "arguments": {}, "id": "t1", "group_id": "g",
                      "callback_url": receiver.url});
    let request = Request::post("/invoke")
        .header("content-type", "application/json")
        .header("traceparent", PARENT)
        .body(Body::from(body.to_string()))
        .unwrap();
    assert_eq!(send(&app, request).await.status, 200);
    let hit = receiver.wait_for(1).await.remove(0);
    assert_eq!(
        hit.traceparent.as_deref(),
        Some(PARENT),
        "the callback joins the trace"
    );
    let text: Value = serde_json::from_str(hit.body["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["traceparent"], PARENT);
    assert_eq!(app.drain(Duration::from_secs(5)).await, 0);
}
