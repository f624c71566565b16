//! Acknowledged work is never lost nor stalled when its process stops, however it stops: the
//! binary killed (SIGKILL: no drain, no flush) or stopped (SIGTERM) while a subscription's event
//! is in flight to the runtime, then started again over the same state file; and two servers
//! sharing a DynamoDB table (moto), one killed mid-delivery, the other taking the work over
//! within the lease and a sweep; and a task's question, asked by the run in one server, answered
//! through the other, and a task cancelled through the other. Short leases here (2 s, a sweep each second) make the takeovers' timing
//! the thing checked.

use crate::common;

use common::http_raw_with;
use common::receiver::Receiver;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::process::Command;
use std::time::{Duration, Instant};

const SECRET: &str = "takeover-webhook-secret";
/// The runner's lease and sweep here.
const LEASE: Duration = Duration::from_secs(2);
const SWEEP: Duration = Duration::from_secs(1);
/// A delivery attempt's bound here.
const ATTEMPT: Duration = Duration::from_secs(3);

struct Server {
    process: common::Process,
    addr: String,
}

/// The binary with `store` (variables naming its state store) and short leases.
fn start<V: AsRef<std::ffi::OsStr>>(store: &[(&str, V)]) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    command
        .args(["--port", "0"])
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .env("OXP_SECRET_DEMO_WEBHOOK_SECRET", SECRET)
        .env("OXP_WORK_LEASE_SECS", LEASE.as_secs().to_string())
        .env("OXP_WORK_SWEEP_SECS", SWEEP.as_secs().to_string())
        // Shorter than the runtime's holds: a stopped (SIGTERM) server gives a delivery in
        // flight this long to end before it leaves it to be retried (the runtime here cannot
        // answer while the test waits for the process to exit).
        .env(
            "OXP_RAP_ATTEMPT_TIMEOUT_MS",
            ATTEMPT.as_millis().to_string(),
        )
        .env("OXP_LOG", "warn")
        .envs(store.iter().map(|(name, value)| (name, value)));
    let (process, line) = common::Process::start("oxp-lambda", command);
    let addr = line
        .trim()
        .strip_prefix("OXP server listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    Server { process, addr }
}

/// The variables of servers sharing a new state table on moto (one sealing key, so that each
/// opens the others' states), and `extra`.
async fn shared_table(extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let (_client, table) = common::aws::state_table().await;
    let mut shared = vec![
        ("OXP_STATE_TABLE", table),
        ("OXP_SECRET_MCP_STATE_KEY", common::STATE_KEY.to_owned()),
        ("AWS_ENDPOINT_URL", common::aws::moto_url()),
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ACCESS_KEY_ID", "testing".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "testing".to_owned()),
    ];
    shared.extend(extra.iter().map(|&(name, value)| (name, value.to_owned())));
    shared
}

async fn post(server: &Server, path: &str, body: &str, extra: &str) -> (u16, String) {
    let headers = format!(
        "Host: {}\r\nContent-Type: application/json\r\n{extra}",
        server.addr
    );
    http_raw_with(&server.addr, "POST", path, &headers, body).await
}

/// Subscribes call `id` of thread `t` to `topic` through `server`, and waits for the answer.
async fn subscribe(server: &Server, receiver: &Receiver, id: &str, topic: &str) {
    let body = json!({"operation": "Demo_Watch", "arguments": {"topic": topic}, "id": id,
                      "group_id": "t", "callback_url": receiver.url})
    .to_string();
    assert_eq!(post(server, "/invoke", &body, "").await.0, 200);
    let confirmed = receiver.wait_kind("tool_result", 1).await;
    assert_eq!(confirmed[0]["subscription"], true, "{confirmed:?}");
    // The answer reached the runtime just before the subscription became active.
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// Sends event `n` of `topic`, signed, through `server`.
async fn event(server: &Server, topic: &str, n: u32) {
    let body = json!({"topic": topic, "event": {"n": n}}).to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let signature = format!(
        "X-Hub-Signature-256: sha256={}\r\n",
        hex::encode(mac.finalize().into_bytes())
    );
    let (status, answer) = post(server, "/webhooks/demo", &body, &signature).await;
    assert_eq!(status, 202, "{answer}");
}

/// The event numbers the receiver got, in order of arrival.
fn numbers(receiver: &Receiver) -> Vec<u64> {
    receiver
        .of_kind("subscription_event")
        .iter()
        .map(|e| {
            serde_json::from_str::<Value>(e["text"].as_str().unwrap()).unwrap()["n"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

/// Waits until the receiver has `n` subscription events; how long that took.
async fn events(receiver: &Receiver, n: usize) -> Duration {
    let started = Instant::now();
    receiver.wait_kind("subscription_event", n).await;
    started.elapsed()
}

/// The stop a test makes: `true` kills (SIGKILL), `false` stops (SIGTERM).
async fn stop(server: Server, kill: bool) {
    if kill {
        let mut process = server.process;
        process.kill();
    } else {
        let (_, _) = server.process.terminate();
    }
}

/// A subscription's event in flight when the server stops is delivered after it starts again,
/// and so is every event after it: none is lost, none stalls behind the dead process's lease.
async fn an_event_in_flight_survives_a_stop_and_the_next_is_not_stalled(kill: bool) {
    let dir = common::Scratch::new("takeover");
    let path = dir.join("oxp-state.redb");
    let state = path.to_str().unwrap();
    let receiver = Receiver::ok().await;
    let server = start(&[("OXP_STATE_PATH", state)]);
    subscribe(&server, &receiver, "watch-1", "deploys").await;
    receiver.hold("subscription_event", Duration::from_secs(30));
    event(&server, "deploys", 1).await;
    events(&receiver, 1).await;
    // The delivery is in flight (the runtime holds it): the server stops now.
    stop(server, kill).await;
    let restarted = Instant::now();
    let server = start(&[("OXP_STATE_PATH", state)]);
    receiver.hold("subscription_event", Duration::ZERO);
    // Delivered again (at least once: the first copy's answer never came back), within the
    // lease and a sweep of the restart (at once after a SIGTERM, which let the work go).
    events(&receiver, 2).await;
    let took = restarted.elapsed();
    let bound = if kill { LEASE + SWEEP * 2 } else { SWEEP * 2 };
    assert!(
        took < bound + Duration::from_secs(2),
        "redelivered after {took:?}"
    );
    // The next event is not stalled behind anything.
    let sent = Instant::now();
    event(&server, "deploys", 2).await;
    events(&receiver, 3).await;
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(numbers(&receiver), [1, 1, 2]);
}

#[tokio::test]
async fn killed_with_an_event_in_flight_the_event_is_delivered_after_the_restart() {
    an_event_in_flight_survives_a_stop_and_the_next_is_not_stalled(true).await;
}

#[tokio::test]
async fn stopped_with_an_event_in_flight_the_event_is_delivered_after_the_restart() {
    an_event_in_flight_survives_a_stop_and_the_next_is_not_stalled(false).await;
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn of_two_servers_sharing_a_table_the_survivor_delivers_the_killed_ones_event_within_the_lease()
 {
    let shared = shared_table(&[]).await;
    let receiver = Receiver::ok().await;
    let first = start(&shared);
    let second = start(&shared);
    subscribe(&first, &receiver, "watch-2", "builds").await;
    receiver.hold("subscription_event", Duration::from_secs(30));
    event(&first, "builds", 1).await;
    events(&receiver, 1).await;
    stop(first, true).await;
    let killed = Instant::now();
    receiver.hold("subscription_event", Duration::ZERO);
    events(&receiver, 2).await;
    let took = killed.elapsed();
    assert!(
        took < LEASE + SWEEP * 2 + Duration::from_secs(3),
        "taken over after {took:?}"
    );
    // The survivor takes the next events through its own webhook too.
    event(&second, "builds", 2).await;
    events(&receiver, 3).await;
    assert_eq!(numbers(&receiver), [1, 1, 2]);
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn of_two_servers_sharing_a_table_the_survivor_answers_the_killed_ones_invocation() {
    let shared = shared_table(&[]).await;
    let receiver = Receiver::ok().await;
    let first = start(&shared);
    let second = start(&shared);
    // Accepted by the first, running there when it dies.
    let body = json!({"operation": "Demo_Sleep", "arguments": {"ms": 1000}, "id": "job-1",
                      "group_id": "t", "callback_url": receiver.url})
    .to_string();
    assert_eq!(post(&first, "/invoke", &body, "").await.0, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop(first, true).await;
    let killed = Instant::now();
    // Demo.Sleep may run again: the survivor takes it over once the lease lapsed, runs it and
    // answers, once.
    let results = receiver.wait_kind("tool_result", 1).await;
    let took = killed.elapsed();
    assert!(
        took < LEASE + SWEEP * 2 + Duration::from_secs(1) + Duration::from_secs(3),
        "answered after {took:?}"
    );
    let value: Value = serde_json::from_str(results[0]["text"].as_str().unwrap()).unwrap();
    assert!(value["slept_ms"].as_u64().unwrap() >= 1000, "{value}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.of_kind("tool_result").len(), 1, "once");
    drop(second);
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn of_two_servers_sharing_a_table_a_call_waiting_for_its_user_on_the_killed_one_completes_with_the_answer_given_through_the_other()
 {
    let shared = shared_table(&[]).await;
    let receiver = Receiver::ok().await;
    let first = start(&shared);
    let second = start(&shared);
    // Asked on the first, which dies while the call waits for the user.
    let body = json!({"operation": "Demo_Confirm", "id": "ask-1", "group_id": "t",
                      "arguments": {"prompt": "Ship it?", "choices": ["Yes", "No"], "default": 1},
                      "callback_url": receiver.url})
    .to_string();
    assert_eq!(post(&first, "/invoke", &body, "").await.0, 200);
    let choice = receiver.wait_kind("user_choice", 1).await.remove(0);
    let url = choice["response_url"].as_str().unwrap().to_owned();
    let path = url.split_once(&first.addr).unwrap().1.to_owned();
    stop(first, true).await;
    let killed = Instant::now();
    // Answered through the second: accepted, and the call completes with it (resumed, its
    // question found again, not taken for interrupted), asked once.
    let answer = json!({"id": "ask-1", "selected": 0}).to_string();
    let (status, text) = post(&second, &path, &answer, "").await;
    assert_eq!(status, 200, "{text}");
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    let took = killed.elapsed();
    assert!(
        took < LEASE + SWEEP * 2 + Duration::from_secs(2),
        "answered {took:?} after the kill"
    );
    let value: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"selected": 0, "choice": "Yes"}), "{result}");
    assert_eq!(receiver.of_kind("user_choice").len(), 1, "asked once");
    drop(second);
}

/// A 2026-07-28 request of `method` to `server` from a client that takes tasks and forms.
async fn mcp(server: &Server, method: &str, name: &str, mut params: Value) -> Value {
    let capabilities = json!({"elicitation": {}, "extensions": {common::tasks::TASKS: {}}});
    params["_meta"] = common::mcp::modern_meta(capabilities);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let extra = format!(
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\nMcp-Name: {name}\r\n"
    );
    let (status, text) = post(server, "/mcp", &body.to_string(), &extra).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str::<Value>(&text).unwrap()["result"].clone()
}

/// Task `id`'s status as `server` reads it, polled until it is `status` (10 s at most).
async fn task_until(server: &Server, id: &str, status: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let task = mcp(server, "tasks/get", id, json!({"taskId": id})).await;
        if task["status"] == status {
            return task;
        }
        assert!(Instant::now() < end, "never {status}: {task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn of_two_servers_sharing_a_table_a_tasks_question_is_answered_through_either_and_its_run_goes_on()
 {
    // Demo.Confirm asks the user; this deployment serves it only as a task.
    let shared = shared_table(&[("OXP_MCP_TASK_REQUIRED", "Demo_Confirm")]).await;
    let (first, second) = (start(&shared), start(&shared));
    let arguments = json!({"prompt": "Deploy?", "choices": ["Yes", "No"], "default": 0});
    let created = mcp(
        &first,
        "tools/call",
        "Demo_Confirm",
        json!({"name": "Demo_Confirm", "arguments": arguments}),
    )
    .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    // The run, in the first server, asks; the second shows the question and takes the answer.
    let waiting = task_until(&second, &id, "input_required").await;
    let key = waiting["inputRequests"]
        .as_object()
        .and_then(|r| r.keys().next().cloned())
        .unwrap_or_else(|| panic!("no input request: {waiting}"));
    let answer = json!({"action": "accept", "content": {"choice": "No"}});
    let update = json!({"taskId": id, "inputResponses": {key.as_str(): answer}});
    let answered = Instant::now();
    mcp(&second, "tasks/update", &id, update).await;
    // The run reads it from the one question service within its poll (500 ms), and ends.
    let done = task_until(&first, &id, "completed").await;
    let took = answered.elapsed();
    assert!(took < Duration::from_secs(3), "went on after {took:?}");
    assert!(done.to_string().contains("No"), "{done}");
    drop((first, second));
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn of_two_servers_sharing_a_table_a_task_cancelled_through_the_other_stops_its_tool_where_it_runs()
 {
    let shared = shared_table(&[]).await;
    // One call at a time in the first server, each given 20 s: while the task's run holds the
    // slot, a call waits for it. Its call lines say how each call ended.
    let mut one_slot = shared.clone();
    one_slot.extend([
        ("OXP_MAX_CONCURRENT_CALLS", "1".to_owned()),
        ("OXP_TOOL_TIMEOUT_MS", "20000".to_owned()),
        ("OXP_LOG", "warn,oxp::call=info".to_owned()),
    ]);
    let (first, second) = (start(&one_slot), start(&shared));
    let created = mcp(
        &first,
        "tools/call",
        "Demo_Sleep",
        json!({"name": "Demo_Sleep", "arguments": {"ms": 600000}}),
    )
    .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    task_until(&second, &id, "working").await;
    let cancelled = Instant::now();
    mcp(&second, "tasks/cancel", &id, json!({"taskId": id})).await;
    // The run, in the first server, learns of it and stops its tool: the slot is free for the
    // next call, which waited for it.
    let add = r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":2}}}"#;
    let (_, answer) = post(&first, "/tools/call", add, "").await;
    let took = cancelled.elapsed();
    assert!(answer.contains(r#""value":3"#), "{answer}");
    assert!(
        took < Duration::from_secs(2),
        "the tool stopped {took:?} after the cancel"
    );
    // It ran there and was stopped (Demo.Sleep answers how long it slept): not a run the
    // cancel kept from starting, which would free the slot as soon and log no call.
    let logs = first.process.output_holding(r#"tool_id="Demo.Sleep"#).await;
    assert!(logs.contains(r#"tool_id="Demo.Sleep"#), "{logs}");
    task_until(&first, &id, "cancelled").await;
    drop((first, second));
}
