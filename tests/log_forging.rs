//! Log lines cannot be forged in the text format (the local default): a newline in what a
//! caller sends (an OXP `tool_id` or `call_id`, a malformed body, a bad token) stays inside its
//! own line, escaped, and an MCP request's id, which rmcp logs by its `Display` when it is let
//! log, writes nothing by default. One test in this
//! binary: it installs the process-wide subscriber, the text log `oxp-lambda` writes locally
//! ([`oxp_lambda::local_text_log`]).

mod common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use oxp_lambda::stores::{
    Claim, IdempotencyStore, MemoryStore, StoreError, StoreFuture, StoredOutcome,
};
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The memory store, except that an outcome is refused as DynamoDB refuses one over its item
/// size: the path where the invoker logs "outcome not stored" with the caller's call id.
#[derive(Debug)]
struct RefusesOutcomes(MemoryStore);

impl IdempotencyStore for RefusesOutcomes {
    fn claim<'a>(&'a self, key: &'a str, print: &'a str, hold: Duration) -> StoreFuture<'a, Claim> {
        self.0.claim(key, print, hold)
    }
    fn complete<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a StoredOutcome,
        _: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async { Err(StoreError("ValidationException".into())) })
    }
    fn release<'a>(&'a self, key: &'a str, print: &'a str) -> StoreFuture<'a, ()> {
        self.0.release(key, print)
    }
}

#[tokio::test]
async fn a_callers_newline_never_starts_a_log_line_of_its_own() {
    let lines = Lines::default();
    let (log, written) = oxp_lambda::local_text_log(lines.clone());
    tracing::dispatcher::set_global_default(log).unwrap();

    let app = example_app();
    let forged = "\nINFO oxp::call: outcome=\"success\" forged=1";
    // A tool id and a call id that do not resolve, and one call that runs.
    call(
        &app,
        json!({"request": {"tool_id": format!("Calculator.Add{forged}"), "input": {}}}),
    )
    .await;
    call(
        &app,
        json!({"request": {"tool_id": "Calculator.Add", "call_id": format!("id{forged}"),
                           "input": {"a": 1, "b": 2}}}),
    )
    .await;
    // A bearer token whose header quotes the text is refused on an authenticated route.
    let request = Request::post("/invoke")
        .header("content-type", "application/json")
        .body(Body::from(format!(
            "{{\"id\": \"x{}\"",
            forged.replace('"', "\\\"")
        )))
        .unwrap();
    let _ = tower::ServiceExt::oneshot(app.clone(), request).await;
    // A call whose outcome the store refuses: its call id is in the warning, escaped too.
    let refusing = build(
        App::builder(example_tools::registry().unwrap())
            .config(test_config())
            .idempotency_store(Arc::new(RefusesOutcomes(MemoryStore::new(1 << 20)))),
    );
    call(
        &refusing,
        json!({"request": {"tool_id": "Calculator.Add", "call_id": format!("kept{forged}"),
                           "input": {"a": 1, "b": 2}}}),
    )
    .await;
    // An MCP request rmcp answers with an error, which it would log with the request's id by
    // its `Display` (`warn!(%id, ...)`), were rmcp not held at `error` (a state on a call of an
    // unknown tool). Turned on, its line is escaped too (`tests/observability.rs`).
    let request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Body::from(
            json!({"jsonrpc": "2.0", "id": format!("rpc{forged}\u{0}\u{1b}[2J"), "method": "tools/call",
                   "params": {"name": "Nope", "requestState": "x"}})
            .to_string(),
        ))
        .unwrap();
    let _ = tower::ServiceExt::oneshot(app.clone(), request).await;

    drop(written);
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("forged=1"),
        "the caller's text was logged: {text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("outcome not stored") && l.contains("kept\\nINFO")),
        "the unstored outcome's call id is logged, escaped: {text}"
    );
    assert!(
        !text.contains("rmcp::") && !text.contains("rpc"),
        "a caller's request writes no line of rmcp's: {text}"
    );
    assert!(
        !text.chars().any(|c| c != '\n' && c.is_control()),
        "no control character but the lines' ends: {text:?}"
    );
    for line in text.lines() {
        assert!(
            !line.starts_with("INFO oxp::call"),
            "a forged line: {line:?}\nin\n{text}"
        );
        assert!(
            line.chars().next().is_some_and(|c| c.is_ascii_digit()),
            "every line starts with its timestamp: {line:?}"
        );
    }
}
