//! The invoker's contract, tested in the crate that owns it, with no protocol around it: one
//! deadline per call (the slot wait included), one pool of execution slots, idempotency on the
//! call id (replay, conflict, in progress, what is never stored), cancellation with its grace
//! period, panic isolation, output checks and the requirements checked before the tool runs.
//! Each test reads like the rule it checks; the store is the real in-memory one.

use oxp_lambda_core::idempotency::Idempotency;
use oxp_lambda_core::idempotency::memory::MemoryStore;
use oxp_lambda_core::invoke::{CANCEL_GRACE, Call, Disposition, Invoker, Outcome, Target};
use oxp_lambda_core::principal::Principal;
use oxp_lambda_core::refusal::{ErrorClass, Missing, Rejection};
use oxp_lambda_core::secrets::Secrets;
use oxp_lambda_core::{Cancellation, Registry, TimeLimit, Tool, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Deserialize, JsonSchema)]
struct Sleep {
    ms: u64,
}

/// How many times a tool of this registry ran.
#[derive(Clone, Default)]
struct Runs(Arc<AtomicUsize>);

impl Runs {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Tools that exercise the contract: `Test.Sleep` (stops early when cancelled), `Test.Stubborn`
/// (ignores its cancellation), `Test.Count` (counts its runs), `Test.Flaky` (a retryable
/// failure), `Test.Panic`, `Test.Liar` (an output its schema refuses), `Test.Secret` (needs a
/// secret) and `Test.Deadline` (answers the time it was given).
fn registry(runs: &Runs) -> Registry {
    let counted = runs.clone();
    let flaky = runs.clone();
    Registry::builder()
        .tool(Tool::builder("Test.Sleep", "1.0.0").handler(
            |input: Sleep, ctx: ToolContext| async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(input.ms)) => Ok("slept"),
                    () = ctx.cancelled() => Ok("stopped"),
                }
            },
        ))
        .tool(Tool::builder("Test.Stubborn", "1.0.0").handler(
            |input: Sleep, _ctx: ToolContext| async move {
                tokio::time::sleep(Duration::from_millis(input.ms)).await;
                Ok("finished")
            },
        ))
        .tool(Tool::builder("Test.Count", "1.0.0").raw_handler(
            json!({"type": "object"}),
            Some(json!({"type": "integer"})),
            move |_input, _ctx| {
                let runs = counted.clone();
                async move { Ok(json!(runs.0.fetch_add(1, Ordering::SeqCst) + 1)) }
            },
        ))
        .tool(Tool::builder("Test.Flaky", "1.0.0").raw_handler(
            json!({"type": "object"}),
            None,
            move |_input, _ctx| {
                let runs = flaky.clone();
                async move {
                    runs.0.fetch_add(1, Ordering::SeqCst);
                    Err::<Value, _>(ToolError::new("try again").retryable())
                }
            },
        ))
        .tool(Tool::builder("Test.Panic", "1.0.0").raw_handler(
            json!({"type": "object"}),
            None,
            |_input, _ctx| async move {
                if true {
                    panic!("the secret is hunter2");
                }
                Ok(Value::Null)
            },
        ))
        .tool(Tool::builder("Test.Liar", "1.0.0").raw_handler(
            json!({"type": "object"}),
            Some(json!({"type": "object", "properties": {"total": {"type": "number"}}})),
            |_input, _ctx| async move { Ok(json!({"total": "not a number, and private"})) },
        ))
        .tool(
            Tool::builder("Test.Secret", "1.0.0")
                .secret("API_KEY")
                .raw_handler(
                    json!({"type": "object"}),
                    Some(json!({"type": "boolean"})),
                    |_input, ctx| async move { Ok(json!(ctx.secret("API_KEY").is_some())) },
                ),
        )
        .tool(
            Tool::builder("Test.Deadline", "1.0.0")
                .timeout(Duration::from_millis(800))
                .raw_handler(
                    json!({"type": "object"}),
                    Some(json!({"type": "integer"})),
                    |_input, ctx| async move {
                        Ok(json!(ctx.remaining().map(|d| d.as_millis() as u64)))
                    },
                ),
        )
        .build()
        .expect("valid tools")
}

/// An invoker with `slots` execution slots, a `limit` per call and the in-memory store.
fn invoker(runs: &Runs, slots: usize, limit: Duration) -> Arc<Invoker> {
    let idempotency = Idempotency {
        store: Arc::new(MemoryStore::new(1 << 20)),
        keep: Duration::from_secs(60),
    };
    Arc::new(Invoker::new(
        Arc::new(registry(runs)),
        Secrets::default(),
        Some(idempotency),
        slots,
        Some(limit),
    ))
}

fn call(tool: &str, input: Value, call_id: Option<&str>) -> Call {
    let mut call = Call::new("test", Target::Id(tool.into()), input);
    call.call_id = call_id.map(str::to_owned);
    call
}

fn value(outcome: &Outcome) -> Value {
    outcome.result.as_ref().expect("success").value.clone()
}

#[tokio::test]
async fn a_repeat_of_a_completed_call_id_replays_its_outcome_without_running_the_tool() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    let first = invoker
        .invoke(call("Test.Count", json!({}), Some("id-1")))
        .await
        .unwrap();
    let again = invoker
        .invoke(call("Test.Count", json!({}), Some("id-1")))
        .await
        .unwrap();
    assert_eq!(value(&first), json!(1));
    assert_eq!(
        value(&again),
        json!(1),
        "the stored outcome, not a second run"
    );
    assert!(matches!(again.disposition, Disposition::Replayed));
    assert_eq!(runs.count(), 1);
}

#[tokio::test]
async fn a_call_without_a_call_id_runs_every_time() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    for _ in 0..2 {
        invoker
            .invoke(call("Test.Count", json!({}), None))
            .await
            .unwrap();
    }
    assert_eq!(runs.count(), 2);
}

#[tokio::test]
async fn a_call_id_reused_for_another_input_is_refused_as_a_conflict() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    invoker
        .invoke(call("Test.Count", json!({}), Some("id-2")))
        .await
        .unwrap();
    let reused = invoker
        .invoke(call("Test.Count", json!({"other": 1}), Some("id-2")))
        .await
        .unwrap_err();
    assert_eq!(reused.class(), ErrorClass::Conflict);
    assert_eq!(runs.count(), 1);
}

#[tokio::test]
async fn a_repeat_while_the_first_runs_is_told_to_retry_and_does_not_run_the_tool() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    let first = tokio::spawn({
        let invoker = invoker.clone();
        async move {
            invoker
                .invoke(call("Test.Sleep", json!({"ms": 300}), Some("id-3")))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let repeat = invoker
        .invoke(call("Test.Sleep", json!({"ms": 300}), Some("id-3")))
        .await
        .unwrap();
    assert!(matches!(repeat.disposition, Disposition::InProgress));
    let error = repeat.result.unwrap_err();
    assert!(
        error.can_retry && error.retry_after_ms.is_some(),
        "{error:?}"
    );
    assert_eq!(value(&first.await.unwrap().unwrap()), json!("slept"));
}

#[tokio::test]
async fn a_retryable_failure_is_not_stored_so_the_same_call_id_runs_again() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    for _ in 0..2 {
        let outcome = invoker
            .invoke(call("Test.Flaky", json!({}), Some("id-4")))
            .await
            .unwrap();
        assert!(outcome.result.unwrap_err().can_retry);
    }
    assert_eq!(runs.count(), 2);
}

#[tokio::test]
async fn a_cancelled_call_releases_its_call_id_at_once() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    let cancellation = Cancellation::new();
    let mut first = call("Test.Sleep", json!({"ms": 5000}), Some("id-5"));
    first.cancellation = Some(cancellation.clone());
    let running = tokio::spawn({
        let invoker = invoker.clone();
        async move { invoker.invoke(first).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancellation.cancel();
    let stopped = running.await.unwrap().unwrap();
    assert_eq!(value(&stopped), json!("stopped"), "the tool saw its signal");
    let again = invoker
        .invoke(call("Test.Sleep", json!({"ms": 10}), Some("id-5")))
        .await
        .unwrap();
    assert!(matches!(again.disposition, Disposition::Ran(_)));
    assert_eq!(value(&again), json!("slept"));
}

#[tokio::test]
async fn a_dropped_call_is_cancelled_and_frees_its_slot_and_call_id() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 1, Duration::from_secs(5));
    let abandoned = invoker.invoke(call("Test.Sleep", json!({"ms": 5000}), Some("id-6")));
    // The caller goes away after 50 ms: the future is dropped mid-run.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), abandoned)
            .await
            .is_err()
    );
    let started = Instant::now();
    let next = invoker
        .invoke(call("Test.Count", json!({}), None))
        .await
        .unwrap();
    assert_eq!(value(&next), json!(1));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the slot was free"
    );
    // The same call again, a moment later, runs (cut short here by its transport's deadline)
    // rather than being told that the abandoned one is still in progress.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let mut again = call("Test.Sleep", json!({"ms": 5000}), Some("id-6"));
    again.deadline = Some(Instant::now() + Duration::from_millis(100));
    let again = invoker.invoke(again).await.unwrap();
    assert!(matches!(again.disposition, Disposition::Ran(_)));
}

#[tokio::test]
async fn a_tool_that_ignores_its_cancellation_is_dropped_after_the_grace_period() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(30));
    let cancellation = Cancellation::new();
    let mut stubborn = call("Test.Stubborn", json!({"ms": 20_000}), None);
    stubborn.cancellation = Some(cancellation.clone());
    let running = tokio::spawn({
        let invoker = invoker.clone();
        async move { invoker.invoke(stubborn).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cancelled_at = Instant::now();
    cancellation.cancel();
    let outcome = running.await.unwrap().unwrap();
    let took = cancelled_at.elapsed();
    assert!(took >= CANCEL_GRACE && took < CANCEL_GRACE + Duration::from_millis(500));
    assert_eq!(outcome.error_class(), Some(ErrorClass::Cancelled));
}

#[tokio::test]
async fn every_slot_taken_until_the_deadline_is_a_busy_refusal_naming_the_call() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 1, Duration::from_secs(5));
    let holder = tokio::spawn({
        let invoker = invoker.clone();
        async move {
            invoker
                .invoke(call("Test.Stubborn", json!({"ms": 1000}), None))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let mut waiting = call("Test.Count", json!({}), Some("waiting"));
    waiting.deadline = Some(started + Duration::from_millis(400));
    let refused = invoker.invoke(waiting).await.unwrap_err();
    assert!(matches!(
        &refused,
        Rejection::Busy { call_id, own_share: false } if call_id == "waiting"
    ));
    assert!(refused.class().retryable());
    let detail = refused.developer_detail();
    assert!(detail.ends_with("(OXP_MAX_CONCURRENT_CALLS)"), "{detail}");
    assert!(
        started.elapsed() >= Duration::from_millis(350),
        "it waited for its deadline"
    );
    assert_eq!(runs.count(), 0, "the tool never ran");
    holder.abort();
}

#[tokio::test]
async fn a_caller_refused_for_its_own_share_is_told_so_naming_the_share_not_the_pool() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    let invoker = Arc::new(Arc::into_inner(invoker).unwrap().with_calls_per_caller(1));
    let alices = |tool: &str, input: Value| {
        let mut call = call(tool, input, None);
        call.principal.subject = Some("alice".into());
        call
    };
    let holder = tokio::spawn({
        let invoker = invoker.clone();
        let call = alices("Test.Stubborn", json!({"ms": 1000}));
        async move { invoker.invoke(call).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut waiting = alices("Test.Count", json!({}));
    waiting.deadline = Some(Instant::now() + Duration::from_millis(200));
    let refused = invoker.invoke(waiting).await;
    let refused = refused.unwrap_err();
    assert!(matches!(
        &refused,
        Rejection::Busy {
            own_share: true,
            ..
        }
    ));
    let detail = refused.developer_detail();
    assert!(
        detail.contains("OXP_MAX_CONCURRENT_CALLS_PER_CALLER"),
        "{detail}"
    );
    holder.abort();
}

#[tokio::test]
async fn a_call_that_waited_for_a_slot_runs_only_for_what_is_left_of_its_deadline() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 1, Duration::from_millis(600));
    let holder = tokio::spawn({
        let invoker = invoker.clone();
        async move {
            invoker
                .invoke(call("Test.Sleep", json!({"ms": 300}), None))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let started = Instant::now();
    let outcome = invoker
        .invoke(call("Test.Stubborn", json!({"ms": 5000}), None))
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(outcome.error_class(), Some(ErrorClass::Timeout));
    assert!(
        took < Duration::from_millis(800),
        "one deadline for the wait and the run: {took:?}"
    );
    holder.await.unwrap().unwrap();
}

#[tokio::test]
async fn at_its_deadline_a_tool_is_stopped_with_a_retryable_timeout() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_millis(200));
    let outcome = invoker
        .invoke(call("Test.Stubborn", json!({"ms": 5000}), None))
        .await
        .unwrap();
    assert_eq!(outcome.error_class(), Some(ErrorClass::Timeout));
    assert!(outcome.result.unwrap_err().can_retry);
}

#[tokio::test]
async fn the_deadline_is_the_first_of_the_transports_the_tools_and_the_servers() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(30));
    // The tool's own 800 ms is shorter than the server's 30 s.
    let outcome = invoker
        .invoke(call("Test.Deadline", json!({}), None))
        .await
        .unwrap();
    let left = value(&outcome).as_u64().unwrap();
    assert!((600..=800).contains(&left), "{left}");
    // The transport's 300 ms is shorter still.
    let mut transported = call("Test.Deadline", json!({}), None);
    transported.deadline = Some(Instant::now() + Duration::from_millis(300));
    let left = value(&invoker.invoke(transported).await.unwrap())
        .as_u64()
        .unwrap();
    assert!(left <= 300, "{left}");
    // A protocol's own limit replaces the server's.
    let mut limited = call("Test.Sleep", json!({"ms": 5000}), None);
    limited.timeout = TimeLimit::Within(Duration::from_millis(20));
    let started = Instant::now();
    let outcome = invoker.invoke(limited).await.unwrap();
    assert_eq!(outcome.error_class(), Some(ErrorClass::Timeout));
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn a_panic_is_a_failure_whose_text_reaches_no_caller_and_the_invoker_keeps_serving() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    let outcome = invoker
        .invoke(call("Test.Panic", json!({}), Some("p")))
        .await
        .unwrap();
    assert_eq!(outcome.error_class(), Some(ErrorClass::Internal));
    let error = outcome.result.unwrap_err();
    let shown = format!("{} {:?}", error.message, error.developer_message);
    assert!(!shown.contains("hunter2"), "{shown}");
    let next = invoker
        .invoke(call("Test.Count", json!({}), None))
        .await
        .unwrap();
    assert_eq!(value(&next), json!(1));
}

#[tokio::test]
async fn an_output_that_breaks_its_schema_is_an_invalid_output_naming_no_value() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    let outcome = invoker
        .invoke(call("Test.Liar", json!({}), None))
        .await
        .unwrap();
    assert_eq!(outcome.error_class(), Some(ErrorClass::InvalidOutput));
    let error = outcome.result.unwrap_err();
    let detail = error.developer_message.unwrap_or_default();
    assert!(detail.contains("total"), "the path: {detail}");
    assert!(!detail.contains("private"), "never the value: {detail}");
}

#[tokio::test]
async fn requirements_and_input_are_checked_before_the_tool_runs() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    let missing = invoker
        .invoke(call("Test.Secret", json!({}), None))
        .await
        .unwrap_err();
    assert!(
        matches!(&missing, Rejection::Missing(Missing::Secret(id, false)) if id == "API_KEY"),
        "{missing:?}"
    );
    let sent = invoker
        .invoke(call("Test.Secret", json!({}), None).secret("API_KEY", "k"))
        .await
        .unwrap();
    assert_eq!(value(&sent), json!(true));
    let invalid = invoker
        .invoke(call("Test.Sleep", json!({"ms": "soon"}), None))
        .await
        .unwrap_err();
    assert_eq!(invalid.class(), ErrorClass::InvalidInput);
    let unknown = invoker
        .invoke(call("Test.Nothing", json!({}), None))
        .await
        .unwrap_err();
    assert_eq!(unknown.class(), ErrorClass::NotFound);
}

#[tokio::test]
async fn a_bound_user_id_must_be_the_callers_own() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    let mut other = call("Test.Count", json!({}), None);
    other.principal = Principal {
        subject: Some("alice".into()),
        bind_user_id: true,
        scopes: None,
    };
    other.user_id = Some("bob".into());
    let refused = invoker.invoke(other).await.unwrap_err();
    assert_eq!(refused.class(), ErrorClass::Unauthorized);
    assert_eq!(runs.count(), 0);
}

#[tokio::test]
async fn one_callers_call_id_never_replays_another_callers_outcome() {
    let runs = Runs::default();
    let invoker = invoker(&runs, 4, Duration::from_secs(5));
    for subject in ["alice", "bob"] {
        let mut keyed = call("Test.Count", json!({}), Some("shared-id"));
        keyed.principal.subject = Some(subject.into());
        let outcome = invoker.invoke(keyed).await.unwrap();
        assert!(
            matches!(outcome.disposition, Disposition::Ran(_)),
            "{subject}"
        );
    }
    assert_eq!(runs.count(), 2);
}
