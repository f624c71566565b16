//! Calls that talk back and outlive their answer, over RAP as the published server pages define
//! them (hydro-project/infinity `docs/docs/rap/spec/server/`), with a runtime on loopback
//! receiving the callbacks: subscriptions fed by signed webhooks (`subscription_event`, `final`,
//! nothing after it or after a cancel), questions for the user (`user_choice` and its
//! `response_url`), views and progress (`view_update`); and over OXP, which can carry none of
//! them, a clear refusal instead of a hang.

use crate::common;

use common::receiver::Receiver;
use common::*;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::time::{Duration, Instant};

pub(crate) const SECRET: &str = "a-webhook-secret";

pub(crate) fn app_with(vars: &[(&str, &str)], edit: impl FnOnce(&mut oxp_lambda::Config)) -> App {
    let mut all = vec![("OXP_RAP_ENDPOINT", "http://127.0.0.1:9/invoke")];
    all.extend_from_slice(vars);
    let mut config = test_config_with(&all);
    edit(&mut config);
    build(
        App::builder(common::example_tools::registry().unwrap())
            .config(config)
            .secret("DEMO_WEBHOOK_SECRET", SECRET)
            .secret(common::jwt::JWT_KEY_ID, common::jwt::HS_KEY),
    )
}

pub(crate) fn app() -> App {
    app_with(&[], |_| {})
}

pub(crate) fn invocation(
    receiver: &Receiver,
    id: &str,
    operation: &str,
    arguments: Value,
) -> String {
    json!({"operation": operation, "arguments": arguments, "id": id, "group_id": "thread-1",
           "callback_url": receiver.url})
    .to_string()
}

/// The status of a POST whose answer may have no body (`/cancel_tool_call`).
pub(crate) async fn status_of(app: &App, path: &str, body: String) -> u16 {
    let request = axum::http::Request::post(path)
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body))
        .unwrap();
    tower::ServiceExt::oneshot(app.clone(), request)
        .await
        .unwrap()
        .status()
        .as_u16()
}

pub(crate) fn sign(body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// POSTs `body` to `/webhooks/{source}` with `signature` (none when `None`).
pub(crate) async fn webhook(app: &App, source: &str, body: &str, signature: Option<&str>) -> Reply {
    let mut request = axum::http::Request::post(format!("/webhooks/{source}"))
        .header("content-type", "application/json");
    if let Some(signature) = signature {
        request = request.header("x-hub-signature-256", signature);
    }
    send(
        app,
        request
            .body(axum::body::Body::from(body.to_owned()))
            .unwrap(),
    )
    .await
}

pub(crate) async fn event(app: &App, topic: &str, n: u32) -> Reply {
    let body = json!({"topic": topic, "event": {"n": n}}).to_string();
    webhook(app, "demo", &body, Some(&sign(body.as_bytes()))).await
}

/// Event `n` of `topic`, sent again while a backlog is full (a delivery is counted just after
/// the runtime took it), as a source told to retry does; for up to 2 s.
async fn taken(app: &App, topic: &str, n: u32) -> Reply {
    let mut reply = event(app, topic, n).await;
    for _ in 0..20 {
        if reply.status != 429 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        reply = event(app, topic, n).await;
    }
    reply
}

/// Subscribes call `id` to `topic` and waits for its confirmation.
pub(crate) async fn subscribe(app: &App, receiver: &Receiver, id: &str, arguments: Value) -> Value {
    let reply = post(
        app,
        "/invoke",
        invocation(receiver, id, "Demo_Watch", arguments),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let results = receiver.wait_kind("tool_result", 1).await;
    results.into_iter().find(|r| r["id"] == id).unwrap()
}

#[tokio::test]
async fn a_subscription_confirms_at_once_then_its_events_follow_in_order_and_none_after_final() {
    let app = app();
    let receiver = Receiver::ok().await;
    let confirmation = subscribe(
        &app,
        &receiver,
        "call-w1",
        json!({"topic": "builds", "max_events": 3}),
    )
    .await;
    assert_eq!(confirmation["subscription"], true, "{confirmation}");
    let text: Value = serde_json::from_str(confirmation["text"].as_str().unwrap()).unwrap();
    assert!(
        text["subscription"].as_str().unwrap().starts_with("sub_"),
        "{text}"
    );
    for n in 1..=4 {
        let reply = event(&app, "builds", n).await;
        assert_eq!(reply.status, 202, "{}", reply.text);
    }
    let events = receiver.wait_kind("subscription_event", 3).await;
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["group_id"], "thread-1");
        assert_eq!(e["tool_call_id"], "call-w1");
        let text: Value = serde_json::from_str(e["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, json!({"n": i + 1}), "in order");
        assert_eq!(
            e.get("final").is_some(),
            i == 2,
            "only the third is final: {e}"
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        receiver.of_kind("subscription_event").len(),
        3,
        "nothing after final"
    );
    // A fourth event found no live subscription.
    assert_eq!(event(&app, "builds", 5).await.json["accepted"], 0);
}

#[tokio::test]
async fn an_event_reaches_only_live_subscriptions_of_its_topic() {
    let app = app();
    let (a, b) = (Receiver::ok().await, Receiver::ok().await);
    subscribe(&app, &a, "call-a", json!({"topic": "alpha"})).await;
    subscribe(&app, &b, "call-b", json!({"topic": "beta"})).await;
    assert_eq!(event(&app, "alpha", 1).await.json["accepted"], 1);
    a.wait_kind("subscription_event", 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(b.of_kind("subscription_event").is_empty());
}

#[tokio::test]
async fn a_cancelled_subscription_and_a_closed_threads_get_nothing_more() {
    let app = app();
    let receiver = Receiver::ok().await;
    subscribe(&app, &receiver, "call-c", json!({"topic": "cancel-me"})).await;
    event(&app, "cancel-me", 1).await;
    receiver.wait_kind("subscription_event", 1).await;
    let cancel = json!({"thread_id": "thread-1", "tool_call_id": "call-c"}).to_string();
    assert_eq!(status_of(&app, "/cancel_tool_call", cancel).await, 200);
    assert_eq!(event(&app, "cancel-me", 2).await.json["accepted"], 0);
    // Another subscription of the thread ends with the thread.
    let other = Receiver::ok().await;
    subscribe(&app, &other, "call-d", json!({"topic": "closing"})).await;
    let close = json!({"thread_id": "thread-1"}).to_string();
    assert_eq!(post(&app, "/close_thread", close).await.status, 200);
    assert_eq!(event(&app, "closing", 1).await.json["accepted"], 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(receiver.of_kind("subscription_event").len(), 1);
    assert!(other.of_kind("subscription_event").is_empty());
}

#[tokio::test]
async fn an_unsigned_mis_signed_oversized_or_unknown_webhook_delivers_nothing() {
    let app = app_with(&[("OXP_WEBHOOK_MAX_BYTES", "512")], |_| {});
    let receiver = Receiver::ok().await;
    subscribe(&app, &receiver, "call-s", json!({"topic": "t"})).await;
    let body = json!({"topic": "t", "event": {"x": 1}}).to_string();
    assert_eq!(webhook(&app, "demo", &body, None).await.status, 401);
    let wrong = sign(b"another body");
    assert_eq!(webhook(&app, "demo", &body, Some(&wrong)).await.status, 401);
    assert_eq!(
        webhook(&app, "demo", &body, Some("sha256=zz")).await.status,
        401
    );
    let large = json!({"topic": "t", "event": "x".repeat(1000)}).to_string();
    let reply = webhook(&app, "demo", &large, Some(&sign(large.as_bytes()))).await;
    assert_eq!(reply.status, 413);
    let reply = webhook(&app, "nowhere", &body, Some(&sign(body.as_bytes()))).await;
    assert_eq!(reply.status, 404);
    // GitHub's source has no secret held here: nothing can be verified.
    let reply = webhook(&app, "github", &body, Some(&sign(body.as_bytes()))).await;
    assert_eq!(reply.status, 401);
    let shapeless = r#"{"no": "topic"}"#;
    let reply = webhook(&app, "demo", shapeless, Some(&sign(shapeless.as_bytes()))).await;
    assert_eq!(reply.status, 400);
    // No answer names what was sent.
    assert!(!reply.text.contains("no\""), "{}", reply.text);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(receiver.of_kind("subscription_event").is_empty());
}

#[tokio::test]
async fn an_event_sent_again_is_delivered_once() {
    let app = app();
    let receiver = Receiver::ok().await;
    subscribe(&app, &receiver, "call-r", json!({"topic": "resend"})).await;
    event(&app, "resend", 1).await;
    event(&app, "resend", 1).await;
    receiver.wait_kind("subscription_event", 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.of_kind("subscription_event").len(), 1);
}

#[tokio::test]
async fn events_are_paced_per_subscription_and_a_full_backlog_is_told_to_resend() {
    let app = app_with(
        &[
            ("OXP_SUBSCRIPTION_EVENTS_PER_MINUTE", "60"),
            ("OXP_SUBSCRIPTION_MAX_BACKLOG", "1"),
        ],
        |_| {},
    );
    let receiver = Receiver::ok().await;
    subscribe(&app, &receiver, "call-p", json!({"topic": "paced"})).await;
    let started = Instant::now();
    assert_eq!(event(&app, "paced", 1).await.status, 202);
    receiver.wait_kind("subscription_event", 1).await;
    assert_eq!(taken(&app, "paced", 2).await.status, 202);
    // The second waits its turn (one a second): the third finds the backlog full.
    let full = event(&app, "paced", 3).await;
    assert_eq!(full.status, 429, "{}", full.text);
    assert!(full.headers.contains_key("retry-after"));
    receiver.wait_kind("subscription_event", 2).await;
    assert!(started.elapsed() >= Duration::from_millis(900), "paced");
    // Sent again once there is room: taken, and delivered; nothing was lost.
    let resent = taken(&app, "paced", 3).await;
    assert_eq!(resent.status, 202, "{}", resent.text);
    let events = receiver.wait_kind("subscription_event", 3).await;
    let ns: Vec<Value> = events
        .iter()
        .map(|e| serde_json::from_str::<Value>(e["text"].as_str().unwrap()).unwrap()["n"].clone())
        .collect();
    assert_eq!(ns, [json!(1), json!(2), json!(3)]);
}

/// The token of a `user_choice`'s `response_url`.
fn response_path(choice: &Value) -> String {
    let url = choice["response_url"].as_str().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:9/user_choice_response/"),
        "{url}"
    );
    url.trim_start_matches("http://127.0.0.1:9").to_owned()
}

#[tokio::test]
async fn a_question_asks_the_user_and_the_call_answers_with_the_choice() {
    let app = app();
    let receiver = Receiver::ok().await;
    let arguments = json!({"prompt": "Deploy?", "choices": ["Yes", "No", "Later"], "default": 1});
    let body = json!({"operation": "Demo_Confirm", "arguments": arguments, "id": "call-q",
                      "call_id": "c-7", "group_id": "thread-1", "callback_url": receiver.url});
    assert_eq!(post(&app, "/invoke", body.to_string()).await.status, 200);
    let choice = receiver.wait_kind("user_choice", 1).await.remove(0);
    assert_eq!(choice["group_id"], "thread-1");
    assert_eq!(choice["id"], "call-q");
    assert_eq!(choice["call_id"], "c-7", "echoed");
    assert_eq!(choice["prompt"], "Deploy?");
    assert_eq!(choice["choices"], json!(["Yes", "No", "Later"]));
    assert_eq!(choice["default"], 1);
    let path = response_path(&choice);
    // An unknown question, or an answer for another call: refused, nothing changes.
    let wrong = post(
        &app,
        "/user_choice_response/0000",
        json!({"id": "call-q", "selected": 0}).to_string(),
    )
    .await;
    assert_eq!(wrong.status, 404);
    let other_call = post(
        &app,
        &path,
        json!({"id": "call-x", "selected": 0}).to_string(),
    )
    .await;
    assert_eq!(other_call.status, 400);
    let malformed = post(
        &app,
        &path,
        json!({"id": "call-q", "selected": "first"}).to_string(),
    )
    .await;
    assert_eq!(malformed.status, 400);
    let answered = post(
        &app,
        &path,
        json!({"id": "call-q", "selected": 2}).to_string(),
    )
    .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    let text: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, json!({"selected": 2, "choice": "Later"}));
    // A second answer is refused and never makes a second result.
    let again = post(
        &app,
        &path,
        json!({"id": "call-q", "selected": 0}).to_string(),
    )
    .await;
    assert_eq!(again.status, 409);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.of_kind("tool_result").len(), 1);
}

#[tokio::test]
async fn an_answer_out_of_range_ends_the_call_with_an_error_result() {
    let app = app();
    let receiver = Receiver::ok().await;
    let arguments = json!({"prompt": "Go?", "choices": ["Yes", "No"], "default": 0});
    post(
        &app,
        "/invoke",
        invocation(&receiver, "call-o", "Demo_Confirm", arguments),
    )
    .await;
    let choice = receiver.wait_kind("user_choice", 1).await.remove(0);
    let reply = post(
        &app,
        &response_path(&choice),
        json!({"id": "call-o", "selected": 7}).to_string(),
    )
    .await;
    assert_eq!(reply.status, 200);
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    let text = result["text"].as_str().unwrap();
    assert!(text.starts_with("Error: User choice flow failed"), "{text}");
}

#[tokio::test]
async fn a_question_is_answered_only_by_the_caller_that_invoked() {
    let app = app_with(&[], |c| c.auth = common::jwt::hs256_auth(false));
    let receiver = Receiver::ok().await;
    let arguments = json!({"prompt": "Go?", "choices": ["Yes", "No"], "default": 0});
    let request = |path: &str, body: String, subject: &str| {
        axum::http::Request::post(path)
            .header("content-type", "application/json")
            .header("authorization", common::jwt::bearer(subject))
            .body(axum::body::Body::from(body))
            .unwrap()
    };
    let invoke = request(
        "/invoke",
        invocation(&receiver, "call-a1", "Demo_Confirm", arguments),
        "alice",
    );
    assert_eq!(send(&app, invoke).await.status, 200);
    let choice = receiver.wait_kind("user_choice", 1).await.remove(0);
    let path = response_path(&choice);
    let answer = json!({"id": "call-a1", "selected": 0}).to_string();
    let mallory = send(&app, request(&path, answer.clone(), "mallory")).await;
    assert_eq!(mallory.status, 404, "another caller's answer is refused");
    let alice = send(&app, request(&path, answer, "alice")).await;
    assert_eq!(alice.status, 200);
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert!(
        result["text"].as_str().unwrap().contains("\"Yes\""),
        "{result}"
    );
}

#[tokio::test]
async fn a_question_is_answered_at_the_host_invoked_and_without_a_host_fails_at_once() {
    // No OXP_RAP_ENDPOINT: the answer's URL is the one the invocation reached.
    let app = build(
        App::builder(common::example_tools::registry().unwrap()).config(test_config_with(&[])),
    );
    let receiver = Receiver::ok().await;
    let arguments = json!({"prompt": "Go?", "choices": ["Yes", "No"], "default": 0});
    let invoke = |id: &str, host: Option<&str>| {
        let mut request =
            axum::http::Request::post("/invoke").header("content-type", "application/json");
        if let Some(host) = host {
            request = request.header("host", host);
        }
        let body = invocation(&receiver, id, "Demo_Confirm", arguments.clone());
        request.body(axum::body::Body::from(body)).unwrap()
    };
    assert_eq!(
        send(&app, invoke("call-h", Some("localhost:8443")))
            .await
            .status,
        200
    );
    let choice = receiver.wait_kind("user_choice", 1).await.remove(0);
    let url = choice["response_url"].as_str().unwrap();
    assert!(
        url.starts_with("http://localhost:8443/user_choice_response/"),
        "{url}"
    );
    let path = url.trim_start_matches("http://localhost:8443").to_owned();
    let answer = json!({"id": "call-h", "selected": 1}).to_string();
    assert_eq!(post(&app, &path, answer).await.status, 200);
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert!(
        result["text"].as_str().unwrap().contains("\"No\""),
        "{result}"
    );
    // A request without a Host (HTTP/1.0) leaves no URL to answer at: the tool is told at once
    // and the runtime gets its error, not a question it could not answer; not one to retry,
    // since no retry brings a URL.
    assert_eq!(send(&app, invoke("call-n", None)).await.status, 200);
    let result = receiver.wait_kind("tool_result", 2).await.remove(1);
    assert_eq!(result["id"], "call-n");
    let text = result["text"].as_str().unwrap();
    assert!(
        text.starts_with("Error: The tool server is not set up for what the tool asked"),
        "{text}"
    );
    assert!(text.contains(r#""kind":"unsupported""#), "{text}");
    assert!(!text.contains(r#""can_retry":true"#), "{text}");
    assert_eq!(
        receiver.of_kind("user_choice").len(),
        1,
        "only the first call asked"
    );
}

#[tokio::test]
async fn progress_and_views_reach_the_runtime_before_the_result() {
    let app = app();
    let receiver = Receiver::ok().await;
    post(
        &app,
        "/invoke",
        invocation(&receiver, "call-z", "Demo_Sleep", json!({"ms": 200})),
    )
    .await;
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert!(result["text"].as_str().unwrap().contains("slept_ms"));
    let views = receiver.of_kind("view_update");
    let progress: Vec<&Value> = views
        .iter()
        .filter(|v| v["view_type"] == "progress")
        .collect();
    assert_eq!(progress.len(), 10, "each tenth: {views:?}");
    assert_eq!(progress[9]["content"]["done"], 200.0);
    assert_eq!(progress[9]["content"]["total"], 200.0);
    let sleep = views.iter().find(|v| v["view_type"] == "sleep").unwrap();
    assert!(sleep["content"]["slept_ms"].as_u64().unwrap() >= 200);
    assert_eq!(sleep["group_id"], "thread-1");
    // Every view came before the result.
    let hits = receiver.hits();
    let last = hits
        .iter()
        .rposition(|h| h.body["type"] == "view_update")
        .unwrap();
    let result_at = hits
        .iter()
        .position(|h| h.body["type"] == "tool_result")
        .unwrap();
    assert!(last < result_at);
}

#[tokio::test]
async fn oxp_cannot_ask_the_user_or_open_a_subscription_and_says_so_at_once() {
    let app = app();
    for (tool, input) in [
        (
            "Demo.Confirm",
            json!({"prompt": "Go?", "choices": ["Yes", "No"], "default": 0}),
        ),
        ("Demo.Watch", json!({"topic": "t"})),
    ] {
        let started = Instant::now();
        let reply = call(&app, json!({"request": {"tool_id": tool, "input": input}})).await;
        assert!(started.elapsed() < Duration::from_secs(2), "no hang");
        assert_eq!(reply.json["result"]["success"], false, "{}", reply.text);
        let message = reply.json["result"]["error"]["message"].as_str().unwrap();
        assert!(message.contains("oxp protocol cannot carry"), "{message}");
        assert_ne!(
            reply.json["result"]["error"]["can_retry"], true,
            "not retryable"
        );
    }
    // What it can do without a channel, it does: Demo.Sleep answers over OXP as before.
    let reply = call(
        &app,
        json!({"request": {"tool_id": "Demo.Sleep", "input": {"ms": 10}}}),
    )
    .await;
    assert_eq!(reply.json["result"]["success"], true, "{}", reply.text);
}

#[tokio::test]
async fn without_durable_state_a_subscription_fails_as_not_set_up_and_not_to_be_retried() {
    let app = app_with(&[("OXP_STATE", "off")], |_| {});
    let receiver = Receiver::ok().await;
    post(
        &app,
        "/invoke",
        invocation(&receiver, "call-n", "Demo_Watch", json!({"topic": "t"})),
    )
    .await;
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    let error = rap_error(result["text"].as_str().unwrap()).unwrap();
    // Calling again cannot help until the operator turns state on: not retryable (it was, as
    // if the server had failed for a moment).
    assert_eq!(error["error"]["kind"], "unsupported", "{error}");
    assert_eq!(error["error"]["can_retry"], false, "{error}");
    let body = json!({"topic": "t", "event": 1}).to_string();
    let reply = webhook(&app, "demo", &body, Some(&sign(body.as_bytes()))).await;
    assert_eq!(reply.status, 503);
}
