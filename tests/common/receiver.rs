//! A callback receiver on 127.0.0.1: records every POST and answers from a script.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Hit {
    pub at: Instant,
    pub content_type: String,
    /// The `traceparent` header, if the request had one.
    pub traceparent: Option<String>,
    pub body: Value,
    /// The body's bytes as sent.
    pub raw: Bytes,
}

#[derive(Default)]
struct Inner {
    /// Answers for the next requests: status and optional `Retry-After`.
    script: Mutex<VecDeque<(u16, Option<&'static str>)>>,
    /// The answer once the script is used up.
    then: std::sync::atomic::AtomicU16,
    hits: Mutex<Vec<Hit>>,
    arrived: Notify,
    /// Messages of this type are answered only after this long (a delivery in flight).
    hold: Mutex<Option<(String, Duration)>>,
}

pub struct Receiver {
    /// `http://127.0.0.1:<port>/callback`.
    pub url: String,
    inner: Arc<Inner>,
}

impl Receiver {
    /// Answers 200 to everything.
    pub async fn ok() -> Self {
        Self::start(&[], 200).await
    }

    /// Answers `script` in order, then `then` for ever.
    pub async fn start(script: &[(u16, Option<&'static str>)], then: u16) -> Self {
        let inner = Arc::new(Inner {
            script: Mutex::new(script.iter().copied().collect()),
            then: then.into(),
            ..Inner::default()
        });
        let app = axum::Router::new()
            .route("/callback", axum::routing::post(record))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url: format!("http://{addr}/callback"),
            inner,
        }
    }

    /// `127.0.0.1:<port>`: how a delivery's failure names this receiver.
    pub fn host(&self) -> &str {
        let rest = self.url.trim_start_matches("http://");
        rest.split('/').next().unwrap_or(rest)
    }

    /// From now on, answers `status` once the script is used up (a receiver that was down
    /// comes back).
    pub fn answer_from_now(&self, status: u16) {
        self.inner
            .then
            .store(status, std::sync::atomic::Ordering::SeqCst);
    }

    /// From now on, answers messages of type `kind` only after `wait` (they are recorded when
    /// they arrive): a delivery in flight for that long.
    pub fn hold(&self, kind: &str, wait: Duration) {
        *self.inner.hold.lock().unwrap() = Some((kind.to_owned(), wait));
    }

    /// Every request so far.
    pub fn hits(&self) -> Vec<Hit> {
        self.inner.hits.lock().unwrap().clone()
    }

    /// Waits (up to 20 s) until `n` requests have arrived, and returns them.
    pub async fn wait_for(&self, n: usize) -> Vec<Hit> {
        let waited = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                let arrived = self.inner.arrived.notified();
                if self.hits().len() >= n {
                    return;
                }
                arrived.await;
            }
        })
        .await;
        let hits = self.hits();
        assert!(
            waited.is_ok(),
            "expected {n} callbacks, got {}: {hits:?}",
            hits.len()
        );
        hits
    }

    /// The single result (`tool_result`) delivered for one invocation.
    pub async fn result(&self) -> Value {
        self.wait_kind("tool_result", 1).await.remove(0)
    }

    /// The messages of type `kind` (`tool_result`, `subscription_event`, ...) so far.
    pub fn of_kind(&self, kind: &str) -> Vec<Value> {
        self.hits()
            .into_iter()
            .filter(|h| h.body["type"] == kind)
            .map(|h| h.body)
            .collect()
    }

    /// Waits (up to 20 s) until `n` messages of type `kind` have arrived, and returns them.
    pub async fn wait_kind(&self, kind: &str, n: usize) -> Vec<Value> {
        let waited = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                let arrived = self.inner.arrived.notified();
                if self.of_kind(kind).len() >= n {
                    return;
                }
                arrived.await;
            }
        })
        .await;
        let got = self.of_kind(kind);
        assert!(
            waited.is_ok(),
            "expected {n} {kind} messages, got {}: {:?}",
            got.len(),
            self.hits()
        );
        got
    }
}

async fn record(State(inner): State<Arc<Inner>>, headers: HeaderMap, raw: Bytes) -> Response {
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let traceparent = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let held = inner
        .hold
        .lock()
        .unwrap()
        .clone()
        .filter(|(kind, _)| body["type"] == kind.as_str())
        .map(|(_, wait)| wait);
    inner.hits.lock().unwrap().push(Hit {
        at: Instant::now(),
        content_type,
        traceparent,
        body,
        raw,
    });
    inner.arrived.notify_waiters();
    if let Some(wait) = held {
        tokio::time::sleep(wait).await;
    }
    let (status, retry_after) = inner
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or((inner.then.load(std::sync::atomic::Ordering::SeqCst), None));
    let mut response = StatusCode::from_u16(status).unwrap().into_response();
    if let Some(wait) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", wait.parse().unwrap());
    }
    response
}
