//! A crash loses nothing: the real binary on loopback, killed with SIGKILL (no drain, no flush)
//! and started again over the same embedded state store. An invocation acknowledged just before
//! the crash runs after the restart, taken over at once (the file's lock proves the last holder
//! dead: no lease waited out); a result computed before the crash is delivered after it, the
//! same bytes, never "interrupted"; a subscription opened before it still receives events; a
//! question asked before it is found again (not asked twice) and its answer completes the call,
//! and an answer the crash took before acknowledging it, sent again, completes it too;
//! an MCP task whose run the crash ended is taken over and run again (its tool may); an MCP
//! handshake client's session still opens, and the question the crash left open does not hold
//! the session's next one.

use crate::common;

use common::http_raw_with;
use common::receiver::Receiver;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const SECRET: &str = "restart-webhook-secret";

struct Server {
    process: common::Process,
    addr: String,
}

/// The binary over the state file `state`, on a free loopback port.
fn start(state: &Path, dead_letters: &Path) -> Server {
    start_with(state, dead_letters, &[])
}

/// [`start`] with `extra` variables.
fn start_with(state: &Path, dead_letters: &Path, extra: &[(&str, &str)]) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    command
        .args(["--port", "0"])
        .env_clear()
        .env("OXP_STATE_PATH", state)
        .env("OXP_RAP_DEAD_LETTER_FILE", dead_letters)
        .env("OXP_SECRET_DEMO_WEBHOOK_SECRET", SECRET)
        .env("OXP_RAP_TOOL_TIMEOUT_MS", "60000")
        // Short leases: a crashed run is taken over within seconds.
        .env("OXP_WORK_LEASE_SECS", "2")
        .env("OXP_WORK_SWEEP_SECS", "1")
        .env("OXP_LOG", "warn")
        .envs(extra.iter().copied());
    let (process, line) = common::Process::start("oxp-lambda", command);
    let addr = line
        .trim()
        .strip_prefix("OXP server listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    Server { process, addr }
}

/// Kills the server at once, as a crash would.
fn crash(mut server: Server) {
    server.process.kill();
}

/// A directory for the servers of one test, with the state and dead-letter files they share.
fn files() -> (common::Scratch, PathBuf, PathBuf) {
    let dir = common::Scratch::new("restart");
    let (state, dead) = (dir.join("state.redb"), dir.join("dead.jsonl"));
    (dir, state, dead)
}

async fn post(server: &Server, path: &str, body: &str, extra: &str) -> (u16, String) {
    let headers = format!(
        "Host: {}\r\nContent-Type: application/json\r\n{extra}",
        server.addr
    );
    http_raw_with(&server.addr, "POST", path, &headers, body).await
}

fn invocation(receiver: &Receiver, id: &str, operation: &str, arguments: Value) -> String {
    json!({"operation": operation, "arguments": arguments, "id": id, "group_id": "t",
           "callback_url": receiver.url})
    .to_string()
}

#[tokio::test]
async fn an_invocation_acknowledged_before_a_crash_runs_after_the_restart() {
    let (_dir, state, dead) = files();
    let receiver = Receiver::ok().await;
    let server = start(&state, &dead);
    let body = invocation(&receiver, "crash-1", "Demo_Sleep", json!({"ms": 1500}));
    assert_eq!(post(&server, "/invoke", &body, "").await.0, 200);
    crash(server);
    assert!(
        receiver.of_kind("tool_result").is_empty(),
        "it had not finished"
    );
    let _server = start(&state, &dead);
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert_eq!(result["id"], "crash-1");
    let value: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert!(value["slept_ms"].as_u64().unwrap() >= 1500, "{result}");
    // Once done it is forgotten: a second restart does not run it again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(_server);
    let _again = start(&state, &dead);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(receiver.of_kind("tool_result").len(), 1);
}

#[tokio::test]
async fn a_result_computed_before_a_crash_is_delivered_after_the_restart_not_interrupted() {
    let (_dir, state, dead) = files();
    // The runtime is down (503): the result, 42, is computed and being retried when the
    // server is killed.
    let receiver = Receiver::start(&[], 503).await;
    let server = start(&state, &dead);
    let body = invocation(
        &receiver,
        "add-1",
        "Calculator_Add",
        json!({"a": 20, "b": 22}),
    );
    assert_eq!(post(&server, "/invoke", &body, "").await.0, 200);
    receiver.wait_for(1).await;
    crash(server);
    receiver.answer_from_now(200);
    let _server = start(&state, &dead);
    let delivered = receiver.wait_kind("tool_result", 2).await;
    let last = delivered.last().unwrap();
    assert_eq!(last["text"], "42", "the result, not interrupted: {last}");
    let hits = receiver.hits();
    assert!(
        hits.iter().all(|h| h.raw == hits[0].raw),
        "every delivery is the same bytes: {hits:?}"
    );
}

#[tokio::test]
async fn a_restart_takes_over_the_dead_processs_running_work_at_once_not_after_its_lease() {
    let (_dir, state, dead) = files();
    let receiver = Receiver::ok().await;
    // The default lease (30 s): a restart that waited it out would be seen.
    let lease = [("OXP_WORK_LEASE_SECS", "30"), ("OXP_WORK_SWEEP_SECS", "5")];
    let server = start_with(&state, &dead, &lease);
    let body = invocation(&receiver, "slow-1", "Demo_Sleep", json!({"ms": 500}));
    assert_eq!(post(&server, "/invoke", &body, "").await.0, 200);
    crash(server);
    let started = std::time::Instant::now();
    let server = start_with(&state, &dead, &lease);
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert_eq!(result["id"], "slow-1");
    // Said to its operator, as a retry is not.
    let said = server.process.output();
    assert!(
        said.contains("work taken over after its run ended unfinished"),
        "{said}"
    );
    // Its run (half a second) again, within 2 s of the start.
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_millis(2500),
        "delivered {took:?} after the restart"
    );
}

#[tokio::test]
async fn a_subscription_opened_before_a_crash_receives_events_after_the_restart() {
    let (_dir, state, dead) = files();
    let receiver = Receiver::ok().await;
    let server = start(&state, &dead);
    let body = invocation(
        &receiver,
        "watch-1",
        "Demo_Watch",
        json!({"topic": "deploys"}),
    );
    assert_eq!(post(&server, "/invoke", &body, "").await.0, 200);
    let confirmation = receiver.wait_kind("tool_result", 1).await.remove(0);
    assert_eq!(confirmation["subscription"], true);
    // The confirmation reached the runtime just before the subscription was activated.
    tokio::time::sleep(Duration::from_millis(300)).await;
    crash(server);
    let server = start(&state, &dead);
    let event = json!({"topic": "deploys", "event": {"version": "1.2.3"}}).to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(event.as_bytes());
    let signature = format!(
        "X-Hub-Signature-256: sha256={}\r\n",
        hex::encode(mac.finalize().into_bytes())
    );
    let (status, answer) = post(&server, "/webhooks/demo", &event, &signature).await;
    assert_eq!(status, 202, "{answer}");
    let delivered = receiver.wait_kind("subscription_event", 1).await.remove(0);
    assert_eq!(delivered["tool_call_id"], "watch-1");
    assert_eq!(delivered["text"], r#"{"version":"1.2.3"}"#);
}

#[tokio::test]
async fn a_question_asked_before_a_crash_is_found_again_and_its_answer_completes_the_call() {
    let (_dir, state, dead) = files();
    let receiver = Receiver::ok().await;
    let server = start(&state, &dead);
    let arguments = json!({"prompt": "Ship it?", "choices": ["Yes", "No"], "default": 1});
    let body = invocation(&receiver, "ask-1", "Demo_Confirm", arguments);
    assert_eq!(post(&server, "/invoke", &body, "").await.0, 200);
    let choice = receiver.wait_kind("user_choice", 1).await.remove(0);
    let url = choice["response_url"].as_str().unwrap().to_owned();
    let path = url.split_once(&server.addr).unwrap().1.to_owned();
    crash(server);
    let server = start(&state, &dead);
    // The call runs again and waits on the same question: it is not asked twice.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.of_kind("user_choice").len(), 1);
    let answer = json!({"id": "ask-1", "selected": 0}).to_string();
    let (status, text) = post(&server, &path, &answer, "").await;
    assert_eq!(status, 200, "{text}");
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    let value: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"selected": 0, "choice": "Yes"}));
}

#[tokio::test]
async fn an_answer_the_crash_took_before_it_was_acknowledged_is_sent_again_and_completes_the_call()
{
    let (_dir, state, dead) = files();
    let receiver = Receiver::ok().await;
    let server = start(&state, &dead);
    let arguments = json!({"prompt": "Ship it?", "choices": ["Yes", "No"], "default": 1});
    let body = invocation(&receiver, "ask-2", "Demo_Confirm", arguments);
    assert_eq!(post(&server, "/invoke", &body, "").await.0, 200);
    let choice = receiver.wait_kind("user_choice", 1).await.remove(0);
    let url = choice["response_url"].as_str().unwrap().to_owned();
    let path = url.split_once(&server.addr).unwrap().1.to_owned();
    // The answer sent and the process killed within its flush's time: handed to the waiting
    // run before it is durable, it may or may not be on disk; acknowledged only if it is.
    let answer = json!({"id": "ask-2", "selected": 0}).to_string();
    let first = tokio::spawn({
        let (addr, path, answer) = (server.addr.clone(), path.clone(), answer.clone());
        async move {
            let headers = format!("Host: {addr}\r\nContent-Type: application/json\r\n");
            tokio::time::timeout(
                Duration::from_secs(2),
                http_raw_with(&addr, "POST", &path, &headers, &answer),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(2)).await;
    crash(server);
    // A connection the kill cut off panics the task: no acknowledgment.
    let acknowledged = matches!(first.await, Ok(Ok((200, _))));
    let server = start(&state, &dead);
    // Sent again, as a sender that heard nothing does: taken now, or already taken (durable).
    let (status, text) = post(&server, &path, &answer, "").await;
    assert!(status == 200 || status == 409, "{status} {text}");
    assert!(
        !(acknowledged && status == 200),
        "an acknowledged answer was not durable"
    );
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    let value: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(value, json!({"selected": 0, "choice": "Yes"}));
    assert_eq!(receiver.of_kind("user_choice").len(), 1, "asked twice");
    // Delivered again only as the same bytes (a crash before the record's end was flushed).
    for again in receiver.of_kind("tool_result") {
        assert_eq!(again["text"], result["text"]);
    }
}

/// A 2026-07-28 MCP request of `method` declaring the tasks extension.
async fn mcp(server: &Server, method: &str, name: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let extra = format!(
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nMcp-Name: {name}\r\n"
    );
    let (status, text) = post(server, "/mcp", &body, &extra).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn an_mcp_task_running_at_a_crash_runs_again_after_the_restart_its_tool_may_run_twice() {
    let (_dir, state, dead) = files();
    let server = start(&state, &dead);
    let created = mcp(
        &server,
        "tools/call",
        "Demo_Sleep",
        json!({"name": "Demo_Sleep", "arguments": {"ms": 1500}}),
    )
    .await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    crash(server);
    let server = start(&state, &dead);
    // Demo.Sleep is read-only: its interrupted run is taken over once the dead process's lease
    // lapsed, run again, and completes. (A tool that may not run twice is failed with a
    // message instead: mcp_tasks::*_let_go_at_shutdown_*.)
    let end = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let task = mcp(&server, "tasks/get", &id, json!({"taskId": id})).await;
        if task["result"]["status"] == "completed" {
            let text = task["result"]["result"]["content"][0]["text"]
                .as_str()
                .unwrap();
            let slept: Value = serde_json::from_str(text).unwrap();
            assert!(slept["slept_ms"].as_u64().unwrap() >= 1500, "{task}");
            break;
        }
        assert_eq!(task["result"]["status"], "working", "{task}");
        assert!(
            std::time::Instant::now() < end,
            "the task was not taken over: {task}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A 2025-11-25 request to `/mcp` (in `session` when given), read as raw HTTP until the text
/// holds `until` (the connection then left open), or to its end.
async fn raw_mcp(
    server: &Server,
    body: &Value,
    session: Option<&str>,
    until: Option<&str>,
) -> (tokio::net::TcpStream, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = body.to_string();
    let mut headers = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        server.addr,
        body.len()
    );
    if body.contains("\"tools/call\"") {
        headers.push_str("MCP-Protocol-Version: 2025-11-25\r\n");
    }
    if let Some(session) = session {
        headers.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    if until.is_none() {
        headers.push_str("Connection: close\r\n");
    }
    let mut stream = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    stream
        .write_all(format!("{headers}\r\n{body}").as_bytes())
        .await
        .unwrap();
    let mut text = String::new();
    let mut buffer = [0u8; 4096];
    let read = async {
        loop {
            let n = stream.read(&mut buffer).await.unwrap();
            text.push_str(&String::from_utf8_lossy(&buffer[..n]));
            if n == 0 || until.is_some_and(|u| text.contains(u)) {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(15), read)
        .await
        .unwrap_or_else(|_| panic!("{until:?} never came"));
    (stream, text)
}

#[tokio::test]
async fn a_handshake_question_pending_at_a_crash_holds_nothing_after_the_restart() {
    let (_dir, state, dead) = files();
    let server = start(&state, &dead);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"}}});
    let (_, text) = raw_mcp(&server, &init, None, None).await;
    let session = text
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session for a client that shows forms")
        .trim()
        .to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "Demo_Confirm",
        "arguments": {"prompt": "Ship it?", "choices": ["Yes", "No"], "default": 0}}});
    // Asked, and the server dies with the question open.
    let (_pending, _) = raw_mcp(&server, &call, Some(&session), Some("elicitation/create")).await;
    crash(server);
    let server = start(&state, &dead);
    // The session still opens (the server's own key is kept with its state) and the question the
    // crash left open frees its number within seconds: the call asks again.
    let (mut stream, text) =
        raw_mcp(&server, &call, Some(&session), Some("elicitation/create")).await;
    let asked: Value = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("data:")
                .filter(|d| d.contains("elicitation/create"))
        })
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .unwrap();
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"],
                        "result": {"action": "accept", "content": {"choice": "No"}}});
    let extra = format!(
        "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\nAccept: application/json, text/event-stream\r\n"
    );
    let (status, text) = post(&server, "/mcp", &answer.to_string(), &extra).await;
    assert_eq!(status, 202, "{text}");
    let mut rest = String::new();
    let read = async {
        use tokio::io::AsyncReadExt;
        let mut buffer = [0u8; 4096];
        while !rest.contains("\\\"choice\\\"") {
            let n = stream.read(&mut buffer).await.unwrap();
            assert!(n > 0, "the stream ended without the result: {rest}");
            rest.push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .unwrap();
    assert!(rest.contains("\\\"choice\\\":\\\"No\\\""), "{rest}");
}
