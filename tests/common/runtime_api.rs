//! A Lambda Runtime API on loopback for the real bootstrap: hands out queued events (with the
//! client context as raw JSON, as Lambda sends it), records each answer, and can take its
//! time acknowledging answers, which holds the bootstrap's worker as a slow tool would. A
//! streamed answer (response streaming) is kept chunk by chunk, each with when it arrived.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A streamed answer's chunks, each with the instant it arrived.
pub type Chunks = Vec<(Instant, axum::body::Bytes)>;

/// The X-Ray trace header every event comes with.
pub const TRACE_ID: &str =
    "Root=1-67a0b1c2-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1";
/// The tenant every event is for.
pub const TENANT_ID: &str = "tenant-blue";

/// An event to hand out: request id, payload, client context.
pub type Event = (String, Value, Option<Value>);

/// What the Runtime API saw.
#[derive(Default)]
pub struct RuntimeApi {
    events: Mutex<VecDeque<Event>>,
    /// Answers by request id, in the order they came.
    pub answers: Mutex<Vec<(String, Value)>>,
    /// Streamed answers by request id, in the order they ended.
    pub streamed: Mutex<Vec<(String, Chunks)>>,
    /// The `Lambda-Runtime-Invocation-Id` each answer echoed (by request id; `None`: none).
    pub echoed: Mutex<Vec<(String, Option<String>)>>,
    /// Invocation and init errors reported.
    pub errors: Mutex<Vec<String>>,
    ack_delay: Duration,
    in_flight: Mutex<(usize, usize)>,
}

impl RuntimeApi {
    /// Starts serving `events` on 127.0.0.1; each answer is acknowledged after `ack_delay`.
    pub async fn start(events: Vec<Event>, ack_delay: Duration) -> (Arc<Self>, SocketAddr) {
        let api = Arc::new(Self {
            events: Mutex::new(events.into()),
            ack_delay,
            ..Self::default()
        });
        let router = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(respond),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(error))
            .with_state(api.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        (api, addr)
    }

    /// The most invocations handed out and not yet acknowledged at any one time.
    pub fn max_in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().1
    }

    /// The answer to request `id` (panics if there is none).
    pub fn answer(&self, id: &str) -> Value {
        self.answers
            .lock()
            .unwrap()
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| panic!("no answer to {id}"))
    }

    /// Asserts that every answer so far echoed its event's invocation id.
    pub fn assert_every_answer_echoed_its_invocation_id(&self) {
        let echoed = self.echoed.lock().unwrap();
        assert!(!echoed.is_empty(), "no answer");
        for (id, header) in echoed.iter() {
            assert_eq!(
                header.as_deref(),
                Some(&*invocation_id(id)),
                "answer to {id}"
            );
        }
    }

    /// Waits for the streamed answer to request `id` (panics if the bootstrap exits or none
    /// ends within 30 s).
    pub async fn wait_for_stream(&self, id: &str, bootstrap: &mut Bootstrap) -> Chunks {
        self.wait_until(bootstrap, "a streamed answer", |api| {
            let streamed = api.streamed.lock().unwrap();
            streamed
                .iter()
                .find(|(i, _)| i == id)
                .map(|(_, c)| c.clone())
        })
        .await
    }

    /// Waits until `n` answers came, the bootstrap exited (panics) or 30 s passed (panics).
    pub async fn wait_for(&self, n: usize, bootstrap: &mut Bootstrap) {
        self.wait_until(bootstrap, &format!("{n} answers"), |api| {
            (api.answers.lock().unwrap().len() >= n).then_some(())
        })
        .await
    }

    /// Polls `ready` until it gives a value; panics when the bootstrap exits first or 30 s
    /// pass, with what came so far.
    async fn wait_until<T>(
        &self,
        bootstrap: &mut Bootstrap,
        what: &str,
        ready: impl Fn(&Self) -> Option<T>,
    ) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(value) = ready(self) {
                return value;
            }
            if let Ok(Some(status)) = bootstrap.0.try_wait() {
                panic!(
                    "the bootstrap exited ({status}) before {what}; answers: {:?}",
                    self.answers.lock().unwrap()
                );
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {what} in 30 s; answers: {:?}, errors: {:?}",
                self.answers.lock().unwrap(),
                self.errors.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn next(State(api): State<Arc<RuntimeApi>>) -> Response {
    loop {
        let event = api.events.lock().unwrap().pop_front();
        if let Some((id, event, context)) = event {
            let mut in_flight = api.in_flight.lock().unwrap();
            in_flight.0 += 1;
            in_flight.1 = in_flight.1.max(in_flight.0);
            drop(in_flight);
            let deadline = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis()
                + 30_000;
            let mut headers = HeaderMap::new();
            let mut set = |name: &'static str, value: &str| {
                headers.insert(name, HeaderValue::from_str(value).unwrap());
            };
            set("lambda-runtime-aws-request-id", &id);
            set("lambda-runtime-deadline-ms", &deadline.to_string());
            set(
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:123456789012:function:tools",
            );
            set("lambda-runtime-trace-id", TRACE_ID);
            set("lambda-runtime-aws-tenant-id", TENANT_ID);
            set("lambda-runtime-invocation-id", &invocation_id(&id));
            if let Some(context) = context {
                set("lambda-runtime-client-context", &context.to_string());
            }
            return (headers, event.to_string()).into_response();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn respond(
    State(api): State<Arc<RuntimeApi>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> StatusCode {
    let echoed = headers
        .get("lambda-runtime-invocation-id")
        .map(|v| v.to_str().unwrap().to_owned());
    api.echoed.lock().unwrap().push((id.clone(), echoed));
    let streamed = headers
        .get("lambda-runtime-function-response-mode")
        .is_some_and(|m| m == "streaming");
    if streamed {
        use http_body_util::BodyExt;
        let mut body = body;
        let mut chunks = Chunks::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.unwrap().into_data() {
                chunks.push((Instant::now(), data));
            }
        }
        api.streamed.lock().unwrap().push((id, chunks));
    } else {
        let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        tokio::time::sleep(api.ack_delay).await;
        api.answers
            .lock()
            .unwrap()
            .push((id, serde_json::from_slice(&body).unwrap()));
    }
    api.in_flight.lock().unwrap().0 -= 1;
    StatusCode::ACCEPTED
}

/// The invocation id the Runtime API gives request `id`'s event.
pub fn invocation_id(id: &str) -> String {
    format!("invocation-of-{id}")
}

async fn error(State(api): State<Arc<RuntimeApi>>, body: String) -> StatusCode {
    api.errors.lock().unwrap().push(body);
    StatusCode::ACCEPTED
}

/// The bootstrap process, killed when the test ends however it ends.
pub struct Bootstrap(pub std::process::Child);

impl Bootstrap {
    /// The `oxp-lambda` binary polling `api` with only `env` (and Lambda's own variables) set.
    pub fn start(api: SocketAddr, env: &[(&str, &str)]) -> Self {
        Self::spawn(api, env, Stdio::null(), Stdio::inherit())
    }

    /// As [`Bootstrap::start`], with everything it writes (stdout and stderr) in `output`.
    pub fn start_captured(api: SocketAddr, env: &[(&str, &str)], output: &std::path::Path) -> Self {
        let file = std::fs::File::create(output).unwrap();
        Self::spawn(api, env, file.try_clone().unwrap().into(), file.into())
    }

    /// `program` (a binary built on this crate, an example's) polling `api` with `env`.
    pub fn start_program(program: &std::path::Path, api: SocketAddr, env: &[(&str, &str)]) -> Self {
        Self::spawn_program(program, api, env, Stdio::null(), Stdio::inherit())
    }

    fn spawn(api: SocketAddr, env: &[(&str, &str)], stdout: Stdio, stderr: Stdio) -> Self {
        let program = std::path::Path::new(env!("CARGO_BIN_EXE_oxp-lambda"));
        Self::spawn_program(program, api, env, stdout, stderr)
    }

    fn spawn_program(
        program: &std::path::Path,
        api: SocketAddr,
        env: &[(&str, &str)],
        stdout: Stdio,
        stderr: Stdio,
    ) -> Self {
        let mut command = std::process::Command::new(program);
        command
            .env_clear()
            .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", "tools")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("OXP_AUTH", "none")
            .env("OXP_SECRETS_SOURCE", "local")
            .stdout(stdout)
            .stderr(stderr);
        for (name, value) in env {
            command.env(name, value);
        }
        Self(command.spawn().unwrap())
    }
}

impl Drop for Bootstrap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
