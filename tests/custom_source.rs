//! An event source written outside the crate (examples/event_source, from the public API
//! only) feeds the same subscriptions as the built-in webhooks: a RAP call opens one with
//! `Ops.Watch`, an event posted to the source's own route reaches its callback, a resend is
//! taken once, and without durable state the source says so rather than drop the event.

use crate::common;

#[path = "../examples/event_source/source.rs"]
mod event_source;

use common::receiver::Receiver;
use common::*;
use event_source::{OpsEvents, watch_tool};
use oxp_lambda::{App, Registry};
use serde_json::{Value, json};

fn app_with(vars: &[(&str, &str)]) -> App {
    let mut all = vec![("OXP_RAP_ENDPOINT", "http://127.0.0.1:9/invoke")];
    all.extend_from_slice(vars);
    let registry = Registry::builder().tool(watch_tool()).build().unwrap();
    build(
        App::builder(registry)
            .config(test_config_with(&all))
            .protocol(OpsEvents),
    )
}

async fn event(app: &App, topic: &str, id: Option<&str>, body: &str) -> Reply {
    let mut request = axum::http::Request::post(format!("/events/{topic}"))
        .header("content-type", "application/json");
    if let Some(id) = id {
        request = request.header("event-id", id);
    }
    send(
        app,
        request
            .body(axum::body::Body::from(body.to_owned()))
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn events_posted_to_a_source_of_ones_own_reach_the_subscriptions_of_their_topic_once() {
    let app = app_with(&[]);
    let receiver = Receiver::ok().await;
    let invocation = json!({"operation": "Ops_Watch", "arguments": {"topic": "deploys"},
        "id": "watch-1", "group_id": "t", "callback_url": receiver.url});
    let reply = post(&app, "/invoke", invocation.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let confirmed = receiver.wait_kind("tool_result", 1).await;
    assert_eq!(confirmed[0]["subscription"], true, "{}", confirmed[0]);

    let sent = event(&app, "deploys", Some("e-1"), r#"{"to": "prod"}"#).await;
    assert_eq!(
        (sent.status.as_u16(), sent.json.clone()),
        (202, json!({"accepted": 1}))
    );
    let events = receiver.wait_kind("subscription_event", 1).await;
    let text: Value = serde_json::from_str(events[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, json!({"to": "prod"}));
    // The same id again (a resend) is taken by nobody; another topic has no subscription.
    let again = event(&app, "deploys", Some("e-1"), r#"{"to": "prod"}"#).await;
    assert_eq!(again.json, json!({"accepted": 0}));
    let other = event(&app, "builds", Some("e-2"), "{}").await;
    assert_eq!(other.json, json!({"accepted": 0}));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(receiver.of_kind("subscription_event").len(), 1);
}

#[tokio::test]
async fn a_source_of_ones_own_refuses_what_it_cannot_keep_in_its_own_words() {
    let app = app_with(&[]);
    let no_id = event(&app, "deploys", None, "{}").await;
    assert_eq!(no_id.status, 400, "{}", no_id.text);
    let not_json = event(&app, "deploys", Some("e"), "not json").await;
    assert_eq!(not_json.status, 400, "{}", not_json.text);
    let long_topic = "t".repeat(129);
    let long = event(&app, &long_topic, Some("e"), "{}").await;
    assert_eq!(long.status, 400, "{}", long.text);
    assert!(
        !long.text.contains(&long_topic),
        "nothing the caller sent comes back"
    );
    // No durable state: no subscriptions, said as such.
    let stateless = app_with(&[("OXP_STATE", "off")]);
    let off = event(&stateless, "deploys", Some("e"), "{}").await;
    assert_eq!(off.status, 503, "{}", off.text);
}
