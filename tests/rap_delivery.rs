//! RAP's delivery of a result to its callback: retries and their bounds, dead letters, and
//! what a shutdown leaves (against a callback receiver on 127.0.0.1).

use crate::common;
use common::rap::*;

use common::receiver::Receiver;
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test]
async fn a_receiver_failing_twice_then_succeeding_gets_the_result_on_the_third_attempt() {
    let rig = Rig::new().await;
    let receiver = Receiver::start(&[(503, None), (500, None)], 200).await;
    rig.accept(add(&receiver.url)).await;
    rig.settle().await;
    let hits = receiver.hits();
    assert_eq!(hits.len(), 3);
    assert!(
        hits.iter().all(|h| h.body == hits[0].body),
        "the same message each time"
    );
    assert!(
        hits[1].at - hits[0].at >= Duration::from_millis(10),
        "backoff before retrying"
    );
    assert!(rig.dead_letters().is_empty());
}

#[tokio::test]
async fn network_errors_are_retried() {
    let captured = common::Captured::global();
    let rig = Rig::new().await;
    // A port nothing listens on: every attempt is a connection error.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let place = closed.local_addr().unwrap().to_string();
    // A token no random id in a log line (moto's request ids among them) spells by chance.
    let url = format!("http://{place}/callback?token=never-logged-callback-token");
    drop(closed);
    rig.accept(add(&url)).await;
    rig.settle().await;
    let letters = rig.dead_letters();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0]["attempts"], 4);
    // The receiver and what failed, for the operator who finds it among many.
    let reason = letters[0]["reason"].as_str().unwrap();
    let unreachable = format!("callback {place} unreachable: Connection refused");
    assert!(reason.starts_with(&unreachable), "{reason}");
    // Each retry's line names its work (one id across its attempts) and the same reason,
    // never the URL's path or query.
    let retries: Vec<Value> = captured
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| {
            l["fields"]["message"] == "work to be retried"
                && l["fields"]["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with(&unreachable))
        })
        .collect();
    // This work's are the last (another test's closed port may have been this one before).
    let last = retries.last().expect("retry lines");
    let id = last["fields"]["work_id"].as_str().expect("the work's id");
    let attempts: Vec<&Value> = retries
        .iter()
        .filter(|l| l["fields"]["work_id"] == id)
        .map(|l| &l["fields"]["attempt"])
        .collect();
    assert_eq!(attempts, [1, 2, 3], "{retries:?}");
    // A retry by the runner that kept the result is no takeover.
    let text = captured.text();
    let leaked: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("never-logged-callback-token"))
        .collect();
    assert!(leaked.is_empty(), "{leaked:?}");
    let taken_over = text
        .lines()
        .find(|l| l.contains("work taken over") && l.contains(id));
    assert!(taken_over.is_none(), "{taken_over:?}");
    // The invocation's audit line names the same work, joining it to the retries.
    let audit = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["target"] == "oxp::rap::audit" && l["fields"]["work_id"] == id)
        .expect("the invocation's audit line, naming its work");
    assert_eq!(audit["fields"]["delivery"], "dead_lettered");
    let reason = audit["fields"]["reason"].as_str().unwrap();
    assert!(reason.starts_with(&unreachable), "{reason}");
}

#[tokio::test]
async fn a_receiver_that_never_succeeds_leaves_a_dead_letter_with_the_reason() {
    let rig = Rig::new().await;
    let receiver = Receiver::start(&[], 503).await;
    rig.accept(add(&receiver.url)).await;
    rig.settle().await;
    let hits = receiver.hits();
    assert_eq!(hits.len(), 4, "bounded in attempts");
    let letters = rig.dead_letters();
    assert_eq!(letters.len(), 1);
    let letter = &letters[0];
    let reason = letter["reason"].as_str().unwrap();
    assert!(
        reason.contains("503") && reason.contains("4 attempts"),
        "{reason}"
    );
    assert_eq!(letter["attempts"], 4);
    assert_eq!(letter["callback_url"], receiver.url.as_str());
    assert_eq!(letter["operation"], "Calculator_Add");
    assert_eq!(
        letter["message"], hits[0].body,
        "the undelivered message is kept whole"
    );
}

#[tokio::test]
async fn delivery_is_bounded_in_total_time() {
    let rig = Rig::with_rap(|r| {
        r.retry.max_attempts = 1000;
        r.retry.total = Duration::from_millis(300);
    })
    .await;
    let receiver = Receiver::start(&[], 500).await;
    rig.accept(add(&receiver.url)).await;
    rig.settle().await;
    let letters = rig.dead_letters();
    assert!(
        letters[0]["reason"]
            .as_str()
            .unwrap()
            .contains("time ran out")
    );
    assert!(receiver.hits().len() < 1000);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let rig = Rig::new().await;
    let receiver = Receiver::start(&[], 400).await;
    rig.accept(add(&receiver.url)).await;
    rig.settle().await;
    assert_eq!(receiver.hits().len(), 1);
    let letters = rig.dead_letters();
    assert!(
        letters[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not retried")
    );
}

#[tokio::test]
async fn too_many_requests_is_retried_after_the_retry_after_delay() {
    let rig = Rig::new().await;
    let receiver = Receiver::start(&[(429, Some("1"))], 200).await;
    rig.accept(add(&receiver.url)).await;
    rig.settle().await;
    let hits = receiver.hits();
    assert_eq!(hits.len(), 2);
    assert!(
        hits[1].at - hits[0].at >= Duration::from_millis(950),
        "Retry-After: 1 is honoured"
    );
    assert!(rig.dead_letters().is_empty());
}

#[tokio::test]
async fn a_retry_after_beyond_the_longest_wait_gives_up_at_once_with_a_dead_letter_saying_so() {
    let rig = Rig::with_rap(|r| r.retry.max_delay = Duration::from_secs(2)).await;
    // An hour: waited out, the result would reach a runtime that gave the call up long ago.
    let receiver = Receiver::start(&[(503, Some("3600"))], 200).await;
    rig.accept(add(&receiver.url)).await;
    rig.settle().await;
    assert_eq!(receiver.hits().len(), 1, "not tried again");
    let letters = rig.dead_letters();
    assert_eq!(letters.len(), 1);
    assert_eq!(
        letters[0]["reason"],
        format!(
            "callback {} answered 503 Service Unavailable with Retry-After 3600 s, beyond the longest wait",
            receiver.host()
        )
    );
    assert_eq!(letters[0]["message"], receiver.hits()[0].body);
}

#[tokio::test]
async fn at_shutdown_running_tools_are_cancelled_and_their_results_delivered() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    // Demo.Sleep stops at its signal and says so; Test.Wait ignores it and is stopped after
    // the grace period: both callers hear, nothing is dead-lettered.
    rig.accept(with_id(
        invocation(&receiver.url, "Demo_Sleep", json!({"ms": 60000})),
        "sleep",
    ))
    .await;
    rig.accept(with_id(
        invocation(&receiver.url, "Test_Wait", json!({})),
        "wait",
    ))
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(rig.app.drain(Duration::from_millis(100)).await, 0);
    let mut results = receiver.of_kind("tool_result");
    results.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let slept: Value = serde_json::from_str(results[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(slept["cancelled"], true, "{}", results[0]);
    assert_eq!(error_of(&results[1])["kind"], "cancelled");
    assert!(rig.dead_letters().is_empty());
}

#[tokio::test]
async fn invocations_still_pending_at_shutdown_are_dead_lettered_with_their_real_outcome_not_dropped()
 {
    // A store that ends with the process (in memory): what is left at shutdown is
    // dead-lettered, with the outcome its run had, never another one.
    let rig = Rig::new().await;
    // A callback that accepts the connection and never answers: the result is still being
    // delivered when the shutdown's grace runs out.
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let callback = format!("http://{}/callback", hanging.local_addr().unwrap());
    // One that finished (its answer, 3, is being delivered) and one whose tool ignores the
    // shutdown's cancellation (stopped after the grace: its outcome is `cancelled`).
    rig.accept(with_id(add(&callback), "done")).await;
    rig.accept(with_id(
        invocation(&callback, "Test_Wait", json!({})),
        "running",
    ))
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rig.app.drain(Duration::from_millis(100)).await, 2);
    let mut letters = rig.dead_letters();
    letters.sort_by(|a, b| {
        a["message"]["id"]
            .as_str()
            .cmp(&b["message"]["id"].as_str())
    });
    assert_eq!(letters.len(), 2);
    assert!(
        letters
            .iter()
            .all(|l| l["reason"].as_str().unwrap().contains("shut down"))
    );
    assert_eq!(letters[0]["message"]["id"], "done");
    assert_eq!(letters[0]["message"]["text"], "3", "its real result");
    assert_eq!(error_of(&letters[1]["message"])["kind"], "cancelled");
}
