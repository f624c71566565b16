//! Settings at their extremes: every whole-number setting the configuration page lists at the
//! largest it takes serves, and one past a trillion stops the start naming the variable.

use crate::common;

use common::*;
use serde_json::json;
use std::time::Duration;

/// The settings that take a whole number (their documented default is one, or a share of one),
/// with the largest each takes: `MOST` unless its type or its rule stops lower.
fn numeric_settings() -> Vec<(String, u64)> {
    let page = std::fs::read_to_string("docs/configuration.md").unwrap();
    let lower = [
        ("OXP_RAP_DELIVERY_ATTEMPTS", u64::from(u32::MAX)),
        ("OXP_WORK_MAX_ATTEMPTS", u64::from(u32::MAX)),
        ("OXP_SUBSCRIPTION_EVENTS_PER_MINUTE", u64::from(u32::MAX)),
        ("OXP_SUBSCRIPTION_MAX_BACKLOG", u64::from(u32::MAX)),
        ("OXP_JWT_LEEWAY_SECS", 300),
        ("OXP_WEBHOOK_MAX_BYTES", 262_144),
        ("OXP_PORT", 0),
    ];
    let mut found = Vec::new();
    for row in page.lines().filter(|l| l.starts_with("| `OXP_")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let name = cells[0].trim_start_matches("| `").trim_end_matches('`');
        let default = cells[1].split_whitespace().next().unwrap_or("");
        let whole = default.trim_matches('`').parse::<u64>().is_ok() && default.starts_with('`');
        if !(whole || cells[1].starts_with("a quarter of")) || name.contains('<') {
            continue;
        }
        let most = lower
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(MOST, |(_, m)| *m);
        found.push((name.to_owned(), most));
    }
    assert!(found.len() >= 40, "{found:?}");
    found
}

const MOST: u64 = 1_000_000_000_000;

/// The binary started with `envs`: its exit code and standard error, or a failure if it is
/// still running after ten seconds (it took the settings and serves).
fn refused_start(envs: &[(&str, &str)]) -> (Option<i32>, String) {
    let scratch = common::Scratch::new("refused");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_oxp-lambda"))
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .current_dir(scratch.path())
        .envs(envs.iter().copied())
        .args(["--port", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(scratch.join("err.log")).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{envs:?}: the start was not refused");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let said = std::fs::read_to_string(scratch.join("err.log")).unwrap();
    (status.code(), said)
}

#[tokio::test]
async fn every_setting_at_its_largest_serves_and_one_past_a_trillion_stops_the_start_naming_it() {
    // `OXP_MAX_CONCURRENT_CALLS` or `OXP_WORK_RUNNING_MAX` at 2^64-1 panicked at start (a tokio
    // semaphore holds at most 2^61 permits), `OXP_WORK_SWEEP_SECS` in the sweep (a duration
    // past the clock's end).
    let settings = numeric_settings();
    for (name, _) in settings.iter().filter(|(n, _)| n != "OXP_PORT") {
        // With JWT on, so that its settings are read too.
        let (code, said) = refused_start(&[
            (name.as_str(), &(MOST + 1).to_string()),
            ("OXP_AUTH", "jwt"),
            ("OXP_JWT_JWKS_URL", "http://127.0.0.1:9/jwks"),
            ("OXP_JWT_AUDIENCE", "a"),
        ]);
        assert_eq!(code, Some(1), "{name}: {said}");
        assert!(said.contains(&format!("{name}: ")), "{name}: {said}");
        assert!(!said.contains("panicked"), "{name}: {said}");
    }
    let receiver = common::receiver::Receiver::ok().await;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    command
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .env("OXP_LOG_FORMAT", "json");
    for (name, most) in settings.iter().filter(|(n, _)| n != "OXP_PORT") {
        command.env(name, most.to_string());
    }
    command.args(["--port", "0"]);
    let (server, line) = common::Process::start("oxp-lambda", command);
    let addr = line
        .trim()
        .trim_start_matches("OXP server listening on http://");
    let call = r#"{"request":{"tool_id":"Calculator.Add@1","input":{"a":10,"b":5}}}"#;
    let (status, body) = http_raw(addr, "POST", "/tools/call", call).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""value":15"#), "{body}");
    let invoke = json!({"operation": "Calculator_Add", "arguments": {"a": 20, "b": 22},
        "id": "c1", "callback_url": receiver.url, "group_id": "g"});
    let (status, body) = http_raw(addr, "POST", "/invoke", &invoke.to_string()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(receiver.result().await["text"], "42");
    let (clean, logs) = server.terminate();
    assert!(clean && !logs.contains("panicked"), "{logs}");
}
