//! What long MCP calls cost at 2026-07-28, end to end through the app (`/mcp`, rmcp, the
//! invoker, the durable state), on each state store of `stores.rs`:
//!
//! - `mcp_task_<store>/round_trip`: a `tools/call` of a long-running tool (`Demo.Sleep`, 0 ms)
//!   by a client that declares the tasks extension: the task handle, then `tasks/get` until the
//!   task is completed with the result inlined (the create, the polls, the result);
//! - `mcp_progress/json` and `mcp_progress/streamed`: a tool that reports its progress ten
//!   times, called without a progress token (one JSON answer; the reports are dropped) and
//!   with one (ten `notifications/progress` then the result, on an SSE stream).
//!
//! Run with `cargo bench --bench mcp_long` (`scripts/bench --talk-back` runs it with moto);
//! figures are in docs/performance.md.

#[path = "../src/moto.rs"]
#[allow(dead_code)]
mod aws;
#[path = "../examples/spec_tools/tools.rs"]
#[allow(dead_code)]
mod example_tools;
#[path = "support/stores.rs"]
#[allow(dead_code)]
mod stores;

use axum::body::Body;
use axum::http::Request;
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use http_body_util::BodyExt;
use oxp_lambda::{App, Config, NoInput, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use tower::ServiceExt;

/// Reports progress ten times, then answers.
fn progress_tool() -> Tool {
    Tool::builder("Bench.Progress", "1.0.0")
        .description("Reports its progress ten times.")
        .handler(|_: NoInput, ctx: ToolContext| async move {
            for done in 1..=10 {
                ctx.progress(f64::from(done), Some(10.0), "step").await;
            }
            Ok::<_, ToolError>("done")
        })
}

fn app(state: &[(&str, String)], aws: Option<aws_config::SdkConfig>) -> App {
    // Every task of the bench is one caller's, each kept (and counted) until it expires.
    let mut vars: Vec<(&str, String)> = vec![
        ("OXP_METRICS", "off".into()),
        ("OXP_WORK_MAX_PER_CALLER", "1000000".into()),
    ];
    vars.extend(state.iter().cloned());
    let config = Config::from_vars(false, vars).expect("valid bench configuration");
    let mut tools = example_tools::tools();
    tools.push(progress_tool());
    let mut builder = App::builder(Registry::builder().tools(tools).build().unwrap())
        .config(config)
        .secret("MCP_STATE_KEY", "the-key-servers-sharing-a-table-hold");
    if let Some(aws) = aws {
        builder = builder.aws_config(aws);
    }
    builder
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .expect("the app builds")
}

/// A 2026-07-28 request's `_meta`, declaring the tasks extension.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    })
}

/// POSTs `message` to `/mcp` with `headers`; the whole answer.
async fn mcp(app: &App, message: Value, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from(message.to_string())).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec()
}

/// A 2026-07-28 `method` with `params`, its `Mcp-Name` being `name`; the result.
async fn modern(app: &App, method: &str, name: &str, mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name),
    ];
    let answer: Value = serde_json::from_slice(&mcp(app, message, &headers).await).unwrap();
    answer["result"].clone()
}

/// A task of `Demo.Sleep` (0 ms), created and polled until it completed.
async fn task_round_trip(app: &App) {
    let created = modern(
        app,
        "tools/call",
        "Demo_Sleep",
        json!({"name": "Demo_Sleep", "arguments": {"ms": 0}}),
    )
    .await;
    let id = created["taskId"].as_str().expect("a task").to_owned();
    loop {
        let task = modern(app, "tasks/get", &id, json!({"taskId": id})).await;
        if task["status"] == "completed" {
            assert_eq!(task["result"]["isError"], false);
            return;
        }
        tokio::task::yield_now().await;
    }
}

/// `Bench.Progress` over a handshake revision, with or without a progress token.
async fn progress_call(app: &App, token: bool) {
    let mut params = json!({"name": "Bench_Progress", "arguments": {}});
    if token {
        params["_meta"] = json!({"progressToken": "p"});
    }
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let answer = mcp(app, message, &[("mcp-protocol-version", "2025-11-25")]).await;
    let notes = answer
        .windows(22)
        .filter(|w| w == b"notifications/progress")
        .count();
    assert_eq!(notes, if token { 10 } else { 0 });
}

fn bench(c: &mut Criterion) {
    // Two workers, as the machine the figures come from has two cores.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for store in stores::stores(&rt, false) {
        let app = rt.block_on(async { app(&store.vars, store.aws.clone()) });
        let mut group = c.benchmark_group(format!("mcp_task_{}", store.name));
        group.bench_function("round_trip", |b| {
            b.to_async(&rt).iter(|| task_round_trip(&app))
        });
        group.finish();
    }
    let app = rt.block_on(async { app(&[("OXP_STATE", "off".into())], None) });
    let mut group = c.benchmark_group("mcp_progress");
    group.bench_function("json", |b| {
        b.to_async(&rt).iter(|| progress_call(&app, false))
    });
    group.bench_function("streamed", |b| {
        b.to_async(&rt).iter(|| progress_call(&app, true))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
