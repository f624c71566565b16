//! A subscription's lifetime and share (the third security read): it lives on while its events
//! come, however long past `OXP_SUBSCRIPTION_TTL_SECS` from its opening; one that takes no event
//! for that long ends, and a last `final` event tells its caller; a caller holds at most
//! `OXP_SUBSCRIPTION_MAX_PER_CALLER` live subscriptions. An event its callback does not take is
//! never dropped: retried as a result is, else kept whole in the dead letters.

use crate::talk_back::{app_with, event, invocation, status_of, subscribe};

use crate::common::receiver::Receiver;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn short_lived(vars: &[(&str, &str)]) -> crate::common::App {
    let mut all = vec![
        ("OXP_SUBSCRIPTION_TTL_SECS", "2"),
        ("OXP_WORK_SWEEP_SECS", "1"),
    ];
    all.extend_from_slice(vars);
    app_with(&all, |_| {})
}

#[tokio::test]
async fn a_subscription_that_keeps_taking_events_lives_past_its_lifetime_from_its_opening() {
    let app = short_lived(&[]);
    let receiver = Receiver::ok().await;
    subscribe(&app, &receiver, "call-live", json!({"topic": "ticks"})).await;
    // An event every 700 ms for 4.2 s: twice its lifetime from its opening.
    for n in 1..=6 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(event(&app, "ticks", n).await.status, 202);
    }
    let events = receiver.wait_kind("subscription_event", 6).await;
    assert!(events.iter().all(|e| e["final"] != true), "{events:?}");
}

#[tokio::test]
async fn a_subscription_that_takes_no_event_for_its_lifetime_ends_with_a_final_event() {
    let app = short_lived(&[]);
    let receiver = Receiver::ok().await;
    let started = Instant::now();
    subscribe(&app, &receiver, "call-idle", json!({"topic": "quiet"})).await;
    let last = receiver.wait_kind("subscription_event", 1).await.remove(0);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "not before its lifetime"
    );
    assert_eq!(last["final"], true, "{last}");
    assert_eq!(last["tool_call_id"], "call-idle");
    let text: Value = serde_json::from_str(last["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["ended"], "expired", "{text}");
    // Nothing follows it.
    assert_eq!(event(&app, "quiet", 1).await.json["accepted"], 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.of_kind("subscription_event").len(), 1);
}

/// The `tool_result` of call `id` (10 s at most).
async fn result_of(receiver: &Receiver, id: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(found) = receiver
            .of_kind("tool_result")
            .into_iter()
            .find(|r| r["id"] == id)
        {
            return found;
        }
        assert!(Instant::now() < end, "no result for {id}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn four_subscriptions_sent_in_a_row_into_a_share_of_two_open_exactly_two() {
    let app = app_with(&[("OXP_SUBSCRIPTION_MAX_PER_CALLER", "2")], |_| {});
    let receiver = Receiver::ok().await;
    // All four acknowledged before any runs: their opens race for the share.
    let ids = ["row-1", "row-2", "row-3", "row-4"];
    for id in ids {
        let body = invocation(&receiver, id, "Demo_Watch", json!({"topic": "row"}));
        assert_eq!(crate::common::post(&app, "/invoke", body).await.status, 200);
    }
    let mut opened = 0;
    for id in ids {
        if result_of(&receiver, id).await["subscription"] == true {
            opened += 1;
        }
    }
    assert_eq!(
        opened,
        2,
        "exactly the share: {:?}",
        receiver.of_kind("tool_result")
    );
}

#[tokio::test]
async fn a_caller_holds_at_most_its_share_of_live_subscriptions() {
    let app = app_with(&[("OXP_SUBSCRIPTION_MAX_PER_CALLER", "2")], |_| {});
    let receiver = Receiver::ok().await;
    for id in ["call-s1", "call-s2"] {
        let body = invocation(&receiver, id, "Demo_Watch", json!({"topic": "many"}));
        assert_eq!(crate::common::post(&app, "/invoke", body).await.status, 200);
        let confirmed = result_of(&receiver, id).await;
        assert_eq!(confirmed["subscription"], true, "{confirmed}");
    }
    let body = invocation(&receiver, "call-s3", "Demo_Watch", json!({"topic": "many"}));
    assert_eq!(crate::common::post(&app, "/invoke", body).await.status, 200);
    let refused = result_of(&receiver, "call-s3").await;
    assert_ne!(refused["subscription"], true, "{refused}");
    // It says what to do, and that calling again as it is will not help (it said "could not
    // keep the exchange; try again", retryable, as if the server had failed).
    let text = refused["text"].as_str().unwrap();
    let (said, error) = text.split_once('\n').unwrap();
    assert_eq!(
        said, "Error: You hold as many subscriptions as you may",
        "{refused}"
    );
    let error: serde_json::Value = serde_json::from_str(error).unwrap();
    assert_eq!(error["error"]["kind"], "rate_limited", "{error}");
    assert_eq!(error["error"]["can_retry"], false, "{error}");
    assert!(
        error["error"]["additional_prompt_content"]
            .as_str()
            .is_some_and(|t| t.starts_with("Cancel a call that holds one of your subscriptions")),
        "{error}"
    );
    // One ended, room for another.
    let cancel = json!({"thread_id": "thread-1", "tool_call_id": "call-s1"}).to_string();
    assert_eq!(status_of(&app, "/cancel_tool_call", cancel).await, 200);
    let body = invocation(&receiver, "call-s4", "Demo_Watch", json!({"topic": "many"}));
    assert_eq!(crate::common::post(&app, "/invoke", body).await.status, 200);
    let again = result_of(&receiver, "call-s4").await;
    assert_eq!(again["subscription"], true, "{again}");
}

/// An app whose dead letters go to a file of its own (`vars` set too), and that file.
fn with_dead_letters(vars: &[(&str, &str)]) -> (crate::common::App, std::path::PathBuf) {
    let file = std::env::temp_dir().join(format!("oxp-dead-{}.jsonl", uuid::Uuid::new_v4()));
    let path = file.display().to_string();
    let mut all = vec![("OXP_RAP_DEAD_LETTER_FILE", path.as_str())];
    all.extend_from_slice(vars);
    (app_with(&all, |_| {}), file)
}

/// The dead letters in `file` once there are `n` (5 s at most).
async fn letters(file: &std::path::Path, n: usize) -> Vec<Value> {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let letters: Vec<Value> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if letters.len() >= n {
            return letters;
        }
        assert!(
            Instant::now() < end,
            "{} dead letters of {n}",
            letters.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The number an event sent by [`event`] carries.
fn n_of(event: &Value) -> u64 {
    let text: Value = serde_json::from_str(event["text"].as_str().unwrap()).unwrap();
    text["n"].as_u64().unwrap()
}

#[tokio::test]
async fn an_event_its_callback_refuses_is_dead_lettered_whole_and_the_next_one_still_goes_out() {
    let (app, file) = with_dead_letters(&[]);
    // The confirmation taken, the first event refused for good (a 4xx is not retried).
    let receiver = Receiver::start(&[(200, None), (400, None)], 200).await;
    subscribe(&app, &receiver, "call-refused", json!({"topic": "refused"})).await;
    for n in 1..=2 {
        assert_eq!(event(&app, "refused", n).await.status, 202);
    }
    let events = receiver.wait_kind("subscription_event", 2).await;
    assert_eq!(
        events.iter().map(n_of).collect::<Vec<_>>(),
        [1, 2],
        "in order"
    );
    let letters = letters(&file, 1).await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    let reason = letters[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("400") && reason.contains("not retried"),
        "{reason}"
    );
    assert_eq!(letters[0]["message"], events[0], "the event kept whole");
    assert_eq!(letters[0]["callback_url"], receiver.url.as_str());
    let _ = std::fs::remove_file(file);
}

/// How long after the first `subscription_event` the second arrived.
fn resent_after(receiver: &Receiver) -> Duration {
    let at: Vec<Instant> = receiver
        .hits()
        .into_iter()
        .filter(|h| h.body["type"] == "subscription_event")
        .map(|h| h.at)
        .collect();
    at[1] - at[0]
}

#[tokio::test]
async fn an_event_whose_callback_asks_for_time_is_sent_again_after_it_and_once_taken_not_again() {
    let (app, file) = with_dead_letters(&[("OXP_RAP_DELIVERY_ATTEMPTS", "3")]);
    let receiver = Receiver::start(&[(200, None), (503, Some("1"))], 200).await;
    subscribe(&app, &receiver, "call-later", json!({"topic": "later"})).await;
    assert_eq!(event(&app, "later", 1).await.status, 202);
    let events = receiver.wait_kind("subscription_event", 2).await;
    assert_eq!(events[0], events[1], "the same event again");
    let waited = resent_after(&receiver);
    assert!(
        waited >= Duration::from_millis(900),
        "Retry-After: 1 kept: {waited:?}"
    );
    assert!(waited < Duration::from_secs(4), "{waited:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        receiver.of_kind("subscription_event").len(),
        2,
        "taken: not sent again"
    );
    assert!(!file.exists(), "nothing dead-lettered");
}

/// A busy source's next event made the delivery due at once, so a callback that asked for
/// two seconds was sent the same event again within milliseconds, and again at every event.
#[tokio::test]
async fn a_new_event_does_not_cut_short_the_time_a_callback_asked_for() {
    let (app, file) = with_dead_letters(&[("OXP_RAP_DELIVERY_ATTEMPTS", "3")]);
    let receiver = Receiver::start(&[(200, None), (503, Some("2"))], 200).await;
    subscribe(&app, &receiver, "call-busy", json!({"topic": "busy"})).await;
    assert_eq!(event(&app, "busy", 1).await.status, 202);
    receiver.wait_kind("subscription_event", 1).await;
    // The next event comes while the callback's two seconds run.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(event(&app, "busy", 2).await.status, 202);
    let events = receiver.wait_kind("subscription_event", 3).await;
    assert_eq!(
        events.iter().map(n_of).collect::<Vec<_>>(),
        [1, 1, 2],
        "the one not taken again, then the next, in order"
    );
    let waited = resent_after(&receiver);
    assert!(
        waited >= Duration::from_millis(1900),
        "Retry-After: 2 kept though an event came: {waited:?}"
    );
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert!(!file.exists(), "nothing dead-lettered");
}

#[tokio::test]
async fn events_a_callback_never_takes_are_dead_lettered_each_whole_after_the_last_attempt() {
    let (app, file) = with_dead_letters(&[
        ("OXP_RAP_DELIVERY_ATTEMPTS", "2"),
        ("OXP_RAP_RETRY_BASE_MS", "50"),
    ]);
    let receiver = Receiver::start(&[(200, None)], 503).await;
    subscribe(&app, &receiver, "call-down", json!({"topic": "down"})).await;
    let sent = Instant::now();
    for n in 1..=2 {
        assert_eq!(event(&app, "down", n).await.status, 202);
    }
    let letters = letters(&file, 2).await;
    // Each event's two attempts 40-50 ms apart: not the sweep's 5 s (the second event's retry
    // waited for it when the first's had woken the process's first sweep).
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    let kept: Vec<u64> = letters.iter().map(|l| n_of(&l["message"])).collect();
    assert_eq!(kept, [1, 2], "each event kept, in order: {letters:?}");
    for letter in &letters {
        assert_eq!(letter["message"]["tool_call_id"], "call-down");
        assert_eq!(
            letter["reason"],
            format!(
                "callback {} answered 503 Service Unavailable; gave up after 2 attempts",
                receiver.host()
            )
        );
    }
    // The callback back, the subscription lives on: the next event is delivered.
    receiver.answer_from_now(200);
    assert_eq!(event(&app, "down", 3).await.status, 202);
    let end = Instant::now() + Duration::from_secs(10);
    while !receiver
        .of_kind("subscription_event")
        .iter()
        .any(|e| n_of(e) == 3)
    {
        assert!(Instant::now() < end, "event 3 never delivered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = std::fs::remove_file(file);
}
