//! One call path: RAP and OXP share the invoker (its idempotency, its concurrency limit, its
//! call line).

use crate::common;
use common::rap::*;

use common::receiver::Receiver;
use common::*;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;

#[tokio::test]
async fn the_same_invocation_sent_twice_runs_its_tool_once_and_is_answered_once() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    let body = invocation(&receiver.url, "Test_Count", json!({"n": 1}));
    for _ in 0..2 {
        rig.accept(body.clone()).await;
        rig.settle().await;
    }
    assert_eq!(
        rig.tools.runs.load(Ordering::SeqCst),
        1,
        "the tool ran once"
    );
    receiver.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        receiver.hits().len(),
        1,
        "the delivered result is not delivered again"
    );
    // Another invocation id is another call.
    rig.accept(with_id(body, "call_other")).await;
    rig.settle().await;
    assert_eq!(rig.tools.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_same_id_in_another_thread_is_another_invocation_run_and_answered_as_its_own() {
    // Runtimes number their calls per thread (`call_1`, `call_2`, ...): the same id in another
    // thread was taken for the first thread's call, a replay of its result when the arguments
    // were the same (the tool never ran: an SMS never sent) and `id_reused` when not.
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    let in_thread = |group: &str, n: u64| {
        let mut body = invocation(&receiver.url, "Test_Count", json!({"n": n}));
        body["id"] = json!("call_1");
        body["group_id"] = json!(group);
        body
    };
    for (group, n) in [("thread_a", 1), ("thread_b", 1), ("thread_c", 2)] {
        rig.accept(in_thread(group, n)).await;
        rig.settle().await;
    }
    assert_eq!(
        rig.tools.runs.load(Ordering::SeqCst),
        3,
        "each thread's call ran"
    );
    let results: Vec<Value> = receiver
        .wait_for(3)
        .await
        .into_iter()
        .map(|h| h.body)
        .collect();
    for group in ["thread_a", "thread_b", "thread_c"] {
        let result = results
            .iter()
            .find(|r| r["group_id"] == group)
            .unwrap_or_else(|| panic!("no result for {group}: {results:?}"));
        assert_eq!(result["type"], "tool_result", "{result}");
        assert!(
            !result["text"].as_str().unwrap().starts_with("Error"),
            "{result}"
        );
    }
    // Within its thread the id is still one invocation: sent again, it runs nothing.
    rig.accept(in_thread("thread_b", 1)).await;
    rig.settle().await;
    assert_eq!(rig.tools.runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_repeat_of_a_dead_lettered_invocation_tries_the_callback_again() {
    let rig = Rig::new().await;
    let refusing = Receiver::start(&[], 400).await;
    let body = invocation(&refusing.url, "Test_Count", json!({"n": 1}));
    rig.accept(body.clone()).await;
    rig.settle().await;
    assert_eq!(rig.dead_letters().len(), 1, "not delivered: dead-lettered");
    // The runtime sends it again: the stored result is offered to the callback again.
    rig.accept(body).await;
    rig.settle().await;
    assert_eq!(refusing.hits().len(), 2);
    assert_eq!(
        rig.tools.runs.load(Ordering::SeqCst),
        1,
        "the tool ran once"
    );
}

#[tokio::test]
async fn one_concurrency_limit_holds_for_every_protocol_together() {
    let rig = Rig::build(
        |c| {
            c.max_concurrent_calls = 1;
            c.tool_timeout = Some(Duration::from_millis(300));
        },
        |r| r.tool_timeout = Some(Duration::from_secs(20)),
    )
    .await;
    let receiver = Receiver::ok().await;
    // An async run takes the only slot and holds it.
    rig.accept(invocation(&receiver.url, "Test_Wait", json!({})))
        .await;
    let add = json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}});
    let mut busy = None;
    for _ in 0..50 {
        let reply = call(&rig.app, add.clone()).await;
        if reply.json["result"]["success"] == false {
            busy = Some(reply);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let busy = busy.expect("an OXP call finds the async run holding the slot");
    assert_eq!(busy.status, 200);
    assert_eq!(busy.json["result"]["error"]["can_retry"], true);
    assert_eq!(busy.json["result"]["error"]["retry_after_ms"], 1000);
    // Once the async run finishes, the slot is free again.
    rig.tools.gate.add_permits(1);
    rig.settle().await;
    let reply = call(&rig.app, add).await;
    assert_eq!(reply.json["result"]["value"], 3);
}

#[tokio::test]
async fn every_protocol_writes_the_same_call_log_line_naming_itself() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.subscriber());
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    rig.accept(add(&receiver.url)).await;
    rig.settle().await;
    let reply = call(
        &rig.app,
        json!({"request": {"tool_id": "Calculator_Add", "call_id": "c-1", "input": {"a": 1, "b": 2}}}),
    )
    .await;
    assert_eq!(reply.status, 200);
    let logs = captured.text();
    let lines: Vec<Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["target"] == "oxp::call")
        .map(|l| l["fields"].clone())
        .collect();
    let of = |protocol: &str| {
        lines
            .iter()
            .find(|l| l["protocol"] == protocol)
            .unwrap_or_else(|| panic!("no {protocol} call line in {logs}"))
            .clone()
    };
    let (oxp, rap) = (of("oxp"), of("rap"));
    let keys = |l: &Value| {
        l.as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(keys(&oxp), keys(&rap), "the same fields: {oxp} / {rap}");
    for line in [&oxp, &rap] {
        assert_eq!(line["tool_id"], "Calculator.Add@1.0.0");
        assert_eq!(line["outcome"], "success");
        assert!(line["duration_ms"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(oxp["call_id"], "c-1");
    assert_eq!(
        rap["call_id"], "call_abc123",
        "the invocation id is the call id"
    );
}
