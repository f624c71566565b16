//! Signed webhooks against the attacks of the third security read (docs/security.md): a
//! captured event replayed with fresh headers, an event larger than the store keeps, empty and
//! short signing keys, a tool declaring the key under another spelling, and forged events for a
//! source whose key does not exist.

use crate::common;
use crate::talk_back::{SECRET, app, sign, subscribe, webhook};

use common::receiver::Receiver;
use common::*;
use oxp_lambda::stores::{SecretError, SecretErrorKind, SecretFuture, SecretSource};
use oxp_lambda::{App, Registry, Secret, StartError, Tool};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// `body` signed as the demo source does, sent with `delivery` as GitHub's unsigned delivery id.
async fn signed_with_delivery(app: &App, body: &str, delivery: &str) -> Reply {
    let request = axum::http::Request::post("/webhooks/demo")
        .header("content-type", "application/json")
        .header("x-hub-signature-256", sign(body.as_bytes()))
        .header("x-github-delivery", delivery)
        .body(axum::body::Body::from(body.to_owned()))
        .unwrap();
    send(app, request).await
}

#[tokio::test]
async fn a_captured_event_replayed_with_fresh_delivery_headers_is_taken_once() {
    let app = app();
    let receiver = Receiver::ok().await;
    subscribe(&app, &receiver, "call-replay", json!({"topic": "deploys"})).await;
    let body = json!({"topic": "deploys", "event": {"to": "prod"}}).to_string();
    let first = signed_with_delivery(&app, &body, "delivery-1").await;
    assert_eq!(
        (first.status.as_u16(), first.json["accepted"].clone()),
        (202, json!(1))
    );
    for delivery in ["delivery-2", "delivery-3", "delivery-4"] {
        let replay = signed_with_delivery(&app, &body, delivery).await;
        assert_eq!(replay.status, 202, "{}", replay.text);
        assert_eq!(replay.json["accepted"], 0, "a replay takes nothing");
    }
    receiver.wait_kind("subscription_event", 1).await;
    // A subscription opened after the event does not get it replayed either.
    let later = Receiver::ok().await;
    subscribe(&app, &later, "call-later", json!({"topic": "deploys"})).await;
    let replay = signed_with_delivery(&app, &body, "delivery-5").await;
    assert_eq!(replay.json["accepted"], 0);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.of_kind("subscription_event").len(), 1);
    assert!(later.of_kind("subscription_event").is_empty());
}

#[tokio::test]
async fn an_event_larger_than_the_store_keeps_is_refused_413_and_marks_nothing() {
    let app = app();
    let receiver = Receiver::ok().await;
    subscribe(&app, &receiver, "call-large", json!({"topic": "big"})).await;
    // Over 256 KiB, the most the store keeps of one value: 413 at once, never a 503 after a
    // mark that would swallow the resend.
    let large = json!({"topic": "big", "event": "x".repeat(300 * 1024)}).to_string();
    let reply = webhook(&app, "demo", &large, Some(&sign(large.as_bytes()))).await;
    assert_eq!(reply.status, 413, "{}", reply.text);
    let fits = json!({"topic": "big", "event": "x".repeat(200 * 1024)}).to_string();
    let reply = webhook(&app, "demo", &fits, Some(&sign(fits.as_bytes()))).await;
    assert_eq!(reply.status, 202, "{}", reply.text);
    receiver.wait_kind("subscription_event", 1).await;
    // The setting cannot promise more than the store keeps.
    let config = test_config_with(&[("OXP_WEBHOOK_MAX_BYTES", "1048576")]);
    let refused = App::builder(example_tools::registry().unwrap())
        .config(config)
        .secret("DEMO_WEBHOOK_SECRET", SECRET)
        .build()
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, StartError::Config(e) if e.to_string().contains("OXP_WEBHOOK_MAX_BYTES")),
        "{refused}"
    );
}

async fn start_with_key(key: &str) -> Result<App, StartError> {
    App::builder(example_tools::registry().unwrap())
        .config(test_config())
        .secret("DEMO_WEBHOOK_SECRET", key)
        .build()
        .await
}

#[tokio::test]
async fn an_empty_or_short_signing_key_is_refused_at_start_naming_its_variable() {
    for key in ["", "short"] {
        let refused = start_with_key(key).await.unwrap_err().to_string();
        assert!(
            refused.contains("OXP_SECRET_DEMO_WEBHOOK_SECRET"),
            "{key:?}: {refused}"
        );
    }
    assert!(start_with_key(SECRET).await.is_ok());
}

/// A source that fetches (nothing held in memory, as Secrets Manager), counting its fetches.
#[derive(Debug, Default)]
struct Fetching {
    value: Option<&'static str>,
    fetches: AtomicUsize,
}

impl SecretSource for Fetching {
    fn holds(&self, id: &str) -> bool {
        id == "DEMO_WEBHOOK_SECRET"
    }

    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let found = self
            .value
            .map(Secret::new)
            .ok_or_else(|| SecretError::new(id, SecretErrorKind::NotFound, "ResourceNotFound"));
        Box::pin(std::future::ready(found))
    }
}

fn app_over(source: Arc<Fetching>) -> App {
    build(
        App::builder(example_tools::registry().unwrap())
            .config(test_config())
            .secret_source(source),
    )
}

#[tokio::test]
async fn a_short_key_fetched_later_verifies_nothing() {
    let source = Arc::new(Fetching {
        value: Some("short"),
        ..Fetching::default()
    });
    let app = app_over(source);
    let body = json!({"topic": "t", "event": 1}).to_string();
    let mut mac = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(b"short").unwrap();
    hmac::Mac::update(&mut mac, body.as_bytes());
    let signature = format!(
        "sha256={}",
        hex::encode(hmac::Mac::finalize(mac).into_bytes())
    );
    let reply = webhook(&app, "demo", &body, Some(&signature)).await;
    assert_eq!(reply.status, 401, "{}", reply.text);
}

#[tokio::test]
async fn forged_events_for_a_source_without_a_key_ask_the_secret_store_once() {
    let source = Arc::new(Fetching::default());
    let app = app_over(source.clone());
    let body = json!({"topic": "t", "event": 1}).to_string();
    for _ in 0..5 {
        let reply = webhook(&app, "demo", &body, Some(&sign(body.as_bytes()))).await;
        assert_eq!(reply.status, 401);
    }
    assert_eq!(
        source.fetches.load(Ordering::SeqCst),
        1,
        "a missing key is remembered as missing"
    );
}

#[tokio::test]
async fn a_tool_declaring_the_signing_key_under_another_spelling_is_refused_at_start() {
    for spelling in [
        "demo-webhook-secret",
        "Demo.Webhook.Secret",
        "DEMO_WEBHOOK_SECRET",
    ] {
        let tool = Tool::builder("Leak.Key", "1.0.0")
            .secret(spelling)
            .handler(|_: oxp_lambda::NoInput, _| async { Ok::<_, oxp_lambda::ToolError>(0) });
        let registry = Registry::builder().tool(tool).build().unwrap();
        let refused = App::builder(registry)
            .config(test_config())
            .secret("DEMO_WEBHOOK_SECRET", SECRET)
            .build()
            .await
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("signing key of event source 'demo'"),
            "{spelling}: {refused}"
        );
    }
}

#[tokio::test]
async fn a_source_flooding_distinct_events_holds_at_most_its_marks_and_a_replay_stays_refused() {
    let app = crate::talk_back::app_with(&[("OXP_EVENT_MARKS_PER_SOURCE", "4")], |_| {});
    let receiver = Receiver::ok().await;
    subscribe(&app, &receiver, "call-flood", json!({"topic": "flood"})).await;
    let body = |n: u32| json!({"topic": "flood", "event": {"n": n}}).to_string();
    let mut taken = 0;
    let mut refused = 0;
    for n in 0..12 {
        let reply = webhook(&app, "demo", &body(n), Some(&sign(body(n).as_bytes()))).await;
        match reply.status.as_u16() {
            202 => taken += 1,
            429 => {
                refused += 1;
                assert!(reply.headers.contains_key("retry-after"), "{}", reply.text);
            }
            other => panic!("{other}: {}", reply.text),
        }
    }
    // Each taken event holds a mark; past the source's table, events wait for marks to expire.
    assert!(
        taken <= 4 && refused >= 8,
        "{taken} taken, {refused} refused"
    );
    receiver.wait_kind("subscription_event", taken).await;
    // The first event replayed later reaches nobody, not even a subscription opened since.
    let later = Receiver::ok().await;
    subscribe(&app, &later, "call-since", json!({"topic": "flood"})).await;
    let replay = webhook(&app, "demo", &body(0), Some(&sign(body(0).as_bytes()))).await;
    assert_eq!(
        (replay.status.as_u16(), replay.json["accepted"].clone()),
        (202, json!(0))
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(later.of_kind("subscription_event").is_empty());
}

/// `Repo.Watch {topic}`: subscribes to `topic` of the `github` source.
fn repo_watch() -> Tool {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Input {
        topic: String,
    }
    Tool::builder("Repo.Watch", "1.0.0")
        .description("Subscribes to a topic of GitHub's events.")
        .handler(|input: Input, ctx: oxp_lambda::ToolContext| async move {
            let subscribe = oxp_lambda::Subscribe {
                source: "github".into(),
                topic: input.topic,
                max_events: None,
            };
            let subscription = ctx.subscribe(subscribe).await?;
            Ok::<_, oxp_lambda::ToolError>(json!({"subscription": subscription.id}))
        })
}

/// A GitHub delivery of `event` with `body` as `content_type`, signed.
async fn github(app: &App, event: &str, content_type: &str, body: &str) -> Reply {
    let request = axum::http::Request::post("/webhooks/github")
        .header("content-type", content_type)
        .header("x-github-event", event)
        .header("x-hub-signature-256", sign(body.as_bytes()))
        .body(axum::body::Body::from(body.to_owned()))
        .unwrap();
    send(app, request).await
}

#[tokio::test]
async fn github_form_deliveries_reach_their_repository_and_an_organizations_ping_is_taken() {
    // A webhook made in GitHub's settings sends `application/x-www-form-urlencoded` unless told
    // otherwise (the JSON in the form's `payload`): every delivery was refused 400, "not JSON".
    // An organization's hook names no repository: its `ping` was refused, the hook shown failing.
    let config = test_config_with(&[("OXP_RAP_ENDPOINT", "http://127.0.0.1:9/invoke")]);
    let registry = Registry::builder().tool(repo_watch()).build().unwrap();
    let app = build(
        App::builder(registry)
            .config(config)
            .secret("GITHUB_WEBHOOK_SECRET", SECRET),
    );
    let receiver = Receiver::ok().await;
    let invocation = json!({"operation": "Repo_Watch", "arguments": {"topic": "acme/api/push"},
        "id": "watch-1", "group_id": "t", "callback_url": receiver.url});
    assert_eq!(
        post(&app, "/invoke", invocation.to_string()).await.status,
        200
    );
    receiver.wait_kind("tool_result", 1).await;

    let payload = json!({"ref": "refs/heads/main", "repository": {"full_name": "acme/api"}});
    let form: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &payload.to_string())
        .finish();
    let reply = github(&app, "push", "application/x-www-form-urlencoded", &form).await;
    assert_eq!(
        (reply.status.as_u16(), reply.json.clone()),
        (202, json!({"accepted": 1}))
    );
    let events = receiver.wait_kind("subscription_event", 1).await;
    let text: serde_json::Value =
        serde_json::from_str(events[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, payload, "the event is the payload, not the form");

    let ping = json!({"zen": "Keep it simple.", "hook_id": 1, "organization": {"login": "acme"}});
    let reply = github(&app, "ping", "application/json", &ping.to_string()).await;
    assert_eq!(
        (reply.status.as_u16(), reply.json.clone()),
        (202, json!({"accepted": 0}))
    );
    let reply = github(&app, "push", "application/x-www-form-urlencoded", "other=1").await;
    assert_eq!(
        reply.status, 400,
        "a form without a payload: {}",
        reply.text
    );
}
