//! Idempotent calls, deadlines, isolation, bounded concurrency and graceful shutdown.
//! The DynamoDB store runs against moto's emulator on loopback (started by `scripts/test`).

use crate::common;

use common::aws::{moto_url, sdk_config};
use common::*;
use oxp_lambda::config::IdempotencyMode;
use oxp_lambda::{Config, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts its runs in `runs`, sleeps `delay`, fails retryably for the first `fail_first` runs,
/// and answers `n * 10 + run number`.
fn counter_tool(
    name: &str,
    runs: Arc<AtomicUsize>,
    delay: Duration,
    fail_first: usize,
    idempotent: bool,
) -> Tool {
    let builder = Tool::builder(name, "1.0.0");
    let builder = if idempotent {
        builder
    } else {
        builder.not_idempotent()
    };
    builder.raw_handler(
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        Some(json!({"type": "integer"})),
        move |input: Value, _ctx: ToolContext| {
            let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                tokio::time::sleep(delay).await;
                if run <= fail_first {
                    return Err(ToolError::new("flaky").retryable());
                }
                Ok(json!(input["n"].as_i64().unwrap_or(0) * 10 + run as i64))
            }
        },
    )
}

/// Where idempotency records live in a test.
#[derive(Clone)]
enum Store {
    /// The in-memory store (the default).
    Memory,
    /// Records of the state store: the embedded database, in memory (`None`) or in a file
    /// (a restart: `local_state::a_stored_outcome_answers_a_repeat_after_the_server_restarts`).
    State(Option<std::path::PathBuf>),
    /// A DynamoDB table, reached with this AWS configuration.
    Dynamo(Box<aws_config::SdkConfig>, String),
}

fn app_with_store(tools: Vec<Tool>, store: Store, mut config: Config) -> App {
    let registry = Registry::builder().tools(tools).build().unwrap();
    let builder = App::builder(registry);
    let builder = match store {
        Store::Memory => builder,
        Store::State(path) => {
            config.idempotency.mode = IdempotencyMode::State;
            config.state = oxp_lambda::config::StateConfig::Embedded {
                path,
                cache_bytes: oxp_lambda::config::DEFAULT_CACHE_BYTES,
            };
            builder
        }
        Store::Dynamo(sdk, table) => {
            config.idempotency.mode = IdempotencyMode::DynamoDb;
            config.idempotency.table = Some(table);
            builder.aws_config(*sdk)
        }
    };
    build(builder.config(config))
}

fn body(tool: &str, call_id: Option<&str>, n: i64) -> Value {
    let mut request = json!({"tool_id": tool, "input": {"n": n}});
    if let Some(id) = call_id {
        request["call_id"] = json!(id);
    }
    json!({"request": request})
}

/// The idempotency behaviour every store must have, checked through the HTTP adapter.
async fn idempotency_contract(store: Store) {
    let runs = Arc::new(AtomicUsize::new(0));
    let app = app_with_store(
        vec![counter_tool(
            "T.Count",
            runs.clone(),
            Duration::ZERO,
            0,
            true,
        )],
        store.clone(),
        Config::default(),
    );
    let key = format!("call-{}", uuid::Uuid::new_v4());
    let first = call(&app, body("T.Count", Some(&key), 1)).await;
    assert_eq!(first.json["result"]["value"], 11);
    let repeat = call(&app, body("T.Count", Some(&key), 1)).await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "a repeated call_id does not run the tool again"
    );
    assert_eq!(
        repeat.json["result"]["value"], 11,
        "the stored response is returned"
    );
    assert_eq!(repeat.json["result"]["call_id"], key.as_str());

    let reused = call(&app, body("T.Count", Some(&key), 2)).await;
    assert_eq!(reused.status, 400, "same call_id, different input");
    assert_eq!(
        reused.json["message"],
        "This call ID was already used for a different call"
    );

    // Without a call_id every call runs.
    call(&app, body("T.Count", None, 1)).await;
    call(&app, body("T.Count", None, 1)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 3);

    // Retryable failures are not stored: the retry runs the tool again.
    let flaky_runs = Arc::new(AtomicUsize::new(0));
    let app = app_with_store(
        vec![counter_tool(
            "T.Flaky",
            flaky_runs.clone(),
            Duration::ZERO,
            1,
            true,
        )],
        store,
        Config::default(),
    );
    let key = format!("flaky-{}", uuid::Uuid::new_v4());
    let failed = call(&app, body("T.Flaky", Some(&key), 0)).await;
    assert_eq!(failed.json["result"]["error"]["can_retry"], true);
    let retried = call(&app, body("T.Flaky", Some(&key), 0)).await;
    assert_eq!(retried.json["result"]["success"], true);
    assert_eq!(flaky_runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_memory_store_makes_calls_idempotent() {
    idempotency_contract(Store::Memory).await;
}

#[tokio::test]
async fn the_state_store_makes_calls_idempotent() {
    idempotency_contract(Store::State(None)).await;
}

#[tokio::test]
async fn concurrent_duplicates_execute_once_with_the_state_store() {
    concurrent_duplicates_run_once(Store::State(None)).await;
}

#[tokio::test]
async fn tools_can_opt_out_of_idempotency() {
    let runs = Arc::new(AtomicUsize::new(0));
    let app = app_with_store(
        vec![counter_tool(
            "T.Fresh",
            runs.clone(),
            Duration::ZERO,
            0,
            false,
        )],
        Store::Memory,
        Config::default(),
    );
    let a = call(&app, body("T.Fresh", Some("same"), 1)).await;
    let b = call(&app, body("T.Fresh", Some("same"), 1)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_ne!(a.json["result"]["value"], b.json["result"]["value"]);
    // The example clock opts out too.
    let clock = example_app();
    for _ in 0..2 {
        let reply = call(
            &clock,
            json!({"request": {"tool_id": "System.GetTimestamp", "call_id": "clock"}}),
        )
        .await;
        assert_eq!(reply.json["result"]["success"], true);
    }
}

#[tokio::test]
async fn idempotency_can_be_turned_off() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut config = Config::default();
    config.idempotency.mode = oxp_lambda::config::IdempotencyMode::Off;
    let app = app_with_store(
        vec![counter_tool(
            "T.Count",
            runs.clone(),
            Duration::ZERO,
            0,
            true,
        )],
        Store::Memory,
        config,
    );
    call(&app, body("T.Count", Some("k"), 1)).await;
    call(&app, body("T.Count", Some("k"), 1)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// N duplicates at once: the tool runs exactly once; the others replay it or are told to retry.
async fn concurrent_duplicates_run_once(store: Store) {
    let runs = Arc::new(AtomicUsize::new(0));
    let app = app_with_store(
        vec![counter_tool(
            "T.Slow",
            runs.clone(),
            Duration::from_millis(200),
            0,
            true,
        )],
        store,
        Config::default(),
    );
    let key = format!("dup-{}", uuid::Uuid::new_v4());
    let calls = (0..16).map(|_| call(&app, body("T.Slow", Some(&key), 7)));
    let replies = futures_util::future::join_all(calls).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "exactly one execution");
    let mut in_progress = 0;
    for reply in &replies {
        assert_eq!(reply.status, 200);
        let result = &reply.json["result"];
        if result["success"] == true {
            assert_eq!(result["value"], 71);
        } else {
            assert_eq!(result["error"]["can_retry"], true);
            assert_eq!(result["error"]["retry_after_ms"], 1000);
            in_progress += 1;
        }
    }
    assert!(
        in_progress >= 1,
        "duplicates arriving during the run are told to retry"
    );
    // Once finished, a retry gets the stored answer.
    let after = call(&app, body("T.Slow", Some(&key), 7)).await;
    assert_eq!(after.json["result"]["value"], 71);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn concurrent_duplicates_execute_once_with_the_memory_store() {
    concurrent_duplicates_run_once(Store::Memory).await;
}

// ---- DynamoDB on moto -----------------------------------------------------------------------

async fn dynamo() -> Store {
    let (_, table) = common::aws::state_table().await;
    Store::Dynamo(Box::new(sdk_config(&moto_url()).await), table)
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn the_dynamodb_store_makes_calls_idempotent() {
    idempotency_contract(dynamo().await).await;
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn concurrent_duplicates_execute_once_with_the_dynamodb_store() {
    concurrent_duplicates_run_once(dynamo().await).await;
}

#[tokio::test]
async fn an_unreachable_store_is_a_retryable_failure_and_the_tool_does_not_run() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sdk = sdk_config(&format!("http://127.0.0.1:{port}")).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let app = app_with_store(
        vec![counter_tool(
            "T.Count",
            runs.clone(),
            Duration::ZERO,
            0,
            true,
        )],
        Store::Dynamo(Box::new(sdk), "t".into()),
        Config::default(),
    );
    let reply = call(&app, body("T.Count", Some("k"), 1)).await;
    // The call was well-formed and may pass unchanged later: the same answer as "busy".
    assert_eq!(reply.status, 200);
    let result = &reply.json["result"];
    assert_eq!(result["success"], false);
    assert_eq!(result["call_id"], "k");
    assert_eq!(result["error"]["can_retry"], true);
    assert_eq!(result["error"]["retry_after_ms"], 1000);
    assert_eq!(
        result["error"]["message"],
        "The tool server is temporarily unavailable; try again later"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

// ---- Deadlines, isolation, concurrency, shutdown ---------------------------------------------

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
    let app = app_with_store(vec![slow], Store::Memory, config);
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
    let app = app_with_store(tools, Store::Memory, Config::default());
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
    let app = app_with_store(vec![tool], Store::Memory, config);
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
    let app = app_with_store(vec![blocker], Store::Memory, config);
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
    let slow = Tool::builder("T.Slow", "1.0.0").handler(|_: oxp_lambda::NoInput, _| async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        Ok::<_, ToolError>(42)
    });
    let app = app_with_store(vec![slow], Store::Memory, Config::default());
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
