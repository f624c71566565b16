//! In-process cost of the OXP call path, body bytes in and response bytes out (parse, resolve,
//! validate, run, serialize), for a successful `Calculator.Add` (over OXP and over MCP's
//! `tools/call`, at a handshake revision and at 2026-07-28), a 422, and `GET /tools`, with
//! registries of 1, 100 and 10,000 tools (three versions each, so 3, 300 and 30,000 tool
//! versions). Run with `cargo bench --bench call_path`; figures are in docs/performance.md.

use axum::body::Body;
use axum::http::Request;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use http_body_util::BodyExt;
use oxp_lambda::{App, Call, Config, Invoker, Registry, Tool};
use serde_json::json;
use std::hint::black_box;
use tower::ServiceExt;

#[path = "../examples/spec_tools/tools.rs"]
mod example_tools;

/// The example tools plus `filler` generated tools in three versions each (one of them counts
/// as the first "tool" so sizes are 1, 100 and 10,000 tools).
fn app(tools: usize) -> App {
    let mut list = example_tools::tools();
    for i in 0..tools.saturating_sub(1) {
        for version in ["1.0.0", "1.1.0", "2.0.0"] {
            list.push(
                Tool::builder(format!("Filler.Tool{i}"), version)
                    .description("A generated tool.")
                    .raw_handler(
                        json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
                        Some(json!({"type": "integer"})),
                        |input, _| async move { Ok(input["x"].clone()) },
                    ),
            );
        }
    }
    let registry = Registry::builder().tools(list).build().unwrap();
    let mut config = Config::default();
    // Measure the protocol path itself; the idempotency store is measured separately below.
    config.idempotency.mode = oxp_lambda::config::IdempotencyMode::Off;
    App::builder(registry)
        .config(config)
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .expect("the app builds")
}

async fn roundtrip(
    app: &App,
    method: &str,
    path: &str,
    body: impl Into<Body>,
) -> axum::body::Bytes {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.into())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    response.into_body().collect().await.unwrap().to_bytes()
}

/// The `Calculator.Add` call at MCP 2026-07-28: the revision's standard headers, and its
/// `_meta` on the request (`body`: a client that declares no capability, or one that takes forms).
async fn modern(app: &App, body: &'static [u8]) -> axum::body::Bytes {
    let request = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "Calculator_Add")
        .body(Body::from(body))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    response.into_body().collect().await.unwrap().to_bytes()
}

const MODERN_ADD: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calculator_Add","arguments":{"a":10,"b":5},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"b","version":"1"}}}}"#;

/// The same from a client that takes forms: a call that may be asked, whose round is bound to
/// its caller, tool and arguments.
const MODERN_FORM_ADD: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calculator_Add","arguments":{"a":10,"b":5},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"b","version":"1"}}}}"#;
const ADD: &[u8] = br#"{"$schema":"urn:oxp:1.0","request":{"call_id":"123e4567-e89b-12d3-a456-426614174000","tool_id":"Calculator.Add@1.0.0","input":{"a":10,"b":5}}}"#;
const MCP_ADD: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calculator_Add","arguments":{"a":10,"b":5}}}"#;
const INVALID: &[u8] = br#"{"$schema":"urn:oxp:1.0","request":{"call_id":"123e4567-e89b-12d3-a456-426614174000","tool_id":"Calculator.Add@1.0.0","input":{"a":10,"b":"infinity"}}}"#;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    by_registry_size(c, &rt);
    idempotent(c, &rt);
    invoker_alone(c, &rt);
}

/// Each protocol's call, the refusal of invalid input and the listing, with 1, 100 and 10,000
/// tools registered; then the 2026-07-28 call from a client that takes forms.
fn by_registry_size(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    for tools in [1usize, 100, 10_000] {
        let app = app(tools);
        let mut group = c.benchmark_group("call_path");
        group.bench_with_input(BenchmarkId::new("calculator_add", tools), &app, |b, app| {
            b.to_async(rt)
                .iter(|| async { black_box(roundtrip(app, "POST", "/tools/call", ADD).await) })
        });
        group.bench_with_input(
            BenchmarkId::new("mcp_calculator_add", tools),
            &app,
            |b, app| {
                b.to_async(rt)
                    .iter(|| async { black_box(roundtrip(app, "POST", "/mcp", MCP_ADD).await) })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("mcp_modern_calculator_add", tools),
            &app,
            |b, app| {
                b.to_async(rt)
                    .iter(|| async { black_box(modern(app, MODERN_ADD).await) })
            },
        );
        group.bench_with_input(BenchmarkId::new("validation_422", tools), &app, |b, app| {
            b.to_async(rt)
                .iter(|| async { black_box(roundtrip(app, "POST", "/tools/call", INVALID).await) })
        });
        group.bench_with_input(BenchmarkId::new("list_tools", tools), &app, |b, app| {
            b.to_async(rt)
                .iter(|| async { black_box(roundtrip(app, "GET", "/tools", &b""[..]).await) })
        });
        group.finish();
    }
    // The 2026-07-28 call from a client that takes forms (so it may be asked).
    let forms = app(1);
    c.bench_function("call_path/mcp_modern_form_client_calculator_add/1", |b| {
        b.to_async(rt)
            .iter(|| async { black_box(modern(&forms, MODERN_FORM_ADD).await) })
    });
}

/// The OXP call with a `call_id`: replayed, new at each call, and new within a share per caller.
fn idempotent(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    // The same successful call with the default in-memory idempotency store and a call_id.
    let registry = example_tools::registry().unwrap();
    let idempotent = App::builder(registry)
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .expect("the app builds");
    c.bench_function("call_path/calculator_add_idempotent_replay", |b| {
        b.to_async(rt)
            .iter(|| async { black_box(roundtrip(&idempotent, "POST", "/tools/call", ADD).await) })
    });
    // Every call with a call_id of its own, as under load: each claims its key and stores its
    // outcome (the store fills to its bound, then evicts). The body is formatted per call.
    let mut n = 0u64;
    c.bench_function("call_path/calculator_add_idempotent_new", |b| {
        b.to_async(rt).iter(|| {
            n += 1;
            let (app, body) = (&idempotent, numbered(n));
            async move { black_box(roundtrip(app, "POST", "/tools/call", body).await) }
        })
    });
    // The same with a share per caller (the default where callers authenticate): each outcome
    // also listed in its caller's share.
    let mut config = Config::default();
    config.idempotency.max_bytes_per_caller = config.idempotency.max_bytes / 4;
    let registry = example_tools::registry().unwrap();
    let shared = App::builder(registry)
        .config(config)
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .expect("the app builds");
    c.bench_function("call_path/calculator_add_idempotent_new_per_caller", |b| {
        b.to_async(rt).iter(|| {
            n += 1;
            let (app, body) = (&shared, numbered(n));
            async move { black_box(roundtrip(app, "POST", "/tools/call", body).await) }
        })
    });
}

/// The invoker alone (no protocol).
fn invoker_alone(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    // The invoker alone (no protocol), for a caller with a subject: with one pool, and with a
    // share of it per caller (the default where callers authenticate), its own slot taken
    // beside the pool's.
    let alone = Invoker::local(example_tools::registry().unwrap());
    let shared = Invoker::local(example_tools::registry().unwrap()).with_calls_per_caller(16);
    let alice = || {
        let mut call = Call::tool("Calculator.Add", json!({"a": 10, "b": 5}));
        call.principal.subject = Some("alice".into());
        call
    };
    c.bench_function("call_path/invoker_calculator_add", |b| {
        b.to_async(rt)
            .iter(|| async { black_box(alone.invoke(alice()).await.is_ok()) })
    });
    c.bench_function("call_path/invoker_calculator_add_slot_per_caller", |b| {
        b.to_async(rt)
            .iter(|| async { black_box(shared.invoke(alice()).await.is_ok()) })
    });
}

/// The successful call with the call id `n`, formatted per call as a client's would be.
fn numbered(n: u64) -> String {
    let add = std::str::from_utf8(ADD).unwrap();
    add.replace("426614174000", &format!("{n:012}"))
}

/// The per-call observability cost: the call of `calculator_add/1` with the local server's
/// default log line (text, handed to a writer thread that writes to a sink), and with Lambda's
/// (a JSON line written before the answer, plus the EMF metrics written after each call).
fn observed(c: &mut Criterion) {
    use tracing_subscriber::prelude::*;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let app = app(1);
    {
        // The local server's own log (text, batched to a writer thread), to a sink.
        let (text, _flush) = oxp_lambda::local_text_log(std::io::sink());
        let _local = tracing::dispatcher::set_default(&text);
        c.bench_function("call_path/calculator_add_logged/1", |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(roundtrip(&app, "POST", "/tools/call", ADD).await) })
        });
    }
    #[cfg(feature = "metrics")]
    {
        let json = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .without_time()
                .with_writer(std::io::sink)
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO),
        );
        let _lambda = tracing::subscriber::set_default(json);
        // Installed last: the recorder is the process's from here on.
        let metrics = metrics_cloudwatch_embedded::Builder::new()
            .cloudwatch_namespace("oxp-lambda")
            .with_dimension("service", "bench")
            .init()
            .unwrap();
        // An app of its own: a tool's metrics are registered with the recorder of its first
        // call, which for `app` was before this one was installed.
        let app = self::app(1);
        c.bench_function("call_path/calculator_add_lambda_observed/1", |b| {
            b.to_async(&rt).iter(|| async {
                let answer = black_box(roundtrip(&app, "POST", "/tools/call", ADD).await);
                metrics.flush(std::io::sink()).unwrap();
                answer
            })
        });
    }
}

criterion_group!(benches, bench, observed);
criterion_main!(benches);

// The same allocator as the `oxp-lambda` binary (Cargo feature `mimalloc`, on by default).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
