//! `tracing` setup: JSON lines in Lambda (CloudWatch), readable text locally.
//!
//! Nothing in this crate logs a secret or a token: tool contexts hold them as [`crate::Secret`],
//! whose `Debug` is redacted, and call logs carry only ids, outcome and duration. The Lambda
//! runtime crates would log whole events (bearer tokens, client secrets) at `debug` and
//! `trace`, so they are held to `info` whatever `OXP_LOG` says.

mod batched;
mod capped;
mod fields;
mod time;

use capped::Capped;

use crate::config::{Config, LogFormat};
use tracing::{Level, Metadata};
use tracing_subscriber::filter::{self, FilterExt};
use tracing_subscriber::prelude::*;
use tracing_subscriber::{EnvFilter, Layer, fmt};

/// Crates that log payloads or credentials below a level, and the most verbose level each is
/// written at whatever `OXP_LOG` says: whole Lambda events below `info`; rmcp's requests and
/// results (a tool's arguments and output) at `debug`; and, at `trace`, the request the AWS SDK
/// signs and sends, the role's session token in its headers.
const HELD: &[(&str, Level)] = &[
    ("lambda_runtime", Level::INFO),
    ("lambda_http", Level::INFO),
    ("lambda_runtime_api_client", Level::INFO),
    ("rmcp", Level::INFO),
    ("aws_sigv4", Level::DEBUG),
    ("aws_smithy_runtime", Level::DEBUG),
    ("aws_smithy_runtime_api", Level::DEBUG),
];

/// Whether an event may be written at all, before `OXP_LOG` is asked.
fn below_payloads(meta: &Metadata<'_>) -> bool {
    allowed(meta.target(), *meta.level())
}

/// Events of `target` at `level` may be written: anything but what [`HELD`] holds back.
fn allowed(target: &str, level: Level) -> bool {
    // Levels order from the most severe: a level "greater" than another is more verbose.
    !HELD.iter().any(|(c, most)| {
        level > *most
            && target
                .strip_prefix(c)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    })
}

/// The filter of `OXP_LOG` unset: `info`.
fn default_filter() -> EnvFilter {
    crate::config::log_filter("info").map_or_else(|_| EnvFilter::new("info"), |(_, f)| f)
}

/// Holds the local server's log writer: dropping it writes out the lines still buffered.
#[must_use = "the buffered log lines are written out when this is dropped"]
pub(crate) struct LogGuard {
    _writer: Option<batched::Guard>,
    _otel: Option<crate::observe::otel::Guard>,
}

/// Where the lines go. In Lambda each line is written to stderr before the event that logged
/// it returns, so none is left in a buffer when Lambda freezes the environment after a
/// response (or ends it while frozen). The local server appends its lines to a buffer that a
/// writer thread writes out in batches ([`batched`]): the per-call line then costs the request
/// a copy, not a write system call nor a wake-up. The buffer is bounded (back-pressure, never
/// a dropped line) and written out when the guard drops.
fn writer(lambda: bool) -> (Out, LogGuard) {
    if lambda {
        return (
            Out::Stderr,
            LogGuard {
                _writer: None,
                _otel: None,
            },
        );
    }
    let (lines, guard) = batched::lines(std::io::stderr());
    (
        Out::Lines(lines),
        LogGuard {
            _writer: Some(guard),
            _otel: None,
        },
    )
}

/// Where lines go: a writer per line without boxing it (as `BoxMakeWriter` would, an
/// allocation per line).
pub(crate) enum Out {
    /// Written in place (Lambda).
    Stderr,
    /// Batched to the local writer thread.
    Lines(batched::Lines),
}

/// One line's writer of [`Out`].
pub(crate) enum OutWriter<'a> {
    Stderr(std::io::Stderr),
    Lines(batched::Line<'a>),
}

impl<'a> fmt::MakeWriter<'a> for Out {
    type Writer = OutWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        match self {
            Self::Stderr => OutWriter::Stderr(std::io::stderr()),
            Self::Lines(lines) => OutWriter::Lines(lines.line()),
        }
    }
}

impl std::io::Write for OutWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Stderr(w) => w.write(buf),
            Self::Lines(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Self::Stderr(w) => w.write_all(buf),
            Self::Lines(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Stderr(w) => w.flush(),
            Self::Lines(w) => w.flush(),
        }
    }
}

/// The layer that formats lines and writes them to `writer`, each bounded in bytes; in Lambda
/// (`lambda`) a JSON line carries no time of its own: CloudWatch timestamps every line.
fn lines<S>(format: LogFormat, writer: Out, lambda: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let writer = Capped {
        inner: writer,
        json: matches!(format, LogFormat::Json),
    };
    match format {
        LogFormat::Json => {
            let json = fmt::layer()
                .json()
                .flatten_event(true)
                .with_current_span(false)
                // The invocation's fields are on the line itself (crate::observe).
                .with_span_list(false)
                .with_writer(writer);
            if lambda {
                json.without_time().boxed()
            } else {
                json.with_timer(time::CachedUtc).boxed()
            }
        }
        LogFormat::Text => fmt::layer()
            .with_ansi(false)
            .fmt_fields(fields::TextFields)
            .with_timer(time::CachedUtc)
            .with_writer(writer)
            .boxed(),
    }
}

/// The local server's default log, as [`init`] installs it but writing to `output`, for the
/// benches to measure what a call's line costs (not a stable API).
#[doc(hidden)]
pub fn local_text_log(
    output: impl std::io::Write + Send + 'static,
) -> (tracing::Dispatch, impl Drop) {
    let (lines_out, guard) = batched::lines(output);
    let layer = lines(LogFormat::Text, Out::Lines(lines_out), false)
        .with_filter(default_filter().and(filter::filter_fn(below_payloads)));
    (
        tracing::Dispatch::new(tracing_subscriber::registry().with(layer)),
        guard,
    )
}

/// Installs the global subscriber (once; later calls do nothing) and a panic hook that logs
/// panics as structured events instead of raw stderr text.
pub(crate) fn init(config: &Config) -> LogGuard {
    // A filter set in code that does not read (`OXP_LOG` is checked as it is read) logs `info`.
    let env = crate::config::log_filter(&config.log_filter)
        .map_or_else(|_| default_filter(), |(_, filter)| filter);
    let filter = env.and(filter::filter_fn(below_payloads));
    let (writer, mut guard) = writer(config.runtime.lambda);
    let lambda = config.runtime.lambda;
    let mut layers = vec![
        lines(config.log_format, writer, lambda)
            .with_filter(filter)
            .boxed(),
    ];
    if let Some((spans, otel)) = config
        .otel_endpoint
        .as_deref()
        .and_then(crate::observe::otel::layer)
    {
        layers.push(spans);
        guard._otel = Some(otel);
    }
    let installed = tracing_subscriber::registry().with(layers).try_init();
    // In Lambda every invocation writes its metrics before answering; a local server (with
    // OXP_METRICS=emf) writes them each second.
    if crate::observe::install_metrics(&config.metrics)
        && !config.runtime.lambda
        && let Ok(runtime) = tokio::runtime::Handle::try_current()
    {
        runtime.spawn(async {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                every.tick().await;
                crate::observe::flush_metrics();
            }
        });
    }
    if installed.is_err() {
        return LogGuard {
            _writer: None,
            _otel: None,
        };
    }
    std::panic::set_hook(Box::new(log_panic));
    guard
}

/// The panic hook: one error line naming where, with the payload as an escaped field.
fn log_panic(info: &std::panic::PanicHookInfo<'_>) {
    let location = info
        .location()
        .map(|l| format!("{}:{}", l.file(), l.line()));
    // The payload may hold a caller's text (a tool panicking on its input): a field, shown
    // escaped (`?`), never the line's message, so it cannot forge a line of its own.
    let payload = info
        .payload()
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not text)");
    let payload: String = payload.chars().take(1024).collect();
    tracing::error!(target: "oxp::panic", location = location.as_deref(), payload = ?payload, "panicked");
}

/// An output the logging tests read back (the writer thread's, the formatter's).
#[cfg(test)]
#[derive(Clone, Default)]
pub(crate) struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(test)]
impl Captured {
    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[cfg(test)]
impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
impl<'a> fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lambda_runtime_rmcp_and_the_aws_sdk_are_held_whatever_the_filter() {
        assert!(!allowed("rmcp::service", Level::DEBUG));
        assert!(allowed("rmcp::service", Level::INFO));
        assert!(!allowed("aws_sigv4::http_request::sign", Level::TRACE));
        assert!(!allowed(
            "aws_smithy_runtime::client::orchestrator",
            Level::TRACE
        ));
        assert!(allowed(
            "aws_smithy_runtime::client::orchestrator",
            Level::DEBUG
        ));
        assert!(!allowed("lambda_runtime", Level::TRACE));
        assert!(!allowed("lambda_runtime::layers", Level::DEBUG));
        assert!(!allowed("lambda_http::request", Level::DEBUG));
        assert!(allowed("lambda_runtime", Level::INFO));
        assert!(allowed("oxp::call", Level::TRACE));
        assert!(allowed("lambda_runtimes_of_mine", Level::DEBUG));
    }

    #[test]
    fn a_panic_payload_with_a_newline_stays_inside_its_own_line() {
        let out = Captured::default();
        let (dispatch, guard) = local_text_log(out.clone());
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(log_panic));
        tracing::dispatcher::with_default(&dispatch, || {
            let _ = std::panic::catch_unwind(|| {
                panic!("bad input\nINFO oxp::call: outcome=\"success\" forged=1");
            });
        });
        std::panic::set_hook(previous);
        drop(guard);
        let text = out.text();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains(r#"ERROR oxp::panic: panicked"#), "{text}");
        assert!(
            text.contains(r#"payload="bad input\nINFO oxp::call"#),
            "{text}"
        );
    }

    #[test]
    fn the_local_text_log_writes_each_call_line_by_the_time_its_guard_drops() {
        let out = Captured::default();
        let (dispatch, guard) = local_text_log(out.clone());
        tracing::dispatcher::with_default(&dispatch, || {
            tracing::info!(target: "oxp::call", tool_id = "Calculator.Add@1.0.0", outcome = "success");
            tracing::debug!(target: "oxp::call", "below the default level");
        });
        drop(guard);
        let text = out.text();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.trim_end()
                .ends_with(r#"INFO oxp::call: tool_id="Calculator.Add@1.0.0" outcome="success""#),
            "{text}"
        );
    }
}
