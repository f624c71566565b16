//! The real binary as a local server on loopback: start, serve, log, shut down.

use crate::common;

use common::http_raw;
use std::process::Command;

struct Server {
    process: common::Process,
    addr: String,
}

/// The binary with `envs` and `args`, its lines as JSON; its own state file and directory.
fn start(envs: &[(&str, &str)], args: &[&str]) -> Server {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    command
        .args(args)
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .env("OXP_LOG_FORMAT", "json")
        .envs(envs.iter().copied());
    let (process, line) = common::Process::start("oxp-lambda", command);
    let addr = line
        .trim()
        .strip_prefix("OXP server listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    Server { process, addr }
}

/// SIGTERM: whether it exited with 0, and what it logged.
fn terminate(server: Server) -> (bool, String) {
    server.process.terminate()
}

#[tokio::test]
async fn the_binary_serves_every_endpoint_on_loopback_and_stops_on_sigterm() {
    let server = start(&[], &["--port", "0"]);
    assert!(
        server.addr.starts_with("127.0.0.1:"),
        "loopback by default: {}",
        server.addr
    );
    let (status, body) = http_raw(&server.addr, "GET", "/health", "").await;
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));
    let (status, body) = http_raw(&server.addr, "GET", "/tools", "").await;
    assert_eq!(status, 200);
    assert!(body.contains("Calculator.Add@1.0.0"));
    let call = r#"{"request":{"tool_id":"Calculator.Add@1","call_id":"c-1","trace_id":"t-1","input":{"a":10,"b":5}}}"#;
    let (status, body) = http_raw(&server.addr, "POST", "/call", call).await;
    assert_eq!(status, 200);
    assert!(body.contains(r#""value":15"#), "{body}");
    let sms = r#"{"request":{"tool_id":"SMS.Send","call_id":"c-2","input":{"to":"+1555","message":"hi"},"context":{"secrets":[{"id":"TWILIO_API_KEY","value":"sk_live_SECRET_VALUE_42"}],"authorization":[{"id":"x","token":"TOKEN_VALUE_42"}]}}}"#;
    let (status, body) = http_raw(&server.addr, "POST", "/tools/call", sms).await;
    assert_eq!(status, 200);
    assert!(!body.contains("SECRET_VALUE_42") && !body.contains("TOKEN_VALUE_42"));

    let (clean, logs) = terminate(server);
    assert!(clean, "graceful shutdown exits 0; logs: {logs}");
    assert!(
        logs.contains("authentication is off"),
        "a warning when auth is off: {logs}"
    );
    // One structured line per call, with call_id, trace_id, tool id, outcome and duration.
    let line = logs
        .lines()
        .find(|l| l.contains(r#""call_id":"c-1""#))
        .unwrap_or_else(|| panic!("no call line in {logs}"));
    let line: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(line["trace_id"], "t-1");
    assert_eq!(line["tool_id"], "Calculator.Add@1.0.0");
    assert_eq!(line["outcome"], "success");
    // In whole microseconds (as OXP's `duration`), never 0.049944999999999996.
    let ms = line["duration_ms"].as_f64().unwrap();
    assert_eq!((ms * 1e3).round() / 1e3, ms, "{line}");
    assert!(logs.contains(r#""call_id":"c-2""#));
    assert!(
        !logs.contains("SECRET_VALUE_42") && !logs.contains("TOKEN_VALUE_42"),
        "{logs}"
    );
}

/// mimalloc asks the kernel for transparent huge pages on its arenas; the binary built with it
/// turns them off for its process before its threads start (src/main.rs), as the kernel
/// reports it (`THP_enabled`, Linux 5.0 and later).
#[cfg(all(feature = "mimalloc", target_os = "linux"))]
#[test]
fn the_binary_with_mimalloc_runs_without_transparent_huge_pages() {
    let server = start(&[], &["--port", "0"]);
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.process.id())).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("THP_enabled:"))
        .expect("the kernel reports THP_enabled");
    assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
}

#[tokio::test]
async fn oxp_port_sets_the_port_and_a_stage_free_base_path_is_stripped() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port().to_string();
    drop(probe);
    let server = start(&[("OXP_PORT", &port), ("OXP_BASE_PATH", "/api")], &[]);
    assert_eq!(server.addr, format!("127.0.0.1:{port}"));
    let (status, _) = http_raw(&server.addr, "GET", "/api/tools", "").await;
    assert_eq!(status, 200);
    let (status, _) = http_raw(&server.addr, "GET", "/tools", "").await;
    assert_eq!(status, 200, "routes also answer without the base path");
}

#[test]
fn in_lambda_a_missing_oxp_auth_fails_at_init_with_one_json_line() {
    let output = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"))
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .env_remove("OXP_AUTH")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let line: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(line["level"], "ERROR");
    assert!(
        line["message"].as_str().unwrap().contains("OXP_AUTH"),
        "{stderr}"
    );
}

#[test]
fn a_bad_argument_is_a_usage_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"))
        .arg("--port")
        .arg("http")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[tokio::test]
async fn sms_send_reads_its_key_from_the_local_source() {
    let server = start(
        &[("OXP_SECRET_TWILIO_API_KEY", "local-value")],
        &["--port", "0"],
    );
    let sms = r#"{"request":{"tool_id":"SMS.Send","input":{"to":"+1555","message":"hi"}}}"#;
    let (status, body) = http_raw(&server.addr, "POST", "/call", sms).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""status":"sent""#));
    assert!(!body.contains("local-value"));
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn sms_send_reads_its_key_from_secrets_manager_when_configured() {
    let moto = common::aws::moto_url();
    let prefix = common::aws::unique_prefix();
    let client = aws_sdk_secretsmanager::Client::new(&common::aws::sdk_config(&moto).await);
    client
        .create_secret()
        .name(format!("{prefix}TWILIO_API_KEY"))
        .secret_string("from-secrets-manager")
        .send()
        .await
        .unwrap();
    // Configured only through the environment, as in Lambda.
    let server = start(
        &[
            ("OXP_SECRETS_SOURCE", "aws"),
            ("OXP_SECRETS_PREFIX", &prefix),
            ("AWS_ENDPOINT_URL", &moto),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
        ],
        &["--port", "0"],
    );
    let sms = r#"{"request":{"tool_id":"SMS.Send","input":{"to":"+1555","message":"hi"}}}"#;
    let (status, body) = http_raw(&server.addr, "POST", "/call", sms).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""status":"sent""#));
}

#[tokio::test]
async fn with_jwt_auth_every_endpoint_but_health_needs_a_token() {
    let server = start(
        &[
            ("OXP_AUTH", "jwt"),
            ("OXP_JWT_HS256_SECRET_ID", "JWT_KEY"),
            ("OXP_SECRET_JWT_KEY", "local-signing-key-0123456789abcdef"),
        ],
        &["--port", "0"],
    );
    let (status, _) = http_raw(&server.addr, "GET", "/health", "").await;
    assert_eq!(status, 200);
    let (status, body) = http_raw(&server.addr, "GET", "/tools", "").await;
    assert_eq!(status, 401);
    assert!(body.contains("Authentication failed"));
}

#[tokio::test]
async fn the_local_server_serves_async_invocations_end_to_end() {
    let receiver = common::receiver::Receiver::ok().await;
    let dead = std::env::temp_dir().join(format!("oxp-dead-{}.jsonl", uuid::Uuid::new_v4()));
    let server = start(
        &[("OXP_RAP_DEAD_LETTER_FILE", dead.to_str().unwrap())],
        &["--port", "0"],
    );
    let (status, body) = http_raw(&server.addr, "GET", "/.well-known/rap-toolset", "").await;
    assert_eq!(status, 200);
    let toolset: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        toolset["endpoint"],
        format!("http://{}/invoke", server.addr),
        "the endpoint points back at this server"
    );
    let invocation = serde_json::json!({
        "operation": "Calculator_Add",
        "arguments": {"a": 20, "b": 22},
        "id": "call_local",
        "callback_url": receiver.url,
        "group_id": "thread_local"
    });
    let (status, body) = http_raw(&server.addr, "POST", "/invoke", &invocation.to_string()).await;
    assert_eq!((status, body.as_str()), (200, r#"{"status":"accepted"}"#));
    let result = receiver.result().await;
    assert_eq!(result["text"], "42");
    assert_eq!(result["group_id"], "thread_local");
    let (clean, logs) = terminate(server);
    assert!(clean, "{logs}");
    assert!(logs.contains("oxp::rap::audit"), "{logs}");
    assert!(!dead.exists(), "nothing was dead-lettered");
}

#[tokio::test]
async fn at_sigterm_a_call_without_a_deadline_and_the_work_running_share_one_drain_period() {
    // A call without a deadline (OXP_TOOL_TIMEOUT_MS=0) held the process until it ended, and
    // only then did the work running here get its drain period: a shutdown an orchestrator's
    // grace (10 s for docker, 30 s for Kubernetes) ends with SIGKILL.
    let receiver = common::receiver::Receiver::ok().await;
    let server = start(
        &[("OXP_TOOL_TIMEOUT_MS", "0"), ("OXP_WORK_DRAIN_SECS", "2")],
        &["--port", "0"],
    );
    let invocation = serde_json::json!({
        "operation": "Demo_Sleep", "arguments": {"ms": 600000}, "id": "running",
        "callback_url": receiver.url, "group_id": "g"
    });
    let (status, _) = http_raw(&server.addr, "POST", "/invoke", &invocation.to_string()).await;
    assert_eq!(status, 200);
    let addr = server.addr.clone();
    let call = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let body = r#"{"request":{"tool_id":"Demo.Sleep","input":{"ms":600000}}}"#;
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let head = format!(
            "POST /tools/call HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream
            .write_all(format!("{head}{body}").as_bytes())
            .await
            .unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        answer
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let asked = std::time::Instant::now();
    // Waited for off this thread: the receiver answers on it meanwhile.
    let (clean, logs) = tokio::task::spawn_blocking(|| terminate(server))
        .await
        .unwrap();
    let took = asked.elapsed();
    assert!(clean, "{logs}");
    // The period once, then the cancelled work's grace (1 s) and its letting go.
    assert!(
        took >= std::time::Duration::from_secs(2) && took < std::time::Duration::from_secs(5),
        "stopped {took:?} after SIGTERM: {logs}"
    );
    assert!(
        call.await.unwrap().is_empty(),
        "the call's connection closed"
    );
    assert!(logs.contains("requests still running after OXP_WORK_DRAIN_SECS"));
    let result = receiver.result().await;
    assert_eq!(
        result["id"], "running",
        "the work's result delivered: {result}"
    );
}

#[tokio::test]
async fn a_second_signal_during_the_drain_stops_the_server_at_once() {
    // An operator who presses Ctrl-C again does not wait out the drain period.
    let server = start(
        &[("OXP_TOOL_TIMEOUT_MS", "0"), ("OXP_WORK_DRAIN_SECS", "60")],
        &["--port", "0"],
    );
    let addr = server.addr.clone();
    let call = tokio::spawn(async move {
        let body = r#"{"request":{"tool_id":"Demo.Sleep","input":{"ms":600000}}}"#;
        http_raw(&addr, "POST", "/tools/call", body).await
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let pid = server.process.id().to_string();
    let signal = |name: &str| {
        let sent = Command::new("kill").args([name, &pid]).status().unwrap();
        assert!(sent.success());
    };
    signal("-TERM");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let asked = std::time::Instant::now();
    signal("-INT");
    let (clean, logs) = tokio::task::spawn_blocking(|| server.process.wait())
        .await
        .unwrap();
    assert!(!clean, "stopped, not drained: {logs}");
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(2),
        "{logs}"
    );
    assert!(logs.contains("a second signal: stopping at once"), "{logs}");
    call.abort();
}

#[tokio::test]
async fn a_server_whose_standard_output_nobody_reads_serves() {
    // `oxp-lambda | head -1`, or a supervisor that read the address and closed its end: the
    // line saying where it listens met a closed pipe, and println! panicked at start.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let dir = std::env::temp_dir().join(format!("oxp-pipe-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"))
        .args(["--port", &port.to_string()])
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .current_dir(&dir)
        .stdout(writer)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    let mut answered = None;
    for _ in 0..100 {
        if let Ok(stream) = tokio::net::TcpStream::connect(&addr).await {
            drop(stream);
            answered = Some(http_raw(&addr, "GET", "/health", "").await);
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the server exited");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(answered.expect("it listened").0, 200);
}

#[tokio::test]
async fn a_misspelled_variable_is_named_at_start_beside_the_one_meant() {
    // `OXP_TOOL_TIMEOUT=5` was silently no setting: the tools ran 30 s, the default.
    let server = start(
        &[("OXP_TOOL_TIMEOUT", "5"), ("OXP_MY_TOOL_URL", "x")],
        &["--port", "0"],
    );
    let logs = server.process.output_holding("misspelled").await;
    let warned: Vec<&str> = logs.lines().filter(|l| l.contains("misspelled")).collect();
    assert_eq!(
        warned.len(),
        1,
        "a tool's own variable is not named: {logs}"
    );
    assert!(
        warned[0].contains(r#""variable":"OXP_TOOL_TIMEOUT""#),
        "{logs}"
    );
    assert!(
        warned[0].contains(r#""read":"OXP_TOOL_TIMEOUT_MS""#),
        "{logs}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_variable_that_is_not_utf8_stops_the_start_only_when_it_is_ours() {
    // `std::env::vars` panics on the first variable that is not UTF-8, whoever's.
    use std::os::unix::ffi::OsStrExt;
    let bytes = std::ffi::OsStr::from_bytes(b"\xff\xfe");
    let mut theirs = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    theirs
        .env("NOT_OURS", bytes)
        .env_remove("AWS_LAMBDA_RUNTIME_API");
    theirs.env("OXP_LOG_FORMAT", "json").args(["--port", "0"]);
    let (process, line) = common::Process::start("oxp-lambda", theirs);
    assert!(line.starts_with("OXP server listening on"), "{line}");
    drop(process);
    // The binary run with `edit`: its exit code and what it said.
    let refused = |edit: &dyn Fn(&mut Command)| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
        edit(command.env_remove("AWS_LAMBDA_RUNTIME_API"));
        let out = command.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, said) = refused(&|c| {
        c.env("OXP_PORT", bytes);
    });
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("OXP_PORT is not valid UTF-8"), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    // An argument likewise (`std::env::args` panics on it): refused as any bad argument.
    let (code, said) = refused(&|c| {
        c.arg("--port").arg(bytes);
    });
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("is not a port number"), "{said}");
}
