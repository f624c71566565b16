//! RAP in its Lambda shape, against moto (DynamoDB for the state table, SQS for the queues) on
//! loopback: two apps stand for the HTTP function and the worker. `/invoke` keeps the job in
//! the state table before answering and wakes the worker through the queue
//! (`{"oxp_work": [id]}`); the worker runs it from the table, the callback arrives, a record
//! that is no work comes back in `batchItemFailures`, an undeliverable result lands in the
//! dead-letter queue, a record SQS delivers twice runs its tool once, and an invocation the
//! table cannot take is refused, never acknowledged. The recorded batch (`events/sqs/`) names a
//! work record kept beside it.

use crate::common;

use common::aws::{moto_url, sdk_config, state_table};
use common::receiver::Receiver;
use common::*;
use oxp_lambda::{App, Config, NoInput, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The HTTP function and the worker of one deployment, sharing its table and queues.
struct Rig {
    http: App,
    worker: App,
    runs: Arc<AtomicUsize>,
    sqs: aws_sdk_sqs::Client,
    dynamodb: aws_sdk_dynamodb::Client,
    table: String,
    queue_url: String,
    dead_letter_queue_url: String,
}

async fn rig() -> Rig {
    let sdk = sdk_config(&moto_url()).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let (queue_url, dead_letter_queue_url) = common::queue::queues(&sqs, "oxp-rap").await;
    let (dynamodb, table) = state_table().await;
    let runs = Arc::new(AtomicUsize::new(0));
    let function = |role: &str| {
        let mut config = Config::from_vars(
            true,
            [
                ("OXP_AUTH", "none"),
                ("OXP_STATE_TABLE", table.as_str()),
                ("OXP_RAP_QUEUE_URL", queue_url.as_str()),
                (
                    "OXP_RAP_DEAD_LETTER_QUEUE_URL",
                    dead_letter_queue_url.as_str(),
                ),
                ("OXP_RAP_ALLOW_HTTP", "true"),
                ("OXP_RAP_ALLOW_LOOPBACK_CALLBACKS", "true"),
                // One attempt: what is not delivered is dead-lettered at once.
                ("OXP_RAP_DELIVERY_ATTEMPTS", "1"),
                ("OXP_METRICS", "off"),
            ],
        )
        .unwrap();
        config.lambda_role = role.into();
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
        build(
            App::builder(registry)
                .config(config)
                .secret("MCP_STATE_KEY", common::STATE_KEY)
                .aws_config(sdk.clone()),
        )
    };
    Rig {
        http: function("http"),
        worker: function("worker"),
        runs,
        sqs,
        dynamodb,
        table,
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

/// The worker's answer to `records` as one SQS batch.
async fn batch(rig: &Rig, records: Vec<Value>) -> Value {
    let event = serde_json::from_value(json!({ "Records": records })).unwrap();
    serde_json::to_value(rig.worker.handle_sqs_batch(event).await).unwrap()
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn invoke_keeps_the_job_in_the_state_table_and_the_worker_delivers_it() {
    let rig = rig().await;
    let receiver = Receiver::ok().await;
    let reply = post(&rig.http, "/invoke", invocation(&receiver.url).to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    // Nothing runs in the HTTP function: the job is kept in the table, and the queue's message
    // only names it.
    let mut records = common::queue::receive_records(&rig.sqs, &rig.queue_url, 1).await;
    let woken: Value = serde_json::from_str(records[0]["body"].as_str().unwrap()).unwrap();
    let id = woken["oxp_work"][0].as_str().unwrap().to_owned();
    let kept = rig
        .dynamodb
        .get_item()
        .table_name(&rig.table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S("work".into()),
        )
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S(id))
        .send()
        .await
        .unwrap();
    assert!(kept.item().is_some(), "the job is kept in the table");
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
    assert_eq!(
        batch(&rig, records).await,
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
    let reply = post(&rig.http, "/invoke", invocation(&receiver.url).to_string()).await;
    assert_eq!(reply.status, 200);
    let records = common::queue::receive_records(&rig.sqs, &rig.queue_url, 1).await;
    assert_eq!(
        batch(&rig, records).await,
        json!({"batchItemFailures": []}),
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
async fn an_invocation_the_state_table_cannot_take_is_refused_not_acknowledged() {
    let rig = rig().await;
    rig.dynamodb
        .delete_table()
        .table_name(&rig.table)
        .send()
        .await
        .unwrap();
    let receiver = Receiver::ok().await;
    let reply = post(&rig.http, "/invoke", invocation(&receiver.url).to_string()).await;
    assert_eq!(reply.status, 503, "{}", reply.text);
    assert_eq!(reply.json["error"]["kind"], "unavailable");
    assert_eq!(reply.json["error"]["can_retry"], true);
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn the_recorded_sqs_batch_replays_through_the_worker() {
    let rig = rig().await;
    // The work record the recorded message names, as the table keeps it.
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string("events/sqs/rap-job-record.json").unwrap())
            .unwrap();
    use aws_sdk_dynamodb::types::AttributeValue as A;
    rig.dynamodb
        .put_item()
        .table_name(&rig.table)
        .item("pk", A::S(kept["partition"].as_str().unwrap().into()))
        .item("sk", A::S(kept["key"].as_str().unwrap().into()))
        .item(
            "v",
            A::B(aws_sdk_dynamodb::primitives::Blob::new(
                kept["record"].to_string().into_bytes(),
            )),
        )
        .send()
        .await
        .unwrap();
    let event = std::fs::read_to_string("events/sqs/rap-worker-batch.json").unwrap();
    let event = serde_json::from_str(&event).expect("a Lambda SQS event");
    let response = rig.worker.handle_sqs_batch(event).await;
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
    let reply = post(&rig.http, "/invoke", body.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let records = common::queue::receive_records(&rig.sqs, &rig.queue_url, 1).await;
    // At-least-once delivery: the same record arrives in two batches.
    for _ in 0..2 {
        assert_eq!(
            batch(&rig, records.clone()).await,
            json!({"batchItemFailures": []})
        );
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
