//! What a user sees of the function: in Lambda mode, the real bootstrap under a Runtime API on
//! loopback that passes a request id, an X-Ray trace id and a tenant id, and what it writes
//! (JSON lines and EMF metric documents) read back; locally, the binary's own lines.

use crate::common;

use common::runtime_api::{Bootstrap, RuntimeApi, TENANT_ID, TRACE_ID};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn event(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(format!("events/{name}.json")).unwrap()).unwrap()
}

fn output_file() -> PathBuf {
    std::env::temp_dir().join(format!("oxp-observe-{}.log", uuid::Uuid::new_v4()))
}

/// Every JSON object written to `path`, in order.
fn written(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

fn call_line<'a>(lines: &'a [Value], request_id: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["target"] == "oxp::call" && l["function_request_id"] == request_id)
        .unwrap_or_else(|| panic!("no call line for {request_id}: {lines:#?}"))
}

/// The EMF documents that define `metric`.
fn emf<'a>(lines: &'a [Value], metric: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| {
            l["_aws"]["CloudWatchMetrics"][0]["Metrics"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["Name"] == metric))
        })
        .collect()
}

#[tokio::test]
async fn in_lambda_every_call_line_carries_the_invocation_and_metrics_follow_each_invocation() {
    // The caller's trace context, as a W3C `traceparent` header.
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut traced = event("apigw-http-call-success-stage");
    traced["headers"]["traceparent"] = json!(traceparent);
    let (api, addr) = RuntimeApi::start(
        vec![
            ("req-cold".into(), traced, None),
            ("req-warm".into(), event("apigw-http-call-tool-error"), None),
        ],
        Duration::ZERO,
    )
    .await;
    let out = output_file();
    let mut bootstrap = Bootstrap::start_captured(addr, &[], &out);
    api.wait_for(2, &mut bootstrap).await;
    let lines = written(&out);

    let cold = call_line(&lines, "req-cold");
    assert_eq!(
        cold["cold_start"], true,
        "the first invocation of the environment"
    );
    assert_eq!(cold["xray_trace_id"], TRACE_ID);
    assert_eq!(cold["tenant_id"], TENANT_ID);
    assert_eq!(cold["function_name"], "tools");
    assert_eq!(cold["function_version"], "$LATEST");
    assert_eq!(cold["protocol"], "oxp");
    assert_eq!(cold["tool_id"], "Calculator.Add@1.0.0");
    assert_eq!(cold["outcome"], "success");
    assert!(cold["duration_ms"].as_f64().is_some());
    assert_eq!(cold["traceparent"], traceparent);
    assert!(cold.get("timestamp").is_none(), "CloudWatch times the line");
    let warm = call_line(&lines, "req-warm");
    assert_eq!(warm["cold_start"], false);
    assert_eq!(warm["outcome"], "tool_error");

    // Metrics: one cold start; calls and duration per tool and protocol; errors by class.
    let starts = emf(&lines, "cold_starts");
    assert_eq!(starts.len(), 1, "{starts:#?}");
    assert_eq!(starts[0]["cold_starts"], 1);
    assert_eq!(
        starts[0]["service"], "tools",
        "the function's name by default"
    );
    let calls = emf(&lines, "calls");
    assert_eq!(calls.len(), 2, "one document per invocation: {calls:#?}");
    let doc = calls[0];
    assert_eq!(
        doc["_aws"]["CloudWatchMetrics"][0]["Namespace"],
        "oxp-lambda"
    );
    assert_eq!(
        doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        json!([["service", "tool", "protocol"]])
    );
    assert_eq!(
        (
            doc["tool"].as_str(),
            doc["protocol"].as_str(),
            doc["calls"].as_u64()
        ),
        (Some("Calculator.Add@1.0.0"), Some("oxp"), Some(1))
    );
    let units: Vec<&Value> = doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["Name"] == "duration")
        .collect();
    assert_eq!(units[0]["Unit"], "Milliseconds");
    assert_eq!(doc["duration"].as_array().unwrap().len(), 1);
    let errors = emf(&lines, "errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        (
            errors[0]["tool"].as_str(),
            errors[0]["class"].as_str(),
            errors[0]["errors"].as_u64()
        ),
        (Some("Doorbell.Ring@0.1.0"), Some("tool_error"), Some(1))
    );
    // Each invocation's metrics are written before its answer: none is left for a frozen
    // environment. (The Runtime API got both answers after the documents above were written.)
    let _ = std::fs::remove_file(&out);
}

#[tokio::test]
async fn direct_invocations_carry_the_invocation_too_and_metrics_can_be_turned_off() {
    let context = json!({"custom": {"bedrockAgentCoreToolName": "t___Calculator_Add"}});
    let (api, addr) = RuntimeApi::start(
        vec![("req-gw".into(), json!({"a": 1, "b": 2}), Some(context))],
        Duration::ZERO,
    )
    .await;
    let out = output_file();
    let mut bootstrap = Bootstrap::start_captured(
        addr,
        &[("OXP_LAMBDA_ROLE", "agentcore"), ("OXP_METRICS", "off")],
        &out,
    );
    api.wait_for(1, &mut bootstrap).await;
    let lines = written(&out);
    let line = call_line(&lines, "req-gw");
    assert_eq!(line["protocol"], "agentcore");
    assert_eq!(line["cold_start"], true);
    assert_eq!(line["xray_trace_id"], TRACE_ID);
    assert_eq!(line["tenant_id"], TENANT_ID);
    assert!(emf(&lines, "calls").is_empty(), "OXP_METRICS=off");
    let _ = std::fs::remove_file(&out);
}

#[tokio::test]
async fn locally_lines_are_text_without_metrics_unless_asked() {
    for (metrics, expected) in [(None, false), (Some("emf"), true)] {
        let mut env = vec![("OXP_AUTH", "none")];
        env.extend(metrics.map(|m| ("OXP_METRICS", m)));
        let (server, base) = common::start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &env);
        let out = server.output_path();
        let call = r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":2}}}"#;
        let addr = base.trim_start_matches("http://");
        let (status, _) = common::http_raw(addr, "POST", "/tools/call", call).await;
        assert_eq!(status, 200);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let text = std::fs::read_to_string(out).unwrap();
        let call_line = text
            .lines()
            .find(|l| l.contains("oxp::call"))
            .unwrap_or_else(|| panic!("no call line in {text}"));
        assert!(!call_line.starts_with('{'), "text locally: {call_line}");
        assert!(!call_line.contains("cold_start"), "no invocation locally");
        assert_eq!(
            emf(&written(out), "calls").len() == 1,
            expected,
            "OXP_METRICS={metrics:?}: {text}"
        );
    }
}

#[tokio::test]
async fn an_mcp_request_writes_the_servers_lines_not_rmcps_own_unless_a_directive_names_it() {
    // rmcp logs a service started and ended (three `info` lines, the client's identity among
    // them) for each request it serves: beside a call's one line, noise an operator pays for.
    // Below `info` it writes each request whole, a tool's arguments among them: never. And it
    // writes a `warn` line for each request it answers with an error, whatever the caller
    // sent: an unknown method is the caller's doing, no warning for an operator.
    let cases = [
        (None, false),
        (Some("warn"), false),
        (Some("info,rmcp=info"), true),
        (Some("debug,rmcp=trace"), true),
    ];
    for (log, rmcp_lines) in cases {
        let mut env = vec![("OXP_AUTH", "none")];
        env.extend(log.map(|l| ("OXP_LOG", l)));
        let (server, base) = common::start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &env);
        let addr = base.trim_start_matches("http://");
        let headers = format!(
            "Host: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        );
        let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#;
        let (status, _) = common::http_raw_with(addr, "POST", "/mcp", &headers, initialize).await;
        assert_eq!(status, 200);
        // Its id forged to start a line of its own, which rmcp writes by its `Display`.
        let unknown =
            r#"{"jsonrpc":"2.0","id":"rpc\nINFO oxp::call: forged=1","method":"no/such/method"}"#;
        let (status, body) = common::http_raw_with(addr, "POST", "/mcp", &headers, unknown).await;
        assert!(status == 200 && body.contains("-32601"), "{status} {body}");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let text = std::fs::read_to_string(server.output_path()).unwrap();
        assert_eq!(
            text.contains("rmcp::"),
            rmcp_lines,
            "OXP_LOG={log:?}: {text}"
        );
        assert!(
            !text.contains("received request"),
            "no request whole: {text}"
        );
        assert!(
            !text
                .lines()
                .any(|l| l.starts_with("INFO oxp::call: forged")),
            "a caller's newline starts no line: {text}"
        );
        assert_eq!(
            text.lines()
                .any(|l| l.contains("response error") && l.contains(r"rpc\nINFO")),
            rmcp_lines,
            "rmcp's line of the refused request, its id escaped, when it is let log: {text}"
        );
    }
}

#[tokio::test]
async fn locally_json_lines_carry_their_time_and_in_lambda_cloudwatch_adds_it() {
    // A container's log shipper reads the JSON line: without a time of its own, an event's
    // time was the shipper's.
    let env = [("OXP_AUTH", "none"), ("OXP_LOG_FORMAT", "json")];
    let (server, base) = common::start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &env);
    let call = r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":2}}}"#;
    let addr = base.trim_start_matches("http://");
    let (status, _) = common::http_raw(addr, "POST", "/tools/call", call).await;
    assert_eq!(status, 200);
    server.output_holding("oxp::call").await;
    let lines = written(server.output_path());
    let line = lines.iter().find(|l| l["target"] == "oxp::call").unwrap();
    let time = line["timestamp"].as_str().unwrap_or_default();
    assert!(time.starts_with("20") && time.ends_with('Z'), "{line}");
}

#[tokio::test]
async fn locally_a_burst_of_calls_is_counted_whole_and_timed_as_emf_holds_never_an_error_each() {
    // EMF holds 100 values of a metric a document: its collector dropped each later one with an
    // error line, a line per call under load before the next second's flush.
    let env = [("OXP_AUTH", "none"), ("OXP_METRICS", "emf")];
    let (server, base) = common::start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &env);
    let addr = base.trim_start_matches("http://").to_owned();
    let call = r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":2}}}"#;
    let senders = (0..10).map(|_| {
        let addr = addr.clone();
        tokio::spawn(async move {
            for _ in 0..30 {
                let (status, _) = common::http_raw(&addr, "POST", "/tools/call", call).await;
                assert_eq!(status, 200);
            }
        })
    });
    for sender in senders {
        sender.await.unwrap();
    }
    // Flushed each second: read until every call is counted (a loaded machine flushes late).
    let counted = |documents: &[Value]| -> u64 {
        emf(documents, "calls")
            .into_iter()
            .filter(|d| d["tool"] == "Calculator.Add@1.0.0")
            .map(|d| d["calls"].as_u64().unwrap())
            .sum()
    };
    let end = std::time::Instant::now() + Duration::from_secs(10);
    let documents = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let documents = written(server.output_path());
        if counted(&documents) >= 300 || std::time::Instant::now() > end {
            break documents;
        }
    };
    let text = std::fs::read_to_string(server.output_path()).unwrap();
    assert!(!text.contains("Failed to record"), "an error line per call");
    let adds = emf(&documents, "calls");
    assert_eq!(counted(&documents), 300, "every call counted: {adds:#?}");
    let timed: Vec<usize> = emf(&documents, "duration")
        .into_iter()
        .map(|d| d["duration"].as_array().map_or(1, Vec::len))
        .collect();
    assert!(
        !timed.is_empty() && timed.iter().all(|&n| n <= 100),
        "{timed:?}"
    );
}
