//! Helpers shared by the integration tests: build an app and send it requests in-process.
// Each test binary uses a part of these (the two binaries of their own very little).
#![allow(dead_code, unused_imports)]

/// The rig of the authentication tests.
pub mod auth;
/// moto on loopback: the same support file as the unit tests' `crate::moto`.
#[path = "../../src/moto.rs"]
pub mod aws;
#[cfg(feature = "jwt")]
pub mod jwt;
pub mod mcp;
pub mod process;
pub mod queue;
/// The rig of the RAP tests.
pub mod rap;
pub mod receiver;
pub mod runtime_api;
pub mod tasks;

/// The OXP specification's example tools, as the binary serves them.
#[path = "../../examples/spec_tools/tools.rs"]
pub mod example_tools;

/// Provider `demo`'s authorization at an identity provider no test reaches (making the link
/// needs none), links to the server at `https://tools.example.com`.
pub const DEMO_OAUTH: [(&str, &str); 6] = [
    ("OXP_OAUTH_PROVIDERS", "demo"),
    (
        "OXP_OAUTH_DEMO_AUTHORIZE_URL",
        "https://idp.example/authorize",
    ),
    ("OXP_OAUTH_DEMO_TOKEN_URL", "https://idp.example/token"),
    (
        "OXP_OAUTH_DEMO_USERINFO_URL",
        "https://idp.example/userinfo",
    ),
    ("OXP_OAUTH_DEMO_CLIENT_ID", "oxp-demo"),
    ("OXP_PUBLIC_URL", "https://tools.example.com"),
];

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use futures_util::FutureExt;
use http_body_util::BodyExt;
pub use oxp_lambda::App;
use oxp_lambda::{AppBuilder, Config, Registry};
pub use process::{Process, Scratch, start_binary};
use serde_json::Value;
use tower::ServiceExt;

/// The `MCP_STATE_KEY` of the servers of a test that share a state table (they must share one).
pub const STATE_KEY: &str = "a-state-key-that-every-server-sharing-the-table-holds";

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

    /// The process-wide capture: every test binary that reads logs from calls made on other
    /// threads, or that may see callsites another test registered first, uses this one.
    /// (A scoped subscriber can miss lines whose callsite interest was cached without it.)
    pub fn global() -> Self {
        static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
        CAPTURED
            .get_or_init(|| {
                let captured = Captured::default();
                tracing::subscriber::set_global_default(captured.subscriber())
                    .expect("no other global subscriber");
                captured
            })
            .clone()
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

/// Builds `builder`, which needs nothing loaded (no AWS configuration from the environment),
/// so that building completes at once.
pub fn build(builder: AppBuilder) -> App {
    builder
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .unwrap_or_else(|e| panic!("the app builds: {e}"))
}

/// An app serving `registry` with `config`.
pub fn app_with(registry: Registry, config: Config) -> App {
    build(App::builder(registry).config(config))
}

/// The example tools with the default configuration: accepted async invocations kept in an
/// embedded store in memory (no file), their results run and delivered by its runner.
pub fn example_app() -> App {
    app_with(example_tools::registry().unwrap(), test_config())
}

/// The defaults, with undeliverable async results going to a dead-letter file in the temporary
/// directory and a single delivery attempt.
pub fn test_config() -> Config {
    test_config_with(&[])
}

/// [`test_config`] with the variables `vars` set too (a protocol's settings, say).
pub fn test_config_with(vars: &[(&str, &str)]) -> Config {
    let dead_letters =
        std::env::temp_dir().join(format!("oxp-dead-{}.jsonl", uuid::Uuid::new_v4()));
    let mut all = vec![
        (
            "OXP_RAP_DEAD_LETTER_FILE".to_owned(),
            dead_letters.display().to_string(),
        ),
        ("OXP_RAP_DELIVERY_ATTEMPTS".to_owned(), "1".to_owned()),
    ];
    all.extend(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    Config::from_vars(false, all).expect("valid test configuration")
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
    let headers = format!("Host: {addr}\r\nContent-Type: application/json\r\n");
    http_raw_with(addr, method, path, &headers, body).await
}

/// [`http_raw`] with the request's headers as given (`Name: value\r\n` lines; the
/// `Content-Length` and `Connection` headers are added).
pub async fn http_raw_with(
    addr: &str,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
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

/// The detail of a RAP error result's `text`: the published convention is `Error: <message>`,
/// and this server adds the error as JSON on the next line. `None` for any other text.
pub fn rap_error(text: &str) -> Option<Value> {
    let (sentence, detail) = text.split_once('\n')?;
    if !sentence.starts_with("Error: ") {
        return None;
    }
    serde_json::from_str(detail).ok()
}

/// Serves `config`'s app of the example tools on a free loopback port, as the binary does;
/// dropping the sender stops it.
pub async fn serve_on_loopback(config: Config) -> (String, tokio::sync::oneshot::Sender<()>) {
    serve_app_on_loopback(app_with(example_tools::registry().unwrap(), config)).await
}

/// Serves `app` on a free loopback port, as the binary does; dropping the sender stops it.
pub async fn serve_app_on_loopback(app: App) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.serve(listener, async move {
        let _ = stopped.await;
    }));
    (addr, stop)
}

/// Runs the client `tests/<script>` with the interpreter `$var` names (scripts/test installs
/// the client and sets it) and `args`; asserts the script exits 0 and returns what it printed.
pub fn run_client(var: &str, script: &str, args: &[&str]) -> String {
    let program = std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} names the client's interpreter: run through scripts/test")
    });
    let output = std::process::Command::new(program)
        .arg(format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR")))
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    stdout
}
