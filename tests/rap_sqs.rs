//! RAP in its Lambda shape, against moto's SQS on loopback (started by `scripts/test`):
//! `/invoke` enqueues to SQS before answering, the worker handler gets the batch as an SQS
//! event, the callback arrives, an unreadable record comes back in `batchItemFailures`, and
//! an undeliverable result lands in the dead-letter queue, and a record SQS delivers twice
//! runs its tool once.

use crate::common;

use common::aws::{moto_url, sdk_config};
use common::receiver::Receiver;
use common::*;
use oxp_lambda::{App, Config, NoInput, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The HTTP side (`/invoke` enqueues to SQS) and the worker side (`handle_sqs_batch`) of one
/// deployment, as the two functions of the template run them.
struct Rig {
    app: App,
    runs: Arc<AtomicUsize>,
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    dead_letter_queue_url: String,
}

async fn rig() -> Rig {
    let sdk = sdk_config(&moto_url()).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let name = format!("oxp-rap-{}", uuid::Uuid::new_v4().simple());
    let create = |name: String| {
        let sqs = sqs.clone();
        async move {
            sqs.create_queue()
                .queue_name(name)
                .send()
                .await
                .unwrap()
                .queue_url
                .unwrap()
        }
    };
    let queue_url = create(name.clone()).await;
    let dead_letter_queue_url = create(format!("{name}-dlq")).await;
    let mut config = Config::from_vars(
        false,
        [
            ("OXP_RAP_QUEUE_URL", queue_url.as_str()),
            (
                "OXP_RAP_DEAD_LETTER_QUEUE_URL",
                dead_letter_queue_url.as_str(),
            ),
            ("OXP_RAP_DELIVERY_ATTEMPTS", "3"),
            ("OXP_RAP_RETRY_BASE_MS", "20"),
        ],
    )
    .unwrap();
    config.lambda_role = "worker".into();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let count =
        Tool::builder("Counter.Count", "1.0.0").handler(move |_: NoInput, _: ToolContext| {
            let runs = counted.clone();
            async move { Ok::<_, ToolError>(runs.fetch_add(1, Ordering::SeqCst) + 1) }
        });
    let registry = Registry::builder()
        .tools(common::example_tools::tools())
        .tool(count)
        .build()
        .unwrap();
    Rig {
        app: build(App::builder(registry).config(config).aws_config(sdk)),
        runs,
        sqs,
        queue_url,
        dead_letter_queue_url,
    }
}

fn invocation(callback_url: &str) -> Value {
    json!({
        "operation": "Calculator_Add",
        "arguments": {"a": 20, "b": 22},
        "id": "call_sqs_1",
        "callback_url": callback_url,
        "group_id": "thread_sqs",
        "user_id": "user_42"
    })
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn invoke_enqueues_to_sqs_and_the_worker_delivers_the_batch() {
    let rig = rig().await;
    let receiver = Receiver::ok().await;
    let reply = post(&rig.app, "/invoke", invocation(&receiver.url).to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    // Nothing runs in the HTTP function: the job is on the queue, and no result went out.
    let mut records = common::queue::receive_records(&rig.sqs, &rig.queue_url, 1).await;
    let job: Value = serde_json::from_str(records[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(job["operation"], "Calculator_Add");
    assert!(
        receiver.hits().is_empty(),
        "no callback before the worker ran"
    );
    records.push(json!({
        "messageId": "not-a-job",
        "receiptHandle": "r",
        "body": "{\"hello\": \"world\"}",
        "eventSource": "aws:sqs"
    }));
    let event = serde_json::from_value(json!({ "Records": records })).unwrap();
    let response = rig.app.handle_sqs_batch(event).await;
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({"batchItemFailures": [{"itemIdentifier": "not-a-job"}]}),
        "only the unreadable record is reported for redelivery"
    );
    let result = receiver.result().await;
    assert_eq!(
        result,
        json!({"type": "tool_result", "group_id": "thread_sqs", "id": "call_sqs_1", "text": "42"})
    );
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn an_undeliverable_result_is_recorded_in_the_dead_letter_queue() {
    let rig = rig().await;
    let receiver = Receiver::start(&[], 410).await;
    let reply = post(&rig.app, "/invoke", invocation(&receiver.url).to_string()).await;
    assert_eq!(reply.status, 200);
    let records = common::queue::receive_records(&rig.sqs, &rig.queue_url, 1).await;
    let event = serde_json::from_value(json!({ "Records": records })).unwrap();
    let response = rig.app.handle_sqs_batch(event).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "a dead-lettered result is not a failed record"
    );
    assert_eq!(receiver.hits().len(), 1, "410 is not retried");
    let letters = common::queue::receive_records(&rig.sqs, &rig.dead_letter_queue_url, 1).await;
    let letter: Value = serde_json::from_str(letters[0]["body"].as_str().unwrap()).unwrap();
    assert!(letter["reason"].as_str().unwrap().contains("410"));
    assert_eq!(letter["message"]["id"], "call_sqs_1");
    assert_eq!(letter["message"]["text"], "42");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn an_invocation_the_queue_cannot_take_is_refused_not_acknowledged() {
    let rig = rig().await;
    rig.sqs
        .delete_queue()
        .queue_url(&rig.queue_url)
        .send()
        .await
        .unwrap();
    let receiver = Receiver::ok().await;
    let reply = post(&rig.app, "/invoke", invocation(&receiver.url).to_string()).await;
    assert_eq!(reply.status, 503, "{}", reply.text);
    assert_eq!(reply.json["error"]["kind"], "unavailable");
    assert_eq!(reply.json["error"]["can_retry"], true);
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn the_recorded_sqs_batch_replays_through_the_worker() {
    let rig = rig().await;
    let event = std::fs::read_to_string("events/sqs/rap-worker-batch.json").unwrap();
    let event = serde_json::from_str(&event).expect("a Lambda SQS event");
    let response = rig.app.handle_sqs_batch(event).await;
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({"batchItemFailures": [{"itemIdentifier": "not-a-job"}]})
    );
    // agent.invalid never resolves: the result is recorded, with the reason, not lost.
    let letters = common::queue::receive_records(&rig.sqs, &rig.dead_letter_queue_url, 1).await;
    let letter: Value = serde_json::from_str(letters[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(letter["message"]["text"], "42");
    assert!(
        letter["reason"].as_str().unwrap().contains("unreachable"),
        "{letter}"
    );
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_record_sqs_delivers_twice_runs_its_tool_once_and_calls_back_once() {
    let rig = rig().await;
    let receiver = Receiver::ok().await;
    let mut body = invocation(&receiver.url);
    body["operation"] = json!("Counter_Count");
    body["arguments"] = json!({});
    body["id"] = json!(format!("call_twice_{}", uuid::Uuid::new_v4().simple()));
    let reply = post(&rig.app, "/invoke", body.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let records = common::queue::receive_records(&rig.sqs, &rig.queue_url, 1).await;
    // At-least-once delivery: the same record arrives in two batches.
    for _ in 0..2 {
        let event = serde_json::from_value(json!({ "Records": records.clone() })).unwrap();
        let response = rig.app.handle_sqs_batch(event).await;
        assert!(response.batch_item_failures.is_empty());
    }
    assert_eq!(rig.runs.load(Ordering::SeqCst), 1, "the tool ran once");
    let texts: Vec<Value> = receiver
        .hits()
        .iter()
        .map(|h| h.body["text"].clone())
        .collect();
    assert_eq!(
        texts,
        [json!("1")],
        "the second delivery is acknowledged without a second callback"
    );
}
