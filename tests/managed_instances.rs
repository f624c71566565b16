//! Lambda Managed Instances: with `AWS_LAMBDA_MAX_CONCURRENCY` one execution environment
//! serves that many invocations at once, in every Lambda role; without it, one at a time.
//! The real bootstrap polls a Runtime API on loopback that takes 200 ms to acknowledge each
//! answer, which holds a worker as a slow tool would: invocations overlap only if the
//! bootstrap polls for more while one is still being answered.

use crate::common;

use common::runtime_api::{Bootstrap, Event, RuntimeApi};
use serde_json::{Value, json};
use std::time::Duration;

const INVOCATIONS: usize = 8;
const SLOW_ACK: Duration = Duration::from_millis(200);

fn fixture(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `INVOCATIONS` copies of `event`, as request ids `req-0`, `req-1`, ...
fn events(event: &Value, context: Option<Value>) -> Vec<Event> {
    (0..INVOCATIONS)
        .map(|i| (format!("req-{i}"), event.clone(), context.clone()))
        .collect()
}

/// Serves `events` with the role's `env`, `AWS_LAMBDA_MAX_CONCURRENCY` set to `concurrency`
/// when given, and checks what every mode must: each invocation answered exactly once, by
/// `check`, nothing reported as an error. Answers the most invocations in flight at once.
async fn serve(
    events: Vec<Event>,
    env: &[(&str, &str)],
    concurrency: Option<&str>,
    check: impl Fn(&Value),
) -> usize {
    let (api, addr) = RuntimeApi::start(events, SLOW_ACK).await;
    let mut env = env.to_vec();
    if let Some(n) = concurrency {
        env.push(("AWS_LAMBDA_MAX_CONCURRENCY", n));
    }
    let mut bootstrap = Bootstrap::start(addr, &env);
    api.wait_for(INVOCATIONS, &mut bootstrap).await;
    // Anything answered twice would arrive within another acknowledgement's time.
    tokio::time::sleep(SLOW_ACK * 2).await;
    let answers = api.answers.lock().unwrap().clone();
    let mut ids: Vec<&str> = answers.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(
        ids.len(),
        INVOCATIONS,
        "every invocation answered: {answers:?}"
    );
    assert_eq!(
        answers.len(),
        INVOCATIONS,
        "none answered twice: {answers:?}"
    );
    for (_, answer) in &answers {
        check(answer);
    }
    assert!(
        api.errors.lock().unwrap().is_empty(),
        "{:?}",
        api.errors.lock().unwrap()
    );
    api.max_in_flight()
}

async fn overlaps_only_with_max_concurrency(
    events: impl Fn() -> Vec<Event>,
    env: &[(&str, &str)],
    check: impl Fn(&Value) + Copy,
) {
    assert_eq!(
        serve(events(), env, None, check).await,
        1,
        "without AWS_LAMBDA_MAX_CONCURRENCY, one invocation at a time"
    );
    assert_eq!(
        serve(events(), env, Some("1"), check).await,
        1,
        "AWS_LAMBDA_MAX_CONCURRENCY=1 is one at a time"
    );
    assert_eq!(
        serve(events(), env, Some("4"), check).await,
        4,
        "AWS_LAMBDA_MAX_CONCURRENCY=4 serves four at once"
    );
}

#[tokio::test]
async fn http_events_are_served_concurrently_under_managed_instances() {
    let event = fixture("events/apigw-rest-call-success.json");
    overlaps_only_with_max_concurrency(
        || events(&event, None),
        // Every copy has the same call_id: replays are not what this test is about.
        &[("OXP_IDEMPOTENCY", "off")],
        |answer| {
            assert_eq!(answer["statusCode"], 200, "{answer}");
            let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
            assert_eq!(body["result"]["value"], 15, "{body}");
        },
    )
    .await;
}

#[tokio::test]
async fn sqs_batches_are_served_concurrently_under_managed_instances() {
    let mut batch = fixture("events/sqs/rap-worker-batch.json");
    // Bodies that are no job: each record is answered at once as one to redeliver.
    for record in batch["Records"].as_array_mut().unwrap() {
        record["body"] = json!("not a job");
    }
    let records = batch["Records"].as_array().unwrap().len();
    overlaps_only_with_max_concurrency(
        || events(&batch, None),
        &[
            ("OXP_LAMBDA_ROLE", "worker"),
            // The role needs its queues and its state table configured; nothing is sent to
            // them here.
            ("OXP_STATE_TABLE", "oxp-state"),
            (
                "OXP_SECRET_MCP_STATE_KEY",
                "a-state-key-that-every-server-sharing-the-table-holds",
            ),
            ("OXP_RAP_QUEUE_URL", "http://127.0.0.1:9/000000000000/jobs"),
            (
                "OXP_RAP_DEAD_LETTER_QUEUE_URL",
                "http://127.0.0.1:9/000000000000/dead",
            ),
        ],
        |answer| {
            assert_eq!(
                answer["batchItemFailures"].as_array().map(Vec::len),
                Some(records),
                "{answer}"
            );
        },
    )
    .await;
}

#[tokio::test]
async fn gateway_invocations_are_served_concurrently_under_managed_instances() {
    let context = json!({"custom": {"bedrockAgentCoreToolName": "tools___Calculator_Add"}});
    overlaps_only_with_max_concurrency(
        || events(&json!({"a": 2, "b": 3}), Some(context.clone())),
        &[("OXP_LAMBDA_ROLE", "agentcore")],
        |answer| assert_eq!(answer["content"][0]["text"], "5", "{answer}"),
    )
    .await;
}
