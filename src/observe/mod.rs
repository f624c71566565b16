//! What Lambda users read a function by, as Powertools for AWS Lambda writes it: every JSON
//! line an invocation logs carries `cold_start`, `function_request_id`, `xray_trace_id`,
//! `tenant_id` (when Lambda gives one), `function_name` and `function_version`; and metrics
//! (`calls`, `errors`, `duration` per tool and protocol, `cold_starts`) are written in
//! CloudWatch Embedded Metric Format after each invocation ([`emf`], feature `metrics`), so
//! CloudWatch makes them metrics with no API call, agent or extension, and nothing waits in a
//! buffer when Lambda freezes the environment after the answer. Spans go to a collector
//! ([`otel`], feature `otel`).
//!
//! The invocation's fields are rendered into a JSON fragment once, when it begins (by the Lambda
//! transport), and held in a task-local for the invocation's future; the log writer splices it
//! into each line.

#[cfg(feature = "metrics")]
mod emf;
#[cfg(not(feature = "metrics"))]
#[path = "emf_off.rs"]
mod emf;
#[cfg(feature = "otel")]
pub(crate) mod otel;
#[cfg(not(feature = "otel"))]
#[path = "otel_off.rs"]
pub(crate) mod otel;

pub(crate) use emf::{flush as flush_metrics, install as install_metrics};

use crate::settings::{ConfigError, Env, invalid};
use std::sync::Arc;

tokio::task_local! {
    /// The fields of the Lambda invocation the current task runs (set by the Lambda transport).
    pub(crate) static CURRENT: Arc<Fields>;
}

/// What an invocation's lines and spans carry, rendered once when it begins.
pub(crate) struct Fields {
    /// Every field as a JSON fragment (`"name":value` pairs, comma-separated), spliced into
    /// each line.
    pub(crate) json: Box<str>,
    /// Lambda's request id (a span's `faas.invocation_id`).
    pub(crate) request_id: Box<str>,
    /// Lambda's X-Ray trace header, when it gave one (a span's parent when sampled).
    pub(crate) xray_trace_id: Option<Box<str>>,
    /// Whether this is the execution environment's first invocation.
    pub(crate) cold_start: bool,
}

impl Default for Fields {
    /// No invocation: nothing to splice.
    fn default() -> Self {
        Self {
            json: "".into(),
            request_id: "".into(),
            xray_trace_id: None,
            cold_start: false,
        }
    }
}

impl std::fmt::Debug for Fields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fields")
            .field("request_id", &self.request_id)
            .field("xray_trace_id", &self.xray_trace_id)
            .field("cold_start", &self.cold_start)
            .finish_non_exhaustive()
    }
}

/// The fields of the invocation the current task runs, if any.
pub(crate) fn current_fields() -> Option<Arc<Fields>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// Runs `future` as part of the invocation of `fields`, when there is one: for the work a
/// request hands to a task of its own, which does not inherit the invocation's fields.
pub(crate) async fn within<F: std::future::Future>(
    fields: Option<Arc<Fields>>,
    future: F,
) -> F::Output {
    match fields {
        Some(fields) => CURRENT.scope(fields, future).await,
        None => future.await,
    }
}

/// Metrics in CloudWatch Embedded Metric Format (docs/observability.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    /// `OXP_METRICS` (`emf` or `off`; default `emf` in Lambda, `off` locally).
    pub enabled: bool,
    /// `OXP_METRICS_NAMESPACE` (default `oxp-lambda`): the CloudWatch namespace.
    pub namespace: String,
    /// `OXP_METRICS_SERVICE` (default the function's name in Lambda, else `oxp-lambda`): the
    /// value of the `service` dimension every metric has.
    pub service: String,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            namespace: "oxp-lambda".into(),
            service: "oxp-lambda".into(),
        }
    }
}

impl MetricsConfig {
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mut c = Self {
            enabled: env.in_lambda(),
            ..Self::default()
        };
        if let Some(v) = env.get("OXP_METRICS") {
            c.enabled = match v.trim() {
                "emf" => true,
                "off" => false,
                _ => return Err(invalid("OXP_METRICS", "must be 'emf' or 'off'")),
            };
        }
        if let Some(v) = env.get("OXP_METRICS_NAMESPACE") {
            c.namespace = v.trim().to_owned();
        }
        if let Some(v) = env
            .get("OXP_METRICS_SERVICE")
            .or_else(|| env.get("AWS_LAMBDA_FUNCTION_NAME"))
        {
            c.service = v.trim().to_owned();
        }
        Ok(c)
    }
}

/// `OXP_OTEL_ENDPOINT`: the OTLP/HTTP collector spans go to, if any.
pub(crate) fn otel_endpoint(env: &Env<'_>) -> Result<Option<String>, ConfigError> {
    let Some(v) = env.get("OXP_OTEL_ENDPOINT") else {
        return Ok(None);
    };
    let v = v.trim();
    if !otel::AVAILABLE {
        return Err(invalid(
            "OXP_OTEL_ENDPOINT",
            "needs the binary built with the `otel` feature",
        ));
    }
    if !(v.starts_with("http://") || v.starts_with("https://")) {
        return Err(invalid(
            "OXP_OTEL_ENDPOINT",
            "must be an http:// or https:// URL",
        ));
    }
    Ok(Some(v.to_owned()))
}
