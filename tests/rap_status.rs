//! `POST /tool_call_status` as the published page has it (hydro-project/infinity,
//! `docs/docs/rap/spec/basic/tool-call-status.md`), driven by a runtime built on the RAP
//! project's own crates (`rap-client` 0.2: its callback server and its cancellation and closure
//! notifications; `rap-protocol`: the callbacks' types) and reading the answer with the page's
//! runtime error semantics. A call is alive while an invocation of it is accepted and not
//! answered, or while a subscription it opened lives, right after a crash of the server too;
//! unknown, finished and cancelled calls are not; the check changes nothing.

use crate::common;

use common::http_raw_with;
use rap_client::http::SimpleHttpClient;
use rap_client::notifier::RapNotifier;
use rap_protocol::RapCallback;
use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedReceiver;

/// What a runtime makes of a status check (the page's "Runtime Error Semantics").
#[derive(Debug, PartialEq, Eq)]
enum Liveness {
    /// `{"alive": true}`.
    Alive,
    /// `{"alive": false}`, a 4xx, or a 2xx body that is not the answer: prune the call.
    Gone,
    /// A 5xx or no answer: keep the call pending.
    Unknown,
}

struct Server {
    _process: common::Process,
    addr: String,
}

fn start(state: &str) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    command
        .args(["--port", "0"])
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .env("OXP_STATE_PATH", state)
        .env("OXP_WORK_LEASE_SECS", "2")
        .env("OXP_WORK_SWEEP_SECS", "1")
        .env("OXP_LOG", "warn");
    let (process, line) = common::Process::start("oxp-lambda", command);
    let addr = line
        .trim()
        .strip_prefix("OXP server listening on http://")
        .unwrap()
        .to_owned();
    Server {
        _process: process,
        addr,
    }
}

async fn post(server: &Server, path: &str, body: &str) -> (u16, String) {
    let headers = format!(
        "Host: {}\r\nContent-Type: application/json\r\n",
        server.addr
    );
    http_raw_with(&server.addr, "POST", path, &headers, body).await
}

/// The runtime's status check of call `id` of thread `t`.
async fn liveness(server: &Server, id: &str) -> Liveness {
    let body = json!({"thread_id": "t", "tool_call_id": id}).to_string();
    let (status, text) = post(server, "/tool_call_status", &body).await;
    match status {
        200..=299 => match serde_json::from_str::<Value>(&text).ok() {
            Some(answer) if answer["alive"] == true => Liveness::Alive,
            _ => Liveness::Gone,
        },
        400..=499 => Liveness::Gone,
        _ => Liveness::Unknown,
    }
}

async fn invoke(server: &Server, callback: &str, id: &str, operation: &str, arguments: Value) {
    let body = json!({"operation": operation, "arguments": arguments, "id": id,
                      "group_id": "t", "callback_url": callback})
    .to_string();
    assert_eq!(post(server, "/invoke", &body).await.0, 200);
}

/// The runtime's callbacks as they come, and the tool results read but not yet asked for:
/// results of calls made one after the other may arrive in either order.
struct Callbacks {
    channel: UnboundedReceiver<RapCallback>,
    results: Vec<Value>,
}

impl Callbacks {
    /// Waits for the tool result of call `id` (20 s at most), whenever it came.
    async fn result_of(&mut self, id: &str) -> Value {
        if let Some(at) = self.results.iter().position(|r| r["id"] == id) {
            return self.results.remove(at);
        }
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(callback) = self.channel.recv().await {
                if let RapCallback::ToolResult(result) = callback {
                    let result = serde_json::to_value(&result).unwrap();
                    if result["id"] == id {
                        return result;
                    }
                    self.results.push(result);
                }
            }
            panic!("the callback server stopped");
        })
        .await;
        found.unwrap_or_else(|_| panic!("no result for {id} (others: {:?})", self.results))
    }
}

/// Waits (2 s at most) until call `id` is gone.
async fn gone_soon(server: &Server, id: &str) {
    let end = Instant::now() + Duration::from_secs(2);
    while liveness(server, id).await != Liveness::Gone {
        assert!(Instant::now() < end, "{id} is still alive");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_restarting_runtime_learns_which_calls_the_server_still_tracks() {
    let dir = common::Scratch::new("status");
    let state = dir.join("oxp-state.redb");
    let state = state.to_str().unwrap();
    let (base, channel) = rap_client::callback_server::start_callback_channel()
        .await
        .unwrap();
    let mut callbacks = Callbacks {
        channel,
        results: Vec::new(),
    };
    let callback = format!("{base}/callback");
    let server = start(state);
    invoke(
        &server,
        &callback,
        "done",
        "Calculator_Add",
        json!({"a": 1, "b": 2}),
    )
    .await;
    invoke(
        &server,
        &callback,
        "watching",
        "Demo_Watch",
        json!({"topic": "t"}),
    )
    .await;
    invoke(
        &server,
        &callback,
        "running",
        "Demo_Sleep",
        json!({"ms": 3000}),
    )
    .await;
    assert_eq!(callbacks.result_of("done").await["text"], "3");
    callbacks.result_of("watching").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        liveness(&server, "running").await,
        Liveness::Alive,
        "accepted, not answered"
    );
    assert_eq!(
        liveness(&server, "watching").await,
        Liveness::Alive,
        "its subscription lives"
    );
    assert_eq!(liveness(&server, "done").await, Liveness::Gone, "answered");
    assert_eq!(
        liveness(&server, "never-sent").await,
        Liveness::Gone,
        "unknown"
    );
    // Asking changes nothing: still alive.
    assert_eq!(liveness(&server, "running").await, Liveness::Alive);

    // The server crashes and starts again: what it tracked, it still tracks.
    drop(server);
    let server = start(state);
    assert_eq!(
        liveness(&server, "running").await,
        Liveness::Alive,
        "after the restart"
    );
    assert_eq!(liveness(&server, "watching").await, Liveness::Alive);
    // The interrupted sleep (read-only: it may run again) is taken over and answered.
    let started = Instant::now();
    callbacks.result_of("running").await;
    assert!(started.elapsed() < Duration::from_secs(12));
    // Answered (the record ends just after the callback took the result: the page's race).
    gone_soon(&server, "running").await;

    // The runtime cancels the subscribing call with the RAP client: no longer alive.
    let notifier = RapNotifier::new(
        vec![format!("http://{}", server.addr)],
        SimpleHttpClient::new(),
    );
    notifier
        .notify_tool_cancelled(
            &rap_protocol::ThreadId::from("t".to_owned()),
            &rap_protocol::ToolCallId::from("watching".to_owned()),
        )
        .await;
    assert_eq!(
        liveness(&server, "watching").await,
        Liveness::Gone,
        "cancelled"
    );
}

#[tokio::test]
async fn a_status_check_that_is_not_the_pages_is_refused_and_holds_nothing_back() {
    let dir = common::Scratch::new("status-bad");
    let state = dir.join("oxp-state.redb");
    let server = start(state.to_str().unwrap());
    for body in [
        "",
        "[]",
        // The page's fields as an array, which serde would read as the struct.
        r#"["t", "x"]"#,
        r#"{"thread_id": "t"}"#,
        r#"{"thread_id": 1, "tool_call_id": "x"}"#,
    ] {
        let (status, text) = post(&server, "/tool_call_status", body).await;
        assert_eq!(status, 400, "{body}: {text}");
        assert!(!text.contains("alive"), "{text}");
    }
    let (status, text) = post(
        &server,
        "/tool_call_status",
        r#"{"thread_id": "t", "tool_call_id": "x"}"#,
    )
    .await;
    assert_eq!(
        (status, text.as_str()),
        (200, r#"{"alive":false}"#),
        "nothing but alive"
    );
}
