//! What calls that talk back cost, end to end through the app (RAP's routes, the tools, the
//! durable state, the callbacks to a runtime on 127.0.0.1), for each state store: the embedded
//! database (a file in a temporary directory) and, when moto is on (`OXP_TEST_MOTO_URL`, as
//! `scripts/bench` and `scripts/test` start it), DynamoDB on moto.
//!
//! - `subscribe_round_trip`: `POST /invoke` of `Demo_Watch` until its `tool_result` reached the
//!   runtime (the subscription written, the job kept, the answer delivered, the subscription
//!   activated); each cancelled after, untimed, so the caller holds one at a time.
//! - `choice_round_trip`: `POST /invoke` of `Demo_Confirm`, its `user_choice` at the runtime,
//!   the answer POSTed to its `response_url`, until the `tool_result` reached the runtime.
//! - `fan_out_accepted/N`: one signed webhook event to a topic with N live subscriptions, until
//!   the source's 202 (every subscription has taken the event durably).
//! - `fan_out_delivered/N`: the same, until the runtime received all N `subscription_event`s.
//!
//! N is 1, 100 and 10,000 on the embedded store and 1 and 100 on moto (moto is a Python
//! emulator: its figures are its own, not DynamoDB's). In criterion's test mode (`cargo test
//! --benches`, no `--bench`) only N = 1 and 100 run. Run with `cargo bench --bench talk_back`;
//! figures are in docs/performance.md.

#[path = "../src/moto.rs"]
#[allow(dead_code)]
mod aws;
#[path = "../examples/spec_tools/tools.rs"]
mod example_tools;
#[path = "support/stores.rs"]
mod stores;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::Request;
use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use futures_util::FutureExt;
use hmac::{Hmac, Mac};
use http_body_util::BodyExt;
use oxp_lambda::{App, Config};
use serde_json::{Value, json};
use sha2::Sha256;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, Notify};
use tower::ServiceExt;

const SECRET: &str = "bench-webhook-secret";

/// The runtime on loopback: counts what arrives by kind, keeps the questions.
#[derive(Default)]
struct Runtime {
    results: AtomicUsize,
    events: AtomicUsize,
    choices: Mutex<Vec<Value>>,
    /// The first refused call: a bench that waits on results stops at once, saying why.
    refused: std::sync::Mutex<Option<String>>,
    arrived: Notify,
}

async fn callback(State(runtime): State<Arc<Runtime>>, body: Bytes) -> &'static str {
    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
    match message["type"].as_str() {
        Some("tool_result") => {
            // A failed call's `text` is a JSON-encoded `{"error": ...}`.
            let text = message["text"].as_str().unwrap_or_default();
            let failed = serde_json::from_str::<Value>(text).ok();
            if let Some(error) = failed.as_ref().and_then(|f| f.get("error")) {
                let mut refused = runtime.refused.lock().unwrap();
                refused.get_or_insert_with(|| error.to_string());
            }
            runtime.results.fetch_add(1, Ordering::SeqCst);
        }
        Some("subscription_event") => {
            runtime.events.fetch_add(1, Ordering::SeqCst);
        }
        Some("user_choice") => runtime.choices.lock().await.push(message),
        _ => {}
    }
    runtime.arrived.notify_waiters();
    "ok"
}

impl Runtime {
    async fn start() -> (Arc<Self>, String) {
        let runtime = Arc::new(Self::default());
        let router = axum::Router::new()
            .route("/callback", axum::routing::post(callback))
            .with_state(runtime.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/callback", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await });
        (runtime, url)
    }

    /// Waits until `count` reads at least `n` (5 minutes at most: then the bench fails loudly).
    async fn wait(&self, count: impl Fn(&Self) -> usize, n: usize) {
        let end = Instant::now() + Duration::from_secs(300);
        loop {
            let notified = self.arrived.notified();
            if count(self) >= n {
                return;
            }
            if let Some(refused) = self.refused.lock().unwrap().as_ref() {
                panic!("a call of the bench was refused: {refused}");
            }
            assert!(
                Instant::now() < end,
                "the runtime did not receive what it waits for"
            );
            let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
        }
    }
}

/// The app on one state store, with delivery paced far above what the benches send.
fn app(state: &[(&str, String)], aws: Option<aws_config::SdkConfig>) -> App {
    let mut vars: Vec<(&str, String)> = vec![
        ("OXP_RAP_ENDPOINT", "http://127.0.0.1:9/invoke".into()),
        ("OXP_SUBSCRIPTION_EVENTS_PER_MINUTE", "100000000".into()),
        ("OXP_SUBSCRIPTION_MAX_BACKLOG", "100000".into()),
        // One caller opens every subscription of the fan-out, and sends every event.
        ("OXP_SUBSCRIPTION_MAX_PER_CALLER", "1000000".into()),
        ("OXP_WORK_MAX_PER_CALLER", "1000000".into()),
        ("OXP_EVENT_MARKS_PER_SOURCE", "100000000".into()),
        ("OXP_RAP_DELIVERY_ATTEMPTS", "1".into()),
        ("OXP_METRICS", "off".into()),
    ];
    vars.extend(state.iter().cloned());
    let config = Config::from_vars(false, vars).expect("valid bench configuration");
    let mut builder = App::builder(example_tools::registry().unwrap())
        .config(config)
        .secret("DEMO_WEBHOOK_SECRET", SECRET)
        .secret("MCP_STATE_KEY", "the-key-servers-sharing-a-table-hold");
    if let Some(aws) = aws {
        builder = builder.aws_config(aws);
    }
    builder
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .expect("the app builds")
}

async fn post(app: &App, path: &str, body: String, signature: Option<String>) -> u16 {
    let mut request = Request::post(path).header("content-type", "application/json");
    if let Some(signature) = signature {
        request = request.header("x-hub-signature-256", signature);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let _ = response.into_body().collect().await;
    status
}

fn invocation(url: &str, id: &str, operation: &str, arguments: Value) -> String {
    json!({"operation": operation, "arguments": arguments, "id": id, "group_id": "bench",
           "callback_url": url})
    .to_string()
}

/// Publishes event `n` of `topic` as the signed source `demo` does; its status.
async fn publish(app: &App, topic: &str, n: u64) -> u16 {
    let body = json!({"topic": topic, "event": {"n": n}}).to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    post(app, "/webhooks/demo", body, Some(signature)).await
}

/// Opens `n` subscriptions to `topic`, 200 invocations at a time.
async fn subscribe(app: &App, runtime: &Runtime, url: &str, topic: &str, n: usize) {
    let before = runtime.results.load(Ordering::SeqCst);
    for start in (0..n).step_by(200) {
        for i in start..(start + 200).min(n) {
            let id = format!("{topic}-{i}");
            let body = invocation(url, &id, "Demo_Watch", json!({"topic": topic}));
            assert_eq!(post(app, "/invoke", body, None).await, 200);
        }
        let done = before + (start + 200).min(n);
        runtime
            .wait(|r| r.results.load(Ordering::SeqCst), done)
            .await;
    }
}

/// What every bench of one store shares: the runtime on loopback, the app, the count of calls.
struct Rig<'a> {
    rt: &'a tokio::runtime::Runtime,
    runtime: &'a Runtime,
    url: &'a str,
    app: &'a App,
    calls: &'a AtomicUsize,
    store: &'a stores::Store,
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

fn bench(c: &mut Criterion) {
    // Two workers, as the machine the figures come from has two cores.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let full = std::env::args().any(|a| a == "--bench");
    let (runtime, url) = rt.block_on(Runtime::start());
    let calls = AtomicUsize::new(0);
    for store in stores::stores(&rt, full) {
        let app = rt.block_on(async { app(&store.vars, store.aws.clone()) });
        let mut group = c.benchmark_group(format!("talk_back_{}", store.name));
        let rig = Rig {
            rt: &rt,
            runtime: &runtime,
            url: &url,
            app: &app,
            calls: &calls,
            store: &store,
        };
        round_trips(&mut group, &rig);
        fan_out(&mut group, &rig);
        group.finish();
    }
}

/// `subscribe_round_trip` and `choice_round_trip`.
fn round_trips(group: &mut Group<'_>, rig: &Rig<'_>) {
    let Rig {
        rt,
        runtime,
        url,
        app,
        calls,
        store,
    } = *rig;
    group.bench_function("subscribe_round_trip", |b| {
        // Each subscription cancelled once its round trip is timed: the caller holds one at a
        // time, well within its share of live subscriptions.
        b.to_async(rt).iter_custom(|iters| async move {
            let mut took = Duration::ZERO;
            for _ in 0..iters {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                let before = runtime.results.load(Ordering::SeqCst);
                let id = format!("rt-{}-{n}", store.name);
                let body = invocation(url, &id, "Demo_Watch", json!({"topic": id}));
                let started = Instant::now();
                assert_eq!(post(app, "/invoke", body, None).await, 200);
                runtime
                    .wait(|r| r.results.load(Ordering::SeqCst), before + 1)
                    .await;
                took += started.elapsed();
                let cancel = json!({"thread_id": "bench", "tool_call_id": id}).to_string();
                assert_eq!(post(app, "/cancel_tool_call", cancel, None).await, 200);
            }
            took
        })
    });
    group.bench_function("choice_round_trip", |b| {
        b.to_async(rt).iter(|| async {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            let before = runtime.results.load(Ordering::SeqCst);
            let id = format!("q-{}-{n}", store.name);
            let arguments = json!({"prompt": "Go?", "choices": ["Yes", "No"], "default": 0});
            let body = invocation(url, &id, "Demo_Confirm", arguments);
            assert_eq!(post(app, "/invoke", body, None).await, 200);
            let choice = loop {
                let notified = runtime.arrived.notified();
                if let Some(choice) = runtime.choices.lock().await.pop() {
                    break choice;
                }
                let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
            };
            let response = choice["response_url"].as_str().unwrap();
            let path = response.trim_start_matches("http://127.0.0.1:9").to_owned();
            let answer = json!({"id": id, "selected": 0}).to_string();
            assert_eq!(post(app, &path, answer, None).await, 200);
            runtime
                .wait(|r| r.results.load(Ordering::SeqCst), before + 1)
                .await;
        })
    });
}

/// `fan_out_accepted/N` and `fan_out_delivered/N` for each of the store's sizes.
fn fan_out(group: &mut Group<'_>, rig: &Rig<'_>) {
    let Rig {
        rt,
        runtime,
        url,
        app,
        store,
        ..
    } = *rig;
    group.sampling_mode(SamplingMode::Flat);
    for &size in &store.sizes {
        let topic = format!("fan-{}-{size}", store.name);
        rt.block_on(subscribe(app, runtime, url, &topic, size));
        // Seconds per iteration: ten samples (moto takes milliseconds per write).
        if size >= 10_000 || (store.aws.is_some() && size >= 100) {
            group.sample_size(10);
            group.measurement_time(Duration::from_secs(60));
        }
        let event = AtomicUsize::new(0);
        let (topic, event) = (topic.as_str(), &event);
        group.bench_with_input(BenchmarkId::new("fan_out_accepted", size), &size, |b, _| {
            b.to_async(rt).iter_custom(|iters| async move {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    let n = event.fetch_add(1, Ordering::SeqCst) as u64;
                    let before = runtime.events.load(Ordering::SeqCst);
                    let start = Instant::now();
                    assert_eq!(publish(app, topic, n).await, 202);
                    spent += start.elapsed();
                    // Delivered before the next, so each event meets an empty backlog.
                    runtime
                        .wait(|r| r.events.load(Ordering::SeqCst), before + size)
                        .await;
                }
                spent
            })
        });
        group.bench_with_input(
            BenchmarkId::new("fan_out_delivered", size),
            &size,
            |b, _| {
                b.to_async(rt).iter_custom(|iters| async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let n = event.fetch_add(1, Ordering::SeqCst) as u64;
                        let before = runtime.events.load(Ordering::SeqCst);
                        assert_eq!(publish(app, topic, n).await, 202);
                        runtime
                            .wait(|r| r.events.load(Ordering::SeqCst), before + size)
                            .await;
                    }
                    start.elapsed()
                })
            },
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

// The same allocator as the `oxp-lambda` binary (Cargo feature `mimalloc`, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
