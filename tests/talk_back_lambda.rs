//! Calls that talk back in their Lambda shape, against moto (DynamoDB for the state, SQS for the
//! queue) on loopback: two apps stand for two functions that share nothing but AWS, the HTTP
//! function (role `http`: `/invoke`, answers, cancellations, webhooks) and the worker (role
//! `worker`: the queued jobs and the subscriptions' events). An answer given to the HTTP
//! function reaches the question waiting in the worker; a cancellation reaches a call running in
//! the worker within 2 s; an event accepted by the HTTP function is delivered by the worker.

use crate::common;

use common::aws::{moto_url, sdk_config, state_table};
use common::receiver::Receiver;
use common::*;
use hmac::{Hmac, Mac};
use oxp_lambda::{App, Config};
use serde_json::{Value, json};
use sha2::Sha256;
use std::time::{Duration, Instant};

const SECRET: &str = "lambda-webhook-secret";

struct Functions {
    http: App,
    worker: App,
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
    dead_letters_url: String,
    table: String,
}

async fn functions() -> Functions {
    functions_with(&[]).await
}

/// The two functions with the settings `vars` too.
async fn functions_with(vars: &[(&str, &str)]) -> Functions {
    let sdk = sdk_config(&moto_url()).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let (queue_url, dead_letters) = common::queue::queues(&sqs, "oxp-talk").await;
    let urls = [queue_url, dead_letters];
    let (_, table) = state_table().await;
    let function = |role: &str| {
        let mut all = vec![
            ("OXP_AUTH", "none"),
            ("OXP_RAP_QUEUE_URL", urls[0].as_str()),
            ("OXP_RAP_DEAD_LETTER_QUEUE_URL", urls[1].as_str()),
            ("OXP_RAP_ALLOW_HTTP", "true"),
            ("OXP_RAP_ALLOW_LOOPBACK_CALLBACKS", "true"),
            ("OXP_RAP_DELIVERY_ATTEMPTS", "2"),
            ("OXP_RAP_ENDPOINT", "https://tools.example.com/invoke"),
            ("OXP_STATE_TABLE", table.as_str()),
            ("OXP_METRICS", "off"),
        ];
        all.extend_from_slice(vars);
        let mut config = Config::from_vars(true, all).unwrap();
        config.lambda_role = role.into();
        build(
            App::builder(common::example_tools::registry().unwrap())
                .config(config)
                .secret("DEMO_WEBHOOK_SECRET", SECRET)
                .secret("MCP_STATE_KEY", common::STATE_KEY)
                .aws_config(sdk.clone()),
        )
    };
    Functions {
        http: function("http"),
        worker: function("worker"),
        sqs,
        queue_url: urls[0].clone(),
        dead_letters_url: urls[1].clone(),
        table,
    }
}

impl Functions {
    /// Hands the next `n` queued messages to the worker as one SQS batch (in a task: a call
    /// waiting on the user holds its batch), deleting those it handled.
    async fn pump(&self, n: usize) -> tokio::task::JoinHandle<Value> {
        let event = common::queue::receive_batch(&self.sqs, &self.queue_url, n).await;
        let worker = self.worker.clone();
        tokio::spawn(
            async move { serde_json::to_value(worker.handle_sqs_batch(event).await).unwrap() },
        )
    }
}

/// `event` sent to the demo event source's webhook of `app`, signed.
async fn webhook(app: &App, event: Value) -> Reply {
    let event = event.to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(event.as_bytes());
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    let request = axum::http::Request::post("/webhooks/demo")
        .header("content-type", "application/json")
        .header("x-hub-signature-256", signature)
        .body(axum::body::Body::from(event))
        .unwrap();
    send(app, request).await
}

fn invocation(receiver: &Receiver, id: &str, operation: &str, arguments: Value) -> String {
    json!({"operation": operation, "arguments": arguments, "id": id, "group_id": "thread-l",
           "callback_url": receiver.url})
    .to_string()
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn an_answer_given_to_the_http_function_reaches_the_question_waiting_in_the_worker() {
    let f = functions().await;
    let receiver = Receiver::ok().await;
    let arguments = json!({"prompt": "Go?", "choices": ["Yes", "No"], "default": 1});
    let reply = post(
        &f.http,
        "/invoke",
        invocation(&receiver, "l-ask", "Demo_Confirm", arguments),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let batch = f.pump(1).await;
    let choice = receiver.wait_kind("user_choice", 1).await.remove(0);
    let url = choice["response_url"].as_str().unwrap();
    let path = url.strip_prefix("https://tools.example.com").unwrap();
    let answered_at = Instant::now();
    let reply = post(
        &f.http,
        path,
        json!({"id": "l-ask", "selected": 0}).to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert!(
        answered_at.elapsed() < Duration::from_secs(3),
        "{:?}",
        answered_at.elapsed()
    );
    let value: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"selected": 0, "choice": "Yes"}));
    let answer = batch.await.unwrap();
    assert_eq!(answer["batchItemFailures"], json!([]), "{answer}");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_cancellation_reaches_a_call_running_in_the_worker_within_2_seconds() {
    let f = functions().await;
    let receiver = Receiver::ok().await;
    let body = invocation(&receiver, "l-sleep", "Demo_Sleep", json!({"ms": 20000}));
    assert_eq!(post(&f.http, "/invoke", body).await.status, 200);
    let batch = f.pump(1).await;
    // The call runs in the worker (its progress says so), then the runtime cancels it through
    // the HTTP function.
    receiver.wait_kind("view_update", 1).await;
    let cancelled_at = Instant::now();
    let cancel = axum::http::Request::post("/cancel_tool_call")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(
            json!({"thread_id": "thread-l", "tool_call_id": "l-sleep"}).to_string(),
        ))
        .unwrap();
    let status = tower::ServiceExt::oneshot(f.http.clone(), cancel)
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(2),
        "{:?}",
        cancelled_at.elapsed()
    );
    let value: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(value["cancelled"], true, "{result}");
    batch.await.unwrap();
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn an_event_the_http_function_accepts_is_delivered_by_the_worker() {
    let f = functions().await;
    let receiver = Receiver::ok().await;
    let body = invocation(
        &receiver,
        "l-watch",
        "Demo_Watch",
        json!({"topic": "orders", "max_events": 1}),
    );
    assert_eq!(post(&f.http, "/invoke", body).await.status, 200);
    f.pump(1).await.await.unwrap();
    let confirmation = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert_eq!(confirmation["subscription"], true, "{confirmation}");
    let reply = webhook(&f.http, json!({"topic": "orders", "event": {"order": 7}})).await;
    assert_eq!(reply.status, 202, "{}", reply.text);
    assert_eq!(reply.json["accepted"], 1);
    // Nothing is sent by the HTTP function: the worker delivers it from its queue.
    assert!(receiver.of_kind("subscription_event").is_empty());
    let answer = f.pump(1).await.await.unwrap();
    assert_eq!(answer["batchItemFailures"], json!([]), "{answer}");
    let delivered = receiver.wait_kind("subscription_event", 1).await.remove(0);
    assert_eq!(delivered["tool_call_id"], "l-watch");
    assert_eq!(
        delivered["final"], true,
        "max_events 1: the first is the last"
    );
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_record_sqs_delivers_twice_at_once_runs_a_not_idempotent_tool_once_with_one_callback() {
    let f = functions().await;
    let receiver = Receiver::ok().await;
    // System.GetTimestamp opts out of the call id's replay: only the work's lease keeps a
    // redelivered record from running it again.
    let body = invocation(&receiver, "stamp-1", "System_GetTimestamp", json!({}));
    assert_eq!(post(&f.http, "/invoke", body).await.status, 200);
    let record = common::queue::receive_records(&f.sqs, &f.queue_url, 1).await;
    // SQS delivers the record again while the first delivery runs (a visibility timeout lapsed).
    let twice: aws_lambda_events::event::sqs::SqsEvent = serde_json::from_value(json!({
        "Records": [record[0].clone(), record[0].clone()]
    }))
    .unwrap();
    let batch = serde_json::to_value(f.worker.handle_sqs_batch(twice).await).unwrap();
    assert_eq!(batch, json!({"batchItemFailures": []}), "both done with");
    receiver.wait_kind("tool_result", 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        receiver.of_kind("tool_result").len(),
        1,
        "one run, one callback"
    );
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn the_workers_schedule_runs_accepted_work_whose_queued_message_was_lost() {
    use common::runtime_api::{Bootstrap, RuntimeApi};
    let f = functions().await;
    let receiver = Receiver::ok().await;
    let body = invocation(
        &receiver,
        "lost-1",
        "Calculator_Add",
        json!({"a": 2, "b": 3}),
    );
    assert_eq!(post(&f.http, "/invoke", body).await.status, 200);
    // The message that would wake the worker is lost (taken and never handled).
    common::queue::receive_records(&f.sqs, &f.queue_url, 1).await;
    // The worker's schedule fires (EventBridge's scheduled event, template.yaml's Sweep).
    let scheduled = json!({"version": "0", "id": "sweep-1", "detail-type": "Scheduled Event",
        "source": "aws.events", "account": "123456789012", "time": "2026-11-27T00:00:00Z",
        "region": "us-east-1", "resources": [], "detail": {}});
    let (api, addr) =
        RuntimeApi::start(vec![("sweep-1".into(), scheduled, None)], Duration::ZERO).await;
    let moto = moto_url();
    let mut worker = Bootstrap::start(
        addr,
        &[
            ("OXP_LAMBDA_ROLE", "worker"),
            ("OXP_STATE_TABLE", f.table.as_str()),
            ("OXP_SECRET_MCP_STATE_KEY", common::STATE_KEY),
            ("OXP_SECRET_MCP_STATE_KEY", common::STATE_KEY),
            ("OXP_RAP_QUEUE_URL", f.queue_url.as_str()),
            ("OXP_RAP_DEAD_LETTER_QUEUE_URL", f.dead_letters_url.as_str()),
            ("OXP_RAP_ALLOW_HTTP", "true"),
            ("OXP_RAP_ALLOW_LOOPBACK_CALLBACKS", "true"),
            ("AWS_ENDPOINT_URL", moto.as_str()),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
        ],
    );
    api.wait_for(1, &mut worker).await;
    assert_eq!(api.answer("sweep-1"), json!({}));
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert_eq!(result["text"], "5", "{result}");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_worker_killed_while_its_result_is_in_flight_has_the_same_result_delivered_again_on_redelivery()
 {
    use common::runtime_api::{Bootstrap, RuntimeApi};
    let f = functions().await;
    let receiver = Receiver::ok().await;
    // The runtime takes the result's body and never answers (the 200 never reaches the
    // worker), until the worker is killed.
    receiver.hold("tool_result", Duration::from_secs(60));
    let body = invocation(
        &receiver,
        "sum-1",
        "Calculator_Add",
        json!({"a": 4, "b": 5}),
    );
    assert_eq!(post(&f.http, "/invoke", body).await.status, 200);
    let records = common::queue::receive_records(&f.sqs, &f.queue_url, 1).await;
    let batch = json!({ "Records": records });
    let moto = moto_url();
    let env = [
        ("OXP_LAMBDA_ROLE", "worker"),
        ("OXP_STATE_TABLE", f.table.as_str()),
        ("OXP_SECRET_MCP_STATE_KEY", common::STATE_KEY),
        ("OXP_RAP_QUEUE_URL", f.queue_url.as_str()),
        ("OXP_RAP_DEAD_LETTER_QUEUE_URL", f.dead_letters_url.as_str()),
        ("OXP_RAP_ALLOW_HTTP", "true"),
        ("OXP_RAP_ALLOW_LOOPBACK_CALLBACKS", "true"),
        ("OXP_RAP_ATTEMPT_TIMEOUT_MS", "60000"),
        ("OXP_WORK_LEASE_SECS", "2"),
        ("OXP_LOG", "warn"),
        ("AWS_ENDPOINT_URL", moto.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
    ];
    let (_api, addr) =
        RuntimeApi::start(vec![("first".into(), batch.clone(), None)], Duration::ZERO).await;
    let mut first = Bootstrap::start(addr, &env);
    receiver.wait_kind("tool_result", 1).await;
    let _ = first.0.kill();
    let _ = first.0.wait();
    // SQS delivers the record again once its visibility timeout lapsed (here: once the dead
    // worker's lease did); the runtime answers this time.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    receiver.hold("none", Duration::ZERO);
    let (api, addr) = RuntimeApi::start(vec![("again".into(), batch, None)], Duration::ZERO).await;
    let mut again = Bootstrap::start(addr, &env);
    api.wait_for(1, &mut again).await;
    assert_eq!(api.answer("again"), json!({"batchItemFailures": []}));
    let results = receiver.wait_kind("tool_result", 2).await;
    assert!(
        results.iter().all(|r| r["text"] == "9"),
        "the same result again, never another outcome: {results:?}"
    );
    let hits = receiver.hits();
    assert_eq!(hits[0].raw, hits[1].raw, "the same bytes");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_call_waiting_for_its_user_past_the_workers_deadline_parks_and_the_answer_wakes_it() {
    let f = functions().await;
    let receiver = Receiver::ok().await;
    let arguments = json!({"prompt": "Go?", "choices": ["Yes", "No"], "default": 1});
    let body = invocation(&receiver, "l-park", "Demo_Confirm", arguments);
    assert_eq!(post(&f.http, "/invoke", body).await.status, 200);
    // The worker's invocation ends in 2 s: the call asks, waits, and parks before.
    let event = common::queue::receive_batch(&f.sqs, &f.queue_url, 1).await;
    let deadline = Instant::now() + Duration::from_secs(2);
    let batch = f.worker.handle_sqs_batch_within(event, deadline).await;
    assert_eq!(
        serde_json::to_value(batch).unwrap(),
        json!({"batchItemFailures": []}),
        "a parked call's message is done with"
    );
    let choice = receiver.wait_kind("user_choice", 1).await.remove(0);
    // Parked: nothing is put back on the queue while the user thinks.
    let idle = f
        .sqs
        .receive_message()
        .queue_url(&f.queue_url)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert!(
        idle.messages.unwrap_or_default().is_empty(),
        "no re-queue per deadline"
    );
    // The answer, given to the HTTP function, wakes the call: its message, then its result.
    let url = choice["response_url"].as_str().unwrap();
    let path = url.strip_prefix("https://tools.example.com").unwrap();
    let answer = json!({"id": "l-park", "selected": 0}).to_string();
    assert_eq!(post(&f.http, path, answer).await.status, 200);
    let batch = f.pump(1).await.await.unwrap();
    assert_eq!(batch, json!({"batchItemFailures": []}));
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    let value: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"selected": 0, "choice": "Yes"}), "{result}");
    assert_eq!(receiver.of_kind("user_choice").len(), 1, "asked once");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn events_left_when_the_workers_time_is_up_go_on_from_the_queue_at_once_each_sent_once() {
    let f = functions_with(&[("OXP_SUBSCRIPTION_EVENTS_PER_MINUTE", "60")]).await;
    let receiver = Receiver::ok().await;
    let body = invocation(
        &receiver,
        "l-burst",
        "Demo_Watch",
        json!({"topic": "burst"}),
    );
    assert_eq!(post(&f.http, "/invoke", body).await.status, 200);
    f.pump(1).await.await.unwrap();
    receiver.wait_kind("tool_result", 1).await;
    for n in 1..=3 {
        let reply = webhook(&f.http, json!({"topic": "burst", "event": {"n": n}})).await;
        assert_eq!(reply.json["accepted"], 1, "{}", reply.text);
    }
    // A message per event accepted, for the one piece of work that delivers them. At one event
    // a second (the subscription's pace), a worker invocation of 1.5 s sends two.
    let event = common::queue::receive_batch(&f.sqs, &f.queue_url, 3).await;
    let deadline = Instant::now() + Duration::from_millis(1500);
    let batch = f.worker.handle_sqs_batch_within(event, deadline).await;
    assert_eq!(
        serde_json::to_value(batch).unwrap(),
        json!({"batchItemFailures": []})
    );
    assert_eq!(receiver.of_kind("subscription_event").len(), 2);
    // The rest is on the queue at once, for whichever worker takes it.
    let ended = Instant::now();
    let event = common::queue::receive_batch(&f.sqs, &f.queue_url, 1).await;
    assert!(
        ended.elapsed() < Duration::from_secs(3),
        "{:?}",
        ended.elapsed()
    );
    let batch = f.worker.handle_sqs_batch(event).await;
    assert_eq!(
        serde_json::to_value(batch).unwrap(),
        json!({"batchItemFailures": []})
    );
    let events = receiver.wait_kind("subscription_event", 3).await;
    let texts: Vec<Value> = events
        .iter()
        .map(|e| serde_json::from_str(e["text"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        texts,
        [json!({"n": 1}), json!({"n": 2}), json!({"n": 3})],
        "in order, once each"
    );
}
