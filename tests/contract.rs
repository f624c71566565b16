//! The tool contract on every protocol it touches: one deadline per call (the slot wait
//! included) and cancellation that reaches the tool (a caller going away, RAP
//! `/cancel_tool_call`, MCP `notifications/cancelled`). Content, annotations and bounds are in
//! `tests/content.rs`.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::example_tools;
use common::mcp::{post_mcp, rpc, text_json};

/// A POST to `/mcp`: its status and its body as JSON (`null` when empty).
async fn mcp(app: &App, message: Value) -> (u16, Value) {
    let (status, _, text) = post_mcp(app, &message.to_string(), &[]).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}
use common::receiver::Receiver;
use common::*;
use http_body_util::BodyExt;
use oxp_lambda::{Config, Registry, Tool};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// The example tools with one execution slot and a 1.5 s limit per call.
fn one_slot(edit: impl FnOnce(&mut Config)) -> App {
    let mut config = test_config_with(&[("OXP_RAP_TOOL_TIMEOUT_MS", "1500")]);
    config.max_concurrent_calls = 1;
    config.tool_timeout = Some(Duration::from_millis(1500));
    edit(&mut config);
    app_with(example_tools::registry().unwrap(), config)
}

fn sleep_call(call_id: &str, ms: u64) -> Value {
    json!({"request": {"tool_id": "Demo.Sleep", "call_id": call_id, "input": {"ms": ms}}})
}

/// Runs `second` 100 ms after `first` started, timing the second from when it was sent.
async fn overlapping<A, B>(first: A, second: B) -> (A::Output, B::Output, Duration)
where
    A: std::future::Future,
    B: std::future::Future,
{
    let later = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let sent = Instant::now();
        let answer = second.await;
        (answer, sent.elapsed())
    };
    let (a, (b, took)) = tokio::join!(first, later);
    (a, b, took)
}

/// "Within its 1.5 s": not before the deadline, and not much after it.
fn within_its_deadline(took: Duration) {
    assert!(
        took >= Duration::from_millis(1300) && took < Duration::from_millis(2300),
        "answered after {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oxp_a_call_that_waited_for_the_slot_still_answers_within_its_deadline() {
    let app = one_slot(|_| {});
    let (first, second, took) = overlapping(
        call(&app, sleep_call("first", 1000)),
        call(&app, sleep_call("second", 1000)),
    )
    .await;
    assert_eq!(first.json["result"]["value"]["cancelled"], false);
    let result = &second.json["result"];
    assert_eq!(result["success"], false, "{}", second.text);
    assert_eq!(
        result["error"]["message"],
        "The tool did not finish in time"
    );
    assert_eq!(result["error"]["can_retry"], true);
    within_its_deadline(took);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_a_call_that_waited_for_the_slot_still_answers_within_its_deadline() {
    let app = one_slot(|_| {});
    let sleep = |id| {
        rpc(
            id,
            "tools/call",
            json!({"name": "Demo_Sleep", "arguments": {"ms": 1000}}),
        )
    };
    let (first, second, took) = overlapping(mcp(&app, sleep(1)), mcp(&app, sleep(2))).await;
    assert_eq!(first.1["result"]["structuredContent"]["cancelled"], false);
    let result = &second.1["result"];
    assert_eq!(result["isError"], true, "{}", second.1);
    assert_eq!(
        text_json(result)["message"],
        "The tool did not finish in time"
    );
    within_its_deadline(took);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rap_a_call_that_waited_for_the_slot_still_answers_within_its_deadline() {
    let app = one_slot(|_| {});
    let receiver = Receiver::ok().await;
    let invoke = |id: &str| {
        json!({"operation": "Demo_Sleep", "arguments": {"ms": 1000}, "id": id,
               "callback_url": receiver.url, "group_id": "t1"})
    };
    let sent = Instant::now();
    assert_eq!(
        post(&app, "/invoke", invoke("a").to_string()).await.status,
        200
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        post(&app, "/invoke", invoke("b").to_string()).await.status,
        200
    );
    let results = receiver.wait_kind("tool_result", 2).await;
    let second = results.into_iter().find(|m| m["id"] == "b").unwrap();
    let error = rap_error(second["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["kind"], "timeout", "{second}");
    within_its_deadline(sent.elapsed() - Duration::from_millis(100));
}

#[tokio::test]
async fn the_tool_always_sees_its_deadline_locally_too() {
    let tool = Tool::builder("T.Deadline", "1.0.0").raw_handler(
        json!({"type": "object"}),
        Some(json!({"type": "number"})),
        |_, ctx| async move { Ok(json!(ctx.remaining().map(|r| r.as_millis() as u64))) },
    );
    let app = app_with(
        Registry::builder().tool(tool).build().unwrap(),
        test_config(),
    );
    let reply = call(&app, json!({"request": {"tool_id": "T.Deadline"}})).await;
    let left = reply.json["result"]["value"].as_u64().expect("a deadline");
    assert!(
        left > 25_000 && left <= 30_000,
        "{left} ms left of the 30 s default"
    );
}

#[tokio::test]
async fn a_tool_limit_shorter_than_the_servers_sets_the_deadline() {
    let tool = Tool::builder("T.Slow", "1.0.0")
        .timeout(Duration::from_millis(100))
        .raw_handler(json!({"type": "object"}), None, |_, _| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(Value::Null)
        });
    let app = app_with(
        Registry::builder().tool(tool).build().unwrap(),
        test_config(),
    );
    let sent = Instant::now();
    let reply = call(&app, json!({"request": {"tool_id": "T.Slow"}})).await;
    assert_eq!(
        reply.json["result"]["error"]["message"],
        "The tool did not finish in time"
    );
    assert!(sent.elapsed() < Duration::from_secs(2));
}

// ---- Cancellation -------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_disconnects_frees_its_call_id_at_once() {
    use tokio::io::AsyncWriteExt;
    let app = example_app();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(app.serve(listener, std::future::pending()));
    let body = sleep_call("cid-1", 30_000).to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "POST /tools/call HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(stream);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Still claimed, the same id with other input would be refused as reused (400), and with
    // the same input told "still running": freed, it runs.
    let again = sleep_call("cid-1", 10).to_string();
    let (status, answer) = http_raw(&addr, "POST", "/tools/call", &again).await;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["result"]["success"], true, "{answer}");
    assert_eq!(answer["result"]["value"]["cancelled"], false);
}

/// A tool that ignores its cancellation: it is dropped after the grace period.
fn stubborn() -> Tool {
    Tool::builder("T.Stubborn", "1.0.0").raw_handler(
        json!({"type": "object"}),
        None,
        |_, _| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(Value::Null)
        },
    )
}

async fn cancel(app: &App, body: &str) -> (u16, Vec<u8>) {
    let request = Request::post("/cancel_tool_call")
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, bytes.to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rap_a_cancellation_ends_a_running_sleep_and_its_result_follows() {
    let app = example_app();
    let receiver = Receiver::ok().await;
    let invocation = json!({"operation": "Demo_Sleep", "arguments": {"ms": 30000}, "id": "c1",
                            "callback_url": receiver.url, "group_id": "t1"});
    assert_eq!(
        post(&app, "/invoke", invocation.to_string()).await.status,
        200
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Another thread's call of the same id is not this one.
    let (status, _) = cancel(&app, r#"{"thread_id": "t2", "tool_call_id": "c1"}"#).await;
    assert_eq!(status, 200);
    let sent = Instant::now();
    let (status, body) = cancel(&app, r#"{"thread_id": "t1", "tool_call_id": "c1"}"#).await;
    assert_eq!(status, 200);
    assert!(body.is_empty(), "the answer says nothing about the call");
    let result = receiver.result().await;
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    let value: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(value["cancelled"], true, "{result}");
    assert!(value["slept_ms"].as_u64().unwrap() < 5000);
}

#[tokio::test]
async fn rap_cancel_tool_call_answers_200_whatever_it_names_or_holds() {
    let app = example_app();
    for body in [
        r#"{"thread_id": "t9", "tool_call_id": "never-seen"}"#,
        r#"{"thread_id": 1}"#,
        "[]",
        "not json",
    ] {
        assert_eq!(cancel(&app, body).await.0, 200, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rap_a_tool_that_ignores_its_cancellation_is_stopped_after_the_grace_period() {
    let app = app_with(
        Registry::builder().tool(stubborn()).build().unwrap(),
        test_config(),
    );
    let receiver = Receiver::ok().await;
    let invocation = json!({"operation": "T_Stubborn", "arguments": {}, "id": "c2",
                            "callback_url": receiver.url, "group_id": "t1"});
    assert_eq!(
        post(&app, "/invoke", invocation.to_string()).await.status,
        200
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = Instant::now();
    cancel(&app, r#"{"thread_id": "t1", "tool_call_id": "c2"}"#).await;
    let result = receiver.result().await;
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    let error = rap_error(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["kind"], "cancelled", "{result}");
    assert_eq!(error["error"]["can_retry"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_notifications_cancelled_reaches_the_request_in_flight() {
    let app = example_app();
    let running = mcp(
        &app,
        rpc(
            7,
            "tools/call",
            json!({"name": "Demo_Sleep", "arguments": {"ms": 30000}}),
        ),
    );
    let cancelling = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                  "params": {"requestId": 7, "reason": "user stopped"}});
        let (status, _) = mcp(&app, notification).await;
        (status, Instant::now())
    };
    let ((_, answer), (status, sent)) = tokio::join!(running, cancelling);
    assert_eq!(status, 202);
    assert!(sent.elapsed() < Duration::from_secs(2));
    assert_eq!(
        answer["result"]["structuredContent"]["cancelled"], true,
        "{answer}"
    );
}

#[tokio::test]
async fn agentcore_a_call_answers_at_its_deadline() {
    // The gateway invokes the function directly: the deadline is the only stop (Lambda gives
    // a direct invocation no cancellation signal).
    let app = one_slot(|_| {});
    let context = json!({"custom": {"bedrockAgentCoreToolName": "t___Demo_Sleep"}}).to_string();
    let sent = Instant::now();
    let result = app
        .handle_agentcore(br#"{"ms": 5000}"#, Some(context.as_bytes()))
        .await;
    assert_eq!(result["isError"], true, "{result}");
    let error: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["message"], "The tool did not finish in time");
    assert_eq!(error["can_retry"], true);
    within_its_deadline(sent.elapsed());
}
