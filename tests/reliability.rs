//! Deadlines, isolation, bounded concurrency and graceful shutdown (idempotent calls are in
//! `idempotency.rs`).

use crate::common;

use common::*;
use oxp_lambda::{Config, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// An app serving `tools` with `config`.
fn app_of(tools: Vec<Tool>, config: Config) -> App {
    app_with(Registry::builder().tools(tools).build().unwrap(), config)
}

/// Sends `body` through the Lambda adapter with an invocation deadline `after` from now.
async fn lambda_call(app: &App, body: Value, after: Duration) -> Value {
    use lambda_http::request::LambdaRequest;
    use lambda_http::{Adapter, Context, LambdaEvent, Service};
    let mut event: Value = serde_json::from_str(
        &std::fs::read_to_string("events/apigw-http-call-success-stage.json").unwrap(),
    )
    .unwrap();
    event["body"] = json!(body.to_string());
    let request: LambdaRequest = serde_json::from_value(event).unwrap();
    let mut context = Context::default();
    let deadline = std::time::SystemTime::now() + after;
    context.deadline = deadline
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let response = Adapter::from(app.clone())
        .call(LambdaEvent::new(request, context))
        .await
        .unwrap();
    let response = serde_json::to_value(response).unwrap();
    assert_eq!(response["statusCode"], 200);
    serde_json::from_str(response["body"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn in_lambda_a_tool_is_cancelled_before_the_invocation_deadline() {
    let slow = Tool::builder("T.Slow", "1.0.0").handler(
        |_: oxp_lambda::NoInput, ctx: ToolContext| async move {
            assert!(ctx.deadline.is_some(), "the tool sees the deadline");
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<(), ToolError>(())
        },
    );
    let config = Config {
        deadline_margin: Duration::from_millis(200),
        ..Config::default()
    };
    let app = app_of(vec![slow], config);
    let start = Instant::now();
    let body = lambda_call(
        &app,
        json!({"request": {"tool_id": "T.Slow"}}),
        Duration::from_millis(700),
    )
    .await;
    let elapsed = start.elapsed();
    assert_eq!(body["result"]["success"], false);
    assert_eq!(body["result"]["error"]["can_retry"], true);
    assert!(
        elapsed < Duration::from_millis(700),
        "answered before the deadline: {elapsed:?}"
    );
}

#[tokio::test]
async fn a_slow_or_panicking_tool_does_not_block_other_calls() {
    let slow = Tool::builder("T.Slow", "1.0.0").handler(|_: oxp_lambda::NoInput, _| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok::<(), ToolError>(())
    });
    let panics = Tool::builder("T.Panic", "1.0.0").handler(|_: oxp_lambda::NoInput, _| async {
        panic!("boom");
        #[allow(unreachable_code)]
        Ok::<(), ToolError>(())
    });
    let mut tools = vec![slow, panics];
    tools.extend(common::example_tools::tools());
    let app = app_of(tools, Config::default());
    let slow_call = tokio::spawn({
        let app = app.clone();
        async move { call(&app, json!({"request": {"tool_id": "T.Slow"}})).await }
    });
    let start = Instant::now();
    for _ in 0..3 {
        call(&app, json!({"request": {"tool_id": "T.Panic"}})).await;
        let reply = call(
            &app,
            json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 1}}}),
        )
        .await;
        assert_eq!(reply.json["result"]["value"], 2);
    }
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "other calls did not wait for the slow one"
    );
    slow_call.abort();
}

#[tokio::test]
async fn concurrent_executions_are_bounded() {
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (a, p) = (active.clone(), peak.clone());
    let tool = Tool::builder("T.Busy", "1.0.0").raw_handler(
        json!({"type": "object"}),
        None,
        move |_, _| {
            let (a, p) = (a.clone(), p.clone());
            async move {
                let now = a.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(50)).await;
                a.fetch_sub(1, Ordering::SeqCst);
                Ok(Value::Null)
            }
        },
    );
    let config = Config {
        max_concurrent_calls: 2,
        ..Config::default()
    };
    let app = app_of(vec![tool], config);
    let calls = (0..8).map(|_| call(&app, json!({"request": {"tool_id": "T.Busy"}})));
    let replies = futures_util::future::join_all(calls).await;
    assert!(replies.iter().all(|r| r.json["result"]["success"] == true));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        2,
        "never more than OXP_MAX_CONCURRENT_CALLS at once"
    );
}

#[tokio::test]
async fn a_call_that_cannot_get_a_slot_in_time_is_told_to_retry() {
    let release = Arc::new(tokio::sync::Notify::new());
    let r = release.clone();
    let blocker = Tool::builder("T.Block", "1.0.0").raw_handler(
        json!({"type": "object"}),
        None,
        move |_, _| {
            let r = r.clone();
            async move {
                r.notified().await;
                Ok(Value::Null)
            }
        },
    );
    let config = Config {
        max_concurrent_calls: 1,
        tool_timeout: Some(Duration::from_millis(300)),
        deadline_margin: Duration::ZERO,
        ..Config::default()
    };
    let app = app_of(vec![blocker], config);
    let first = tokio::spawn({
        let app = app.clone();
        async move { call(&app, json!({"request": {"tool_id": "T.Block"}})).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The second call comes through Lambda with a deadline that ends while the first still holds
    // the only slot (the first holds it up to its 300 ms timeout).
    let second = lambda_call(
        &app,
        json!({"request": {"tool_id": "T.Block"}}),
        Duration::from_millis(150),
    )
    .await;
    assert_eq!(second["result"]["success"], false);
    assert_eq!(
        second["result"]["error"]["message"],
        "The tool server is busy; try again shortly"
    );
    assert_eq!(second["result"]["error"]["can_retry"], true);
    release.notify_waiters();
    first.await.unwrap();
}

#[tokio::test]
async fn shutdown_lets_in_flight_calls_finish() {
    // With the default drain period, and with none: a call a moment from its answer gets a
    // second at least.
    for drain in ["30", "0"] {
        let config = Config::from_vars(false, [("OXP_WORK_DRAIN_SECS", drain)]).unwrap();
        in_flight_calls_finish(config).await;
    }
}

async fn in_flight_calls_finish(config: Config) {
    let slow = Tool::builder("T.Slow", "1.0.0").handler(|_: oxp_lambda::NoInput, _| async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        Ok::<_, ToolError>(42)
    });
    let app = app_of(vec![slow], config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.serve(listener, async move {
        let _ = stopped.await;
    }));
    let in_flight = tokio::spawn({
        let addr = addr.clone();
        async move {
            http_raw(
                &addr,
                "POST",
                "/tools/call",
                r#"{"request":{"tool_id":"T.Slow"}}"#,
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.send(()).unwrap();
    let (status, body) = in_flight.await.unwrap();
    assert_eq!(status, 200);
    assert!(body.contains(r#""value":42"#), "{body}");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(&addr).await.is_err(),
        "the listener is closed"
    );
}
