//! Without the `otel` feature there are no spans: `OXP_OTEL_ENDPOINT` is refused at start and
//! there is nothing to flush.

/// Whether this build exports spans.
pub(crate) const AVAILABLE: bool = false;

/// Nothing to send at shutdown.
pub(crate) struct Guard;

/// The span layer as the log installs it.
pub(crate) type SpanLayer =
    Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// No exporter: no layer.
pub(crate) fn layer(_endpoint: &str) -> Option<(SpanLayer, Guard)> {
    None
}

/// Nothing to send.
pub(crate) async fn flush() {}
