//! MCP tasks in their Lambda shape, against moto (DynamoDB for the state, SQS for the queue) on
//! loopback: two apps stand for two functions that share nothing but AWS, the HTTP function
//! (`tools/call`, `tasks/*`) and the worker (the queue's consumer, which RAP's jobs share). A
//! task created at the HTTP function runs in the worker, and the HTTP function answers for it;
//! `tasks/cancel` there stops the run in the worker within 2 s; a run that waits for its user
//! past the worker's deadline parks the task, and the answer sends it to the queue again.

use crate::common;

use common::aws::{moto_url, sdk_config, state_table};
use common::tasks::{asking, asking_twice, call, choose, get, rpc, until, update};
use common::{App, build};
use oxp_lambda::{Config, Registry};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

struct Functions {
    http: App,
    worker: App,
    sqs: aws_sdk_sqs::Client,
    queue_url: String,
}

async fn functions() -> Functions {
    let sdk = sdk_config(&moto_url()).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let (queue_url, dead_letters) = common::queue::queues(&sqs, "oxp-tasks").await;
    let urls = [queue_url, dead_letters];
    let (_, table) = state_table().await;
    let function = |role: &str| {
        // As template.yaml has it: RAP and MCP tasks share the invocations queue.
        let mut config = Config::from_vars(
            true,
            [
                ("OXP_AUTH", "none"),
                ("OXP_MCP_TASK_QUEUE_URL", urls[0].as_str()),
                ("OXP_RAP_QUEUE_URL", urls[0].as_str()),
                ("OXP_RAP_DEAD_LETTER_QUEUE_URL", urls[1].as_str()),
                ("OXP_STATE_TABLE", table.as_str()),
                ("OXP_METRICS", "off"),
            ],
        )
        .unwrap();
        config.lambda_role = role.into();
        let mut tools = common::example_tools::tools();
        tools.push(asking());
        tools.push(asking_twice());
        build(
            App::builder(Registry::builder().tools(tools).build().unwrap())
                .config(config)
                .secret("MCP_STATE_KEY", common::STATE_KEY)
                .aws_config(sdk.clone()),
        )
    };
    Functions {
        http: function("http"),
        worker: function("worker"),
        sqs,
        queue_url: urls[0].clone(),
    }
}

impl Functions {
    /// The next queued run, handed to the worker as Lambda's poller would (in a task: the run
    /// holds its batch), until `deadline` when given.
    async fn pump(&self, deadline: Option<Instant>) -> tokio::task::JoinHandle<Value> {
        let event = common::queue::receive_batch(&self.sqs, &self.queue_url, 1).await;
        let worker = self.worker.clone();
        tokio::spawn(async move {
            let answer = match deadline {
                Some(deadline) => worker.handle_sqs_batch_within(event, deadline).await,
                None => worker.handle_sqs_batch(event).await,
            };
            serde_json::to_value(answer).unwrap()
        })
    }

    async fn task(&self, tool: &str, arguments: Value) -> String {
        let created = call(&self.http, tool, arguments, true).await;
        assert_eq!(created["resultType"], "task", "{created}");
        created["taskId"].as_str().unwrap().to_owned()
    }
}

const NO_FAILURES: fn() -> Value = || json!({"batchItemFailures": []});

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_task_created_at_the_http_function_runs_in_the_worker_and_the_http_function_answers_for_it()
 {
    let f = functions().await;
    let id = f.task("Demo_Sleep", json!({"ms": 300})).await;
    // The HTTP function only queued it: nothing runs there.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(get(&f.http, &id).await["status"], "working");
    // The worker runs it (RAP's handler, first on the role, leaves the record to MCP's).
    let batch = f.pump(None).await.await.unwrap();
    assert_eq!(batch, NO_FAILURES(), "the run is done with");
    let done = until(&f.http, &id, "completed").await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(value["cancelled"], false, "{done}");
    assert!(value["slept_ms"].as_u64().unwrap() >= 300, "{done}");
    // SQS delivers at least once: the same run delivered again runs nothing.
    let again: aws_lambda_events::event::sqs::SqsEvent = serde_json::from_value(json!({
        "Records": [{"messageId": "again", "body": json!({"oxp_work": [format!("task:{id}")]}).to_string(),
                     "eventSource": "aws:sqs"}]
    }))
    .unwrap();
    let batch = serde_json::to_value(f.worker.handle_sqs_batch(again).await).unwrap();
    assert_eq!(batch, NO_FAILURES());
    let after = get(&f.http, &id).await;
    assert_eq!(
        after["lastUpdatedAt"], done["lastUpdatedAt"],
        "not run again"
    );
    assert_eq!(after["result"], done["result"]);
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn tasks_cancel_at_the_http_function_stops_the_run_in_the_worker_within_2_s() {
    let f = functions().await;
    let id = f.task("Demo_Sleep", json!({"ms": 20_000})).await;
    let batch = f.pump(None).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cancelled = rpc(
        &f.http,
        "tasks/cancel",
        &id,
        json!({"taskId": id}),
        true,
        None,
    )
    .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    let started = Instant::now();
    let batch = tokio::time::timeout(Duration::from_secs(2), batch)
        .await
        .expect("the run in the worker stopped within 2 s")
        .unwrap();
    assert_eq!(batch, NO_FAILURES());
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(get(&f.http, &id).await["status"], "cancelled");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_run_waiting_for_its_user_past_the_workers_deadline_parks_and_the_answer_resumes_it() {
    let f = functions().await;
    let id = f.task("Job_Deploy", json!({})).await;
    // The worker's invocation ends in 1.5 s: the run asks, waits, and parks the task before.
    let batch = f
        .pump(Some(Instant::now() + Duration::from_millis(1500)))
        .await;
    let waiting = until(&f.http, &id, "input_required").await;
    assert_eq!(
        waiting["inputRequests"]["ask_0"]["params"]["requestedSchema"]["properties"]["choice"]["enum"],
        json!(["Yes", "No"]),
        "{waiting}"
    );
    let batch = tokio::time::timeout(Duration::from_secs(3), batch)
        .await
        .expect("the worker let go of the run at its deadline")
        .unwrap();
    assert_eq!(batch, NO_FAILURES(), "a parked run's record is done with");
    assert_eq!(get(&f.http, &id).await["status"], "input_required");
    // The user answers at the HTTP function: the run goes to the queue again, and the worker
    // runs it with the answer.
    let answer = json!({"ask_0": {"action": "accept", "content": {"choice": "No"}}});
    let ack = rpc(
        &f.http,
        "tasks/update",
        &id,
        json!({"taskId": id, "inputResponses": answer}),
        true,
        None,
    )
    .await;
    assert_eq!(ack.json["result"]["resultType"], "complete", "{}", ack.text);
    let batch = f.pump(None).await.await.unwrap();
    assert_eq!(batch, NO_FAILURES());
    let done = until(&f.http, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "deploy: No", "{done}");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_parked_run_with_two_open_questions_resumes_only_once_both_are_answered() {
    let f = functions().await;
    let id = f.task("Job_Pair", json!({})).await;
    // Time for both questions to be asked (each a few writes to DynamoDB on moto, slow when
    // the machine is busy) before the invocation's end parks the run.
    let batch = f
        .pump(Some(Instant::now() + Duration::from_millis(5000)))
        .await;
    let batch = tokio::time::timeout(Duration::from_secs(8), batch)
        .await
        .expect("the worker let go of the run at its deadline")
        .unwrap();
    assert_eq!(batch, NO_FAILURES());
    let parked = get(&f.http, &id).await;
    let open = parked["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("not parked: {parked}"));
    assert_eq!(open.len(), 2, "{parked}");
    // One answer: the other question is still open, and nothing goes to the queue.
    update(&f.http, &id, json!({"ask_0": choose("eu")})).await;
    assert_eq!(get(&f.http, &id).await["status"], "input_required");
    let queued = f
        .sqs
        .receive_message()
        .queue_url(&f.queue_url)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert!(queued.messages().is_empty(), "resumed with a question open");
    // The other: the worker runs it again, with both answers.
    update(&f.http, &id, json!({"ask_1": choose("now")})).await;
    let batch = f.pump(None).await.await.unwrap();
    assert_eq!(batch, NO_FAILURES());
    let done = until(&f.http, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "pair: eu now",
        "{done}"
    );
}
