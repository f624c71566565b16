//! What Lambda users read a function by, as Powertools for AWS Lambda writes it: every JSON
//! line an invocation logs carries `cold_start`, `function_request_id`, `xray_trace_id`,
//! `tenant_id` (when Lambda gives one), `function_name` and `function_version`; and metrics
//! (`calls`, `errors`, `duration` per tool and protocol, `cold_starts`) are written in
//! CloudWatch Embedded Metric Format after each invocation, so CloudWatch makes them metrics
//! with no API call, agent or extension, and nothing waits in a buffer when Lambda freezes the
//! environment after the answer.
//!
//! The invocation's fields are rendered into a JSON fragment once, when it begins, and held in
//! a task-local for the invocation's future; the log writer splices it into each line.

// Without the Lambda transport no invocation begins.
#![cfg_attr(not(feature = "lambda"), allow(dead_code))]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(feature = "otel")]
pub(crate) mod otel;

/// Without the `otel` feature there are no spans to send.
#[cfg(not(feature = "otel"))]
mod otel {
    pub(crate) async fn flush() {}
}

/// Whether the next invocation is this execution environment's first.
static COLD: AtomicBool = AtomicBool::new(true);

tokio::task_local! {
    static CURRENT: Invocation;
}

/// One invocation's fields.
#[derive(Clone, Debug)]
pub(crate) struct Invocation(Arc<Fields>);

/// What an invocation's lines and spans carry.
#[derive(Debug)]
pub(crate) struct Fields {
    /// Every field as a JSON fragment (`"name":value` pairs, comma-separated).
    pub(crate) json: Box<str>,
    /// Lambda's request id.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) request_id: Box<str>,
    /// Lambda's X-Ray trace header, when it gave one.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) xray_trace_id: Option<Box<str>>,
    /// Whether this is the execution environment's first invocation.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) cold_start: bool,
}

/// Longest id kept from the Runtime API's headers (they are Lambda's, but still bounded).
const MAX_ID_CHARS: usize = 256;

impl Invocation {
    /// An invocation with Lambda's `request_id`, X-Ray `trace_id` and `tenant_id`; the first of
    /// the execution environment is its cold start (counted in the `cold_starts` metric).
    pub(crate) fn begin(request_id: &str, trace_id: Option<&str>, tenant_id: Option<&str>) -> Self {
        let cold = COLD.swap(false, Ordering::Relaxed);
        if cold {
            metrics::counter!(COLD_STARTS).increment(1);
        }
        let mut fields = serde_json::Map::new();
        let mut put = |name: &str, value: Option<&str>| {
            if let Some(v) = value.filter(|v| !v.is_empty()) {
                let bounded: String = v.chars().take(MAX_ID_CHARS).collect();
                fields.insert(name.to_owned(), bounded.into());
            }
        };
        put("function_request_id", Some(request_id));
        put("xray_trace_id", trace_id);
        put("tenant_id", tenant_id);
        put("function_name", function().name.as_deref());
        put("function_version", function().version.as_deref());
        fields.insert("cold_start".to_owned(), cold.into());
        let object = serde_json::Value::Object(fields).to_string();
        let bounded = |v: &str| v.chars().take(MAX_ID_CHARS).collect::<String>().into();
        Self(Arc::new(Fields {
            // `{...}` without its braces, to splice into a line's object.
            json: object[1..object.len() - 1].into(),
            request_id: bounded(request_id),
            xray_trace_id: trace_id.filter(|v| !v.is_empty()).map(bounded),
            cold_start: cold,
        }))
    }

    /// Runs `future` as this invocation: the lines it logs carry its fields.
    pub(crate) async fn scope<F: Future>(self, future: F) -> F::Output {
        CURRENT.scope(self, future).await
    }
}

/// The fields of the invocation the current task runs, if any.
pub(crate) fn current_fields() -> Option<Arc<Fields>> {
    CURRENT.try_with(|i| i.0.clone()).ok()
}

/// The function, as Lambda describes it to the process.
struct Function {
    name: Option<String>,
    version: Option<String>,
}

fn function() -> &'static Function {
    static FUNCTION: std::sync::OnceLock<Function> = std::sync::OnceLock::new();
    FUNCTION.get_or_init(|| Function {
        name: std::env::var("AWS_LAMBDA_FUNCTION_NAME").ok(),
        version: std::env::var("AWS_LAMBDA_FUNCTION_VERSION").ok(),
    })
}

/// Cold starts (a counter, dimension `service` only).
pub(crate) const COLD_STARTS: &str = "cold_starts";

#[cfg(feature = "metrics")]
mod emf {
    use crate::config::MetricsConfig;
    use metrics_cloudwatch_embedded::Collector;
    use std::sync::OnceLock;

    static COLLECTOR: OnceLock<&'static Collector> = OnceLock::new();

    /// Installs the EMF recorder (once per process; later calls do nothing). Returns whether
    /// metrics are recorded.
    pub(crate) fn install(config: &MetricsConfig) -> bool {
        if !config.enabled {
            return false;
        }
        if COLLECTOR.get().is_some() {
            return true;
        }
        let built = metrics_cloudwatch_embedded::Builder::new()
            .cloudwatch_namespace(config.namespace.clone())
            .with_dimension("service", config.service.clone())
            .init();
        match built {
            Ok(collector) => {
                metrics::describe_histogram!(
                    oxp_lambda_core::invoke::metrics::DURATION,
                    metrics::Unit::Milliseconds,
                    "time in the tool"
                );
                metrics::describe_counter!(
                    oxp_lambda_core::invoke::metrics::CALLS,
                    metrics::Unit::Count,
                    "calls"
                );
                metrics::describe_counter!(
                    oxp_lambda_core::invoke::metrics::ERRORS,
                    metrics::Unit::Count,
                    "calls that did not succeed"
                );
                metrics::describe_counter!(super::COLD_STARTS, metrics::Unit::Count, "cold starts");
                let _ = COLLECTOR.set(collector);
                true
            }
            Err(e) => {
                // Another recorder is installed (a program of its own): leave it be.
                tracing::warn!(error = %e, "EMF metrics not installed");
                false
            }
        }
    }

    /// Writes what was recorded since the last flush to stdout, one EMF document per line.
    pub(crate) fn flush() {
        if let Some(collector) = COLLECTOR.get() {
            let out = std::io::stdout();
            let mut out = out.lock();
            if let Err(e) = collector.flush(&mut out) {
                tracing::warn!(error = %e, "EMF metrics not written");
            }
        }
    }
}

#[cfg(feature = "metrics")]
pub(crate) use emf::{flush as flush_metrics, install as install_metrics};

/// Without the `metrics` feature nothing is recorded.
#[cfg(not(feature = "metrics"))]
pub(crate) fn install_metrics(_: &crate::config::MetricsConfig) -> bool {
    false
}

/// Without the `metrics` feature nothing is written.
#[cfg(not(feature = "metrics"))]
pub(crate) fn flush_metrics() {}

/// Runs one Lambda invocation: its lines carry its fields, and the metrics it recorded are
/// written before its answer goes back (Lambda may freeze the environment right after).
pub(crate) async fn invocation<F: Future>(
    request_id: &str,
    trace_id: Option<&str>,
    tenant_id: Option<&str>,
    future: F,
) -> F::Output {
    let output = Invocation::begin(request_id, trace_id, tenant_id)
        .scope(future)
        .await;
    flush_metrics();
    otel::flush().await;
    output
}
