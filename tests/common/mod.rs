//! Helpers shared by the integration tests: build an app and send it requests in-process.
#![allow(dead_code)]

pub mod aws;
pub mod receiver;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use oxp_lambda::auth::Authenticator;
use oxp_lambda::http::{AppState, StripPrefix};
use oxp_lambda::secrets::Secrets;
use oxp_lambda::{Config, Registry};
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

pub type App = StripPrefix<axum::Router>;

/// Log output captured in memory (a `tracing_subscriber` writer).
#[derive(Clone, Default)]
pub struct Captured(pub std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Captured {
    /// A JSON-lines subscriber at every level that writes here.
    pub fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync + 'static {
        let writer = self.clone();
        tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish()
    }

    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An HTTP answer, its body parsed as JSON.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
    pub json: Value,
}

/// An app from its parts.
pub fn app_from(registry: Registry, config: Config, secrets: Secrets, auth: Authenticator) -> App {
    oxp_lambda::http::app(AppState::new(Arc::new(registry), config, secrets, auth))
}

/// An app without server-held secrets or authentication.
pub fn app_with(registry: Registry, config: Config) -> App {
    app_from(registry, config, Secrets::default(), Authenticator::None)
}

pub fn example_app() -> App {
    app_with(
        oxp_lambda::example_tools::registry().unwrap(),
        Config::default(),
    )
}

/// The example tools with the async adapter on an in-process queue; results that cannot be
/// delivered go to a dead-letter file in the temporary directory.
pub fn example_app_with_rap() -> App {
    let registry = oxp_lambda::example_tools::registry().unwrap();
    let mut config = Config::default();
    config.rap.dead_letter_file =
        std::env::temp_dir().join(format!("oxp-dead-{}.jsonl", uuid::Uuid::new_v4()));
    config.rap.retry.max_attempts = 1;
    let rap = oxp_lambda::rap::build(&registry, &config, Secrets::default(), None).unwrap();
    oxp_lambda::http::app(
        AppState::new(
            Arc::new(registry),
            config,
            Secrets::default(),
            Authenticator::None,
        )
        .with_rap(Arc::new(rap)),
    )
}

pub async fn send(app: &App, request: Request<Body>) -> Reply {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).expect("responses are UTF-8");
    let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    assert_eq!(
        headers.get("content-type").unwrap(),
        "application/json",
        "every answer is JSON"
    );
    Reply {
        status,
        headers,
        text,
        json,
    }
}

pub async fn post(app: &App, path: &str, body: impl Into<Body>) -> Reply {
    let request = Request::post(path)
        .header("content-type", "application/json")
        .body(body.into())
        .unwrap();
    send(app, request).await
}

pub async fn call(app: &App, body: Value) -> Reply {
    post(app, "/tools/call", body.to_string()).await
}

pub async fn get(app: &App, path: &str) -> Reply {
    send(app, Request::get(path).body(Body::empty()).unwrap()).await
}

/// The reply's `result` with `duration` checked (a non-negative number) and removed.
pub fn result_without_duration(reply: &Reply) -> Value {
    let mut json = reply.json.clone();
    let result = json["result"].as_object_mut().expect("a result object");
    let duration = result.remove("duration").expect("duration is reported");
    assert!(duration.as_f64().unwrap() >= 0.0);
    json
}

/// A minimal HTTP/1.1 exchange over TCP (one request per connection), for tests of real servers.
pub async fn http_raw(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}
