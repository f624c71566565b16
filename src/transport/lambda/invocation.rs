//! The one layer every Lambda invocation goes through, whatever its role (HTTP events, SQS
//! batches, direct invocations): it computes the invocation's deadline once (Lambda's, less
//! `OXP_DEADLINE_MARGIN_MS`), hands it to the service below (a request's
//! [`Deadline`](crate::server::Deadline), an event's [`CallContext`]), and runs the service as the invocation: its log lines carry
//! Lambda's fields, and its metrics and spans are flushed before the answer goes back.

use crate::config::Config;
use crate::observe::Fields;
use crate::server::CallContext;
use http::HeaderMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tower::{Layer, Service};

/// What Lambda says of one invocation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meta {
    request_id: String,
    /// The deadline, Unix milliseconds.
    deadline_ms: u64,
    trace_id: Option<String>,
    tenant_id: Option<String>,
}

impl Meta {
    /// From the runtime's context of the invocation.
    pub(crate) fn of_context(context: &lambda_runtime::Context) -> Self {
        Self {
            request_id: context.request_id.clone(),
            deadline_ms: context.deadline,
            trace_id: context.xray_trace_id.clone(),
            tenant_id: context.tenant_id.clone(),
        }
    }

    /// From the Runtime API's headers of the next invocation; `None` without a request id.
    pub(crate) fn of_headers(headers: &HeaderMap) -> Option<Self> {
        let text = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Some(Self {
            request_id: text("lambda-runtime-aws-request-id")?,
            deadline_ms: text("lambda-runtime-deadline-ms")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            trace_id: text("lambda-runtime-trace-id"),
            tenant_id: text("lambda-runtime-aws-tenant-id"),
        })
    }

    /// The request id.
    pub(crate) fn request_id(&self) -> &str {
        &self.request_id
    }
}

/// When a call must have finished: the invocation's deadline (Unix milliseconds) less
/// `margin`, so the caller gets an answer before Lambda stops the function; `None` for a
/// deadline already past (or none).
pub(crate) fn deadline(deadline_ms: u64, margin: Duration) -> Option<Instant> {
    let at = UNIX_EPOCH + Duration::from_millis(deadline_ms);
    let remaining = at.duration_since(SystemTime::now()).ok()?;
    Some(Instant::now() + remaining.saturating_sub(margin))
}

/// Reads `request`'s invocation and hands its deadline (less `margin`) to the service below:
/// the one place a deadline is made of Lambda's.
pub(crate) fn apply_deadline<R: Invoked>(request: &mut R, margin: Duration) -> Option<Meta> {
    let meta = request.meta();
    if let Some(at) = meta.as_ref().and_then(|m| deadline(m.deadline_ms, margin)) {
        request.set_deadline(at);
    }
    meta
}

/// An invocation the layer can read and set the deadline of.
pub(crate) trait Invoked {
    /// What Lambda said of it, when it came through Lambda.
    fn meta(&self) -> Option<Meta>;
    /// Hands the computed deadline to the service below.
    fn set_deadline(&mut self, at: Instant);
}

/// A non-HTTP invocation (an SQS batch, a direct event) with its context.
#[derive(Debug)]
pub(crate) struct Event<T> {
    pub(crate) payload: T,
    pub(crate) meta: Meta,
    pub(crate) context: CallContext,
}

impl<T> Event<T> {
    pub(crate) fn new(payload: T, meta: Meta) -> Self {
        Self {
            payload,
            meta,
            context: CallContext::default(),
        }
    }
}

impl<T> Invoked for Event<T> {
    fn meta(&self) -> Option<Meta> {
        Some(self.meta.clone())
    }

    fn set_deadline(&mut self, at: Instant) {
        self.context.deadline = Some(at);
    }
}

/// The layer: the deadline margin and what the configuration read of the function.
#[derive(Debug, Clone)]
pub(crate) struct InvocationLayer {
    margin: Duration,
    function: Arc<(Option<String>, Option<String>)>,
}

impl InvocationLayer {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            margin: config.deadline_margin,
            function: Arc::new((
                config.runtime.function_name.clone(),
                config.runtime.function_version.clone(),
            )),
        }
    }
}

impl<S> Layer<S> for InvocationLayer {
    type Service = Invocations<S>;

    fn layer(&self, inner: S) -> Invocations<S> {
        Invocations {
            inner,
            layer: self.clone(),
        }
    }
}

/// A service run invocation by invocation (see [`InvocationLayer`]).
#[derive(Debug, Clone)]
pub(crate) struct Invocations<S> {
    inner: S,
    layer: InvocationLayer,
}

impl<S, R> Service<R> for Invocations<S>
where
    R: Invoked,
    S: Service<R>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures_util::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: R) -> Self::Future {
        let meta = apply_deadline(&mut request, self.layer.margin);
        let answer = self.inner.call(request);
        let function = self.layer.function.clone();
        Box::pin(async move {
            let Some(meta) = meta else {
                return answer.await;
            };
            invocation(begin(&meta, &function), answer).await
        })
    }
}

/// Whether the next invocation is this execution environment's first.
static COLD: AtomicBool = AtomicBool::new(true);

/// Longest id kept from the Runtime API's headers (they are Lambda's, but still bounded).
const MAX_ID_CHARS: usize = 256;

/// The fields of the invocation `meta` describes, of the function `(name, version)`; the first
/// of the execution environment is its cold start (counted in the `cold_starts` metric).
fn begin(meta: &Meta, (name, version): &(Option<String>, Option<String>)) -> Fields {
    let cold = COLD.swap(false, Ordering::Relaxed);
    if cold {
        metrics::counter!(oxp_lambda_core::invoke::metrics::COLD_STARTS).increment(1);
    }
    let bounded = |v: &str| -> Box<str> { v.chars().take(MAX_ID_CHARS).collect::<String>().into() };
    let mut fields = serde_json::Map::new();
    let mut put = |name: &str, value: Option<&str>| {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            fields.insert(name.to_owned(), bounded(v).to_string().into());
        }
    };
    put("function_request_id", Some(&meta.request_id));
    put("xray_trace_id", meta.trace_id.as_deref());
    put("tenant_id", meta.tenant_id.as_deref());
    put("function_name", name.as_deref());
    put("function_version", version.as_deref());
    fields.insert("cold_start".to_owned(), cold.into());
    let object = serde_json::Value::Object(fields).to_string();
    Fields {
        // `{...}` without its braces, to splice into a line's object.
        json: object[1..object.len() - 1].into(),
        request_id: bounded(&meta.request_id),
        xray_trace_id: meta
            .trace_id
            .as_deref()
            .filter(|v| !v.is_empty())
            .map(bounded),
        cold_start: cold,
    }
}

/// Runs `future` as the invocation of `fields`: the lines it logs carry them, and the metrics
/// and spans it recorded are sent before its answer goes back (Lambda may freeze the
/// environment right after).
async fn invocation<F: Future>(fields: Fields, future: F) -> F::Output {
    let output = crate::observe::CURRENT
        .scope(Arc::new(fields), future)
        .await;
    flush().await;
    output
}

/// Sends the metrics and spans recorded so far: before an answer goes back, and again when a
/// streamed answer ends (what the call recorded while its body streamed).
pub(crate) async fn flush() {
    crate::observe::flush_metrics();
    crate::observe::otel::flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Deadline;

    fn now_ms() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    }

    #[test]
    fn the_deadline_is_lambdas_less_the_margin_and_none_once_past() {
        let at = deadline(now_ms() + 10_000, Duration::from_millis(500)).unwrap();
        let left = at.saturating_duration_since(Instant::now());
        assert!(left > Duration::from_millis(9_000) && left <= Duration::from_millis(9_500));
        assert!(deadline(now_ms() - 1, Duration::ZERO).is_none());
        assert!(deadline(0, Duration::ZERO).is_none(), "no deadline at all");
    }

    #[tokio::test]
    async fn every_kind_of_invocation_gets_the_same_deadline_from_the_layer() {
        let layer = InvocationLayer {
            margin: Duration::from_millis(500),
            function: Arc::default(),
        };
        let meta = Meta {
            request_id: "r-1".into(),
            deadline_ms: now_ms() + 5_000,
            ..Meta::default()
        };
        // An event: the deadline in its call context.
        let mut events = layer.layer(tower::service_fn(|e: Event<()>| async move {
            Ok::<_, std::convert::Infallible>(e.context.deadline)
        }));
        let seen = events.call(Event::new((), meta.clone())).await.unwrap();
        assert!(seen.is_some());
        // An HTTP request: the deadline as its `Deadline` extension.
        let mut requests = layer.layer(tower::service_fn(|r: lambda_http::Request| async move {
            Ok::<_, std::convert::Infallible>(r.extensions().get::<Deadline>().map(|d| d.0))
        }));
        let mut context = lambda_http::Context::default();
        context.request_id = "r-2".into();
        context.deadline = meta.deadline_ms;
        let request = http::Request::builder()
            .extension(context)
            .body(lambda_http::Body::Empty)
            .unwrap();
        let http_seen = requests.call(request).await.unwrap();
        let (a, b) = (seen.unwrap(), http_seen.unwrap());
        let apart = if a > b { a - b } else { b - a };
        assert!(apart < Duration::from_millis(50), "one rule for both");
    }
}
