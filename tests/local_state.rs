//! The local server's state file as an operator and another local user meet it: taken by one
//! server at a time (a second on the same file is refused at its start, naming the file), and
//! readable by its owner only, like the lock beside it and the key the server seals MCP's
//! states with when `MCP_STATE_KEY` is not set, which lives in a file of its own, never in the
//! database whose questions it protects. An empty or short `MCP_STATE_KEY` is refused at start.
//! With `OXP_IDEMPOTENCY=state` a stored outcome outlives the server.

use crate::common;

use common::Scratch;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

fn binary(state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    command
        .args(["--port", "0"])
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .env("OXP_STATE_PATH", state);
    command
}

/// Runs `command`, which must exit within 10 s (a server that starts instead is killed and the
/// test fails).
fn exits(mut command: Command) -> std::process::Output {
    use std::process::Stdio;
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    panic!(
        "it started and kept running: {}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn a_second_server_on_the_same_state_file_is_refused_at_its_start_naming_the_file() {
    let dir = Scratch::new("state-taken");
    let state = dir.join("oxp-state.redb");
    let (_first, line) = common::Process::start("first", binary(&state));
    assert!(line.contains("listening"), "{line}");
    let second = exits(binary(&state));
    assert!(!second.status.success(), "the second server must not start");
    assert!(second.stdout.is_empty(), "it never listened");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&state.display().to_string()) && stderr.contains("OXP_STATE_PATH"),
        "{stderr}"
    );
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// A 2026-07-28 call of `Demo_Confirm`: its first round seals a `requestState`.
async fn first_round(base: &str) -> Value {
    let addr = base.trim_start_matches("http://");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "Demo_Confirm",
        "arguments": {"prompt": "Go?", "choices": ["Yes", "No"], "default": 1}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}});
    let headers = format!(
        "Host: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: Demo_Confirm\r\n"
    );
    let (status, text) =
        common::http_raw_with(addr, "POST", "/mcp", &headers, &body.to_string()).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[cfg(unix)]
#[tokio::test]
async fn the_state_file_its_lock_and_the_sealing_key_are_the_owners_alone_and_the_key_is_apart() {
    let dir = Scratch::new("state-private");
    let state = dir.join("oxp-state.redb");
    let (server, line) = common::Process::start("oxp-lambda", binary(&state));
    let base = line
        .trim()
        .trim_start_matches("OXP server listening on ")
        .to_owned();
    let first = first_round(&base).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let key_file = dir.join("oxp-state.key");
    let output = server.output_holding("oxp-state.key").await;
    assert!(
        output.contains("oxp-state.key"),
        "the key's file is said at start: {output}"
    );
    for file in [&state, &dir.join("oxp-state.redb.lock"), &key_file] {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    let key = std::fs::read(&key_file).unwrap();
    assert_eq!(key.len(), 32);
    drop(server);
    let database = std::fs::read(&state).unwrap();
    assert!(
        !database.windows(key.len()).any(|w| w == key.as_slice()),
        "the database does not hold the key that seals its questions"
    );
}

#[test]
fn an_empty_or_short_mcp_state_key_is_refused_at_start_naming_its_variable() {
    let dir = Scratch::new("state-key");
    for key in ["", "too-short-for-a-key"] {
        let mut command = binary(&dir.join("oxp-state.redb"));
        command.env("OXP_SECRET_MCP_STATE_KEY", key);
        let output = exits(command);
        assert!(!output.status.success(), "{key:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("OXP_SECRET_MCP_STATE_KEY"),
            "{key:?}: {stderr}"
        );
    }
}

/// An OXP call of `Demo.Sleep` for `ms` with `call_id`: its answer and how long it took.
async fn sleep_call(base: &str, call_id: &str, ms: u32) -> (Value, std::time::Duration) {
    let addr = base.trim_start_matches("http://");
    let body =
        json!({"request": {"tool_id": "Demo.Sleep", "call_id": call_id, "input": {"ms": ms}}});
    let headers = format!("Host: {addr}\r\nContent-Type: application/json\r\n");
    let started = std::time::Instant::now();
    let (status, text) =
        common::http_raw_with(addr, "POST", "/tools/call", &headers, &body.to_string()).await;
    assert_eq!(status, 200, "{text}");
    (serde_json::from_str(&text).unwrap(), started.elapsed())
}

#[tokio::test]
async fn a_stored_outcome_answers_a_repeat_after_the_server_restarts() {
    let dir = Scratch::new("idempotency-restart");
    let state = dir.join("oxp-state.redb");
    let start = || {
        let mut command = binary(&state);
        command.env("OXP_IDEMPOTENCY", "state");
        let (server, line) = common::Process::start("oxp-lambda", command);
        let base = line
            .trim()
            .trim_start_matches("OXP server listening on ")
            .to_owned();
        (server, base)
    };
    let (server, base) = start();
    let (first, took) = sleep_call(&base, "restart-1", 1000).await;
    assert_eq!(first["result"]["success"], true, "{first}");
    assert!(
        took >= std::time::Duration::from_secs(1),
        "the tool ran: {took:?}"
    );
    let (stopped, log) = server.terminate();
    assert!(stopped, "{log}");
    // The next server on the file answers the repeat from the record, without running the tool
    // (which would take a second again).
    let (_server, base) = start();
    let (repeat, took) = sleep_call(&base, "restart-1", 1000).await;
    assert_eq!(repeat, first, "the stored answer, as it was");
    assert!(
        took < std::time::Duration::from_millis(500),
        "replayed: {took:?}"
    );
}
