//! OpenTelemetry spans (feature `otel`, exported when `OXP_OTEL_ENDPOINT` names a collector):
//! one span per tool call, built from the invoker's call line, sent over OTLP/HTTP (protobuf)
//! by the OpenTelemetry SDK's batch processor. In Lambda the batch is flushed before each
//! invocation answers, so no span waits in a frozen environment; locally it is sent on the
//! SDK's schedule (`OTEL_BSP_SCHEDULE_DELAY`, 5 s) and at shutdown.
//!
//! The span is built from the call line rather than from a span the core opens: the core knows
//! no OpenTelemetry, the line already holds everything a span needs (protocol, tool, call id,
//! outcome class, time in the tool, the caller's `traceparent`), and a call then costs the
//! exporter nothing when the feature is off or no endpoint is set. Its parent is the caller's
//! `traceparent`, else Lambda's X-Ray trace when X-Ray sampled it, else none (a new trace).

use opentelemetry::trace::{
    Span as _, SpanBuilder, SpanKind, Status, TraceContextExt as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context as LayerContext, Layer};

/// Whether this build exports spans.
pub(crate) const AVAILABLE: bool = true;

/// The provider, for flushes and shutdown (one per process).
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Longest caller-supplied string put on a span (tool and call ids as the caller sent them).
const MAX_ATTRIBUTE_CHARS: usize = 256;

/// Shuts the exporter down (sending what is queued) when the server stops.
#[must_use = "queued spans are sent when this is dropped"]
pub(crate) struct Guard(SdkTracerProvider);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(e) = self.0.shutdown() {
            eprintln!("OpenTelemetry spans not all sent at shutdown: {e}");
        }
    }
}

/// The layer that turns call lines into spans exported to `endpoint` (an OTLP/HTTP base URL
/// such as `http://localhost:4318`, or the full `.../v1/traces`), and its guard; `None` when
/// the exporter cannot be built (said on stderr: logging is not installed yet). Spans are made
/// of call lines whatever `OXP_LOG` lets the log keep.
pub(crate) fn layer(endpoint: &str) -> Option<(SpanLayer, Guard)> {
    use tracing_subscriber::Layer as _;
    let (spans, guard) = install(endpoint)?;
    let calls =
        tracing_subscriber::filter::Targets::new().with_target("oxp::call", tracing::Level::TRACE);
    Some((spans.with_filter(calls).boxed(), guard))
}

/// The span layer as the log installs it.
pub(crate) type SpanLayer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

fn install(endpoint: &str) -> Option<(CallSpans, Guard)> {
    let url = if endpoint.trim_end_matches('/').ends_with("/v1/traces") {
        endpoint.to_owned()
    } else {
        format!("{}/v1/traces", endpoint.trim_end_matches('/'))
    };
    // The exporter's client over the process's TLS configuration (src/http_client.rs), built
    // off the runtime's threads: reqwest's blocking client runs a runtime of its own.
    let client = std::thread::spawn(|| {
        let builder = reqwest::blocking::Client::builder().timeout(Duration::from_secs(5));
        match crate::http_client::tls() {
            Some(config) => builder.tls_backend_preconfigured(config.clone()),
            None => builder,
        }
        .build()
    })
    .join();
    let client = match client {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => {
            eprintln!("OpenTelemetry exporter not built, no spans will be sent: {e}");
            return None;
        }
        Err(_) => {
            eprintln!("OpenTelemetry exporter not built, no spans will be sent");
            return None;
        }
    };
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .with_timeout(Duration::from_secs(5))
        .build()
    {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!("OpenTelemetry exporter not built, no spans will be sent: {e}");
            return None;
        }
    };
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource())
        .build();
    let _ = PROVIDER.set(provider.clone());
    let tracer = provider.tracer("oxp-lambda");
    Some((CallSpans { tracer }, Guard(provider)))
}

/// `service.name` (`OTEL_SERVICE_NAME`, else the function's name, else `oxp-lambda`) and, in
/// Lambda, what the function is (`OTEL_RESOURCE_ATTRIBUTES` adds more).
fn resource() -> Resource {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let function = env("AWS_LAMBDA_FUNCTION_NAME");
    let service = env("OTEL_SERVICE_NAME")
        .or_else(|| function.clone())
        .unwrap_or_else(|| "oxp-lambda".to_owned());
    let mut attributes = Vec::new();
    if let Some(name) = function {
        attributes.push(KeyValue::new("cloud.provider", "aws"));
        attributes.push(KeyValue::new("cloud.platform", "aws_lambda"));
        attributes.push(KeyValue::new("faas.name", name));
        if let Some(v) = env("AWS_LAMBDA_FUNCTION_VERSION") {
            attributes.push(KeyValue::new("faas.version", v));
        }
        if let Some(v) = env("AWS_REGION") {
            attributes.push(KeyValue::new("cloud.region", v));
        }
    }
    Resource::builder()
        .with_service_name(service)
        .with_attributes(attributes)
        .build()
}

/// Sends the spans ended so far and waits for the collector's answer (in Lambda, before the
/// invocation answers: the environment may be frozen right after).
pub(crate) async fn flush() {
    let Some(provider) = PROVIDER.get().cloned() else {
        return;
    };
    // The SDK's flush blocks on the export: off the runtime's threads.
    match tokio::task::spawn_blocking(move || provider.force_flush()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(target: "oxp::otel", error = %e, "spans not sent"),
        Err(e) => tracing::warn!(target: "oxp::otel", error = %e, "span flush did not finish"),
    }
}

/// Makes a span of every call line (target `oxp::call` with an `outcome`).
pub(crate) struct CallSpans {
    tracer: SdkTracer,
}

impl<S: tracing::Subscriber> Layer<S> for CallSpans {
    fn on_event(&self, event: &tracing::Event<'_>, _: LayerContext<'_, S>) {
        if event.metadata().target() != "oxp::call" {
            return;
        }
        let mut line = CallLine::default();
        event.record(&mut line);
        if line.outcome.is_empty() {
            return; // not a call's line (a warning about one)
        }
        self.span(&line);
    }
}

impl CallSpans {
    fn span(&self, line: &CallLine) {
        let end = SystemTime::now();
        let start = end - Duration::try_from_secs_f64(line.duration_ms / 1e3).unwrap_or_default();
        let invocation = super::current_fields();
        // A name the caller made up never names a span (it would be a new name per call).
        let name = if line.outcome == "not_found" || line.tool_id.is_empty() {
            "execute_tool".to_owned()
        } else {
            format!("execute_tool {}", line.tool_id)
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", line.tool_id.clone()),
            KeyValue::new("oxp.protocol", line.protocol.clone()),
            KeyValue::new("oxp.outcome", line.outcome.clone()),
        ];
        if !line.call_id.is_empty() {
            attributes.push(KeyValue::new("gen_ai.tool.call.id", line.call_id.clone()));
        }
        if !line.trace_id.is_empty() {
            attributes.push(KeyValue::new("oxp.trace_id", line.trace_id.clone()));
        }
        let failed = !matches!(
            line.outcome.as_str(),
            "success" | "replayed" | "in_progress"
        );
        if failed {
            attributes.push(KeyValue::new("error.type", line.outcome.clone()));
        }
        if let Some(fields) = &invocation {
            attributes.push(KeyValue::new(
                "faas.invocation_id",
                fields.request_id.to_string(),
            ));
            attributes.push(KeyValue::new("faas.coldstart", fields.cold_start));
        }
        let parent = parent(&line.traceparent, invocation.as_deref());
        let mut span = SpanBuilder::from_name(name)
            .with_kind(SpanKind::Server)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        if failed {
            span.set_status(Status::error(line.outcome.clone()));
        }
        span.end_with_timestamp(end);
    }
}

/// The span's parent: the caller's trace context, else Lambda's X-Ray trace when X-Ray
/// sampled it (with tracing off Lambda still passes an unsampled header, which would silence
/// every span), else none.
fn parent(traceparent: &str, invocation: Option<&super::Fields>) -> Context {
    use opentelemetry::propagation::TextMapPropagator as _;
    if !traceparent.is_empty() {
        let carrier =
            std::collections::HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
        let context = opentelemetry_sdk::propagation::TraceContextPropagator::new()
            .extract_with_context(&Context::new(), &carrier);
        if context.span().span_context().is_valid() {
            return context;
        }
    }
    if let Some(xray) = invocation.and_then(|f| f.xray_trace_id.as_deref())
        && let Some(context) =
            opentelemetry_aws::trace::xray_propagator::span_context_from_str(xray)
        && context.is_sampled()
    {
        return Context::new().with_remote_span_context(context);
    }
    Context::new()
}

/// The fields of a call line that a span carries.
#[derive(Default)]
struct CallLine {
    protocol: String,
    call_id: String,
    trace_id: String,
    traceparent: String,
    tool_id: String,
    outcome: String,
    duration_ms: f64,
}

impl Visit for CallLine {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "protocol" => &mut self.protocol,
            "call_id" => &mut self.call_id,
            "trace_id" => &mut self.trace_id,
            "traceparent" => &mut self.traceparent,
            "tool_id" => &mut self.tool_id,
            "outcome" => &mut self.outcome,
            _ => return,
        };
        *slot = value.chars().take(MAX_ATTRIBUTE_CHARS).collect();
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        if field.name() == "duration_ms" {
            self.duration_ms = value;
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}
