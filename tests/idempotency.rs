//! Idempotent calls: a repeated `call_id` runs its tool once and answers the stored outcome, on
//! every store (in memory, the embedded state store, DynamoDB on moto's emulator on loopback,
//! started by `scripts/test`); deadlines, isolation and concurrency are in `reliability.rs`.

use crate::common;

use common::aws::{moto_url, sdk_config};
use common::*;
use oxp_lambda::config::IdempotencyMode;
use oxp_lambda::{Config, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

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

/// An app of `T.Count` (idempotent, answering at once) over `store` with `config`, and its runs.
fn counted_app(store: Store, config: Config) -> (App, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = counter_tool("T.Count", runs.clone(), Duration::ZERO, 0, true);
    (app_with_store(vec![tool], store, config), runs)
}

/// The idempotency behaviour every store must have, checked through the HTTP adapter.
async fn idempotency_contract(store: Store) {
    let (app, runs) = counted_app(store.clone(), Config::default());
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
    let mut config = Config::default();
    config.idempotency.mode = oxp_lambda::config::IdempotencyMode::Off;
    let (app, runs) = counted_app(Store::Memory, config);
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
    let (app, runs) = counted_app(Store::Dynamo(Box::new(sdk), "t".into()), Config::default());
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
