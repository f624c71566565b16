//! `tracing` setup: JSON lines in Lambda (CloudWatch), readable text locally.
//!
//! Nothing in this crate logs a secret or a token: tool contexts hold them as [`crate::Secret`],
//! whose `Debug` is redacted, and call logs carry only ids, outcome and duration. The Lambda
//! runtime crates would log whole events (bearer tokens, client secrets) at `debug` and
//! `trace`, so they are held to `info` whatever `OXP_LOG` says.

use crate::config::{Config, LogFormat, in_lambda};
use tracing::{Level, Metadata};
use tracing_subscriber::filter::{self, FilterExt};
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::prelude::*;
use tracing_subscriber::{EnvFilter, fmt};

/// Crates that log request and response payloads below `info`.
const PAYLOAD_LOGGERS: &[&str] = &["lambda_runtime", "lambda_http", "lambda_runtime_api_client"];

/// Whether an event may be written at all, before `OXP_LOG` is asked.
fn below_payloads(meta: &Metadata<'_>) -> bool {
    allowed(meta.target(), *meta.level())
}

/// Events of `target` at `level` may be written: anything at `info` or above, and anything
/// from crates that do not log payloads.
fn allowed(target: &str, level: Level) -> bool {
    level <= Level::INFO
        || !PAYLOAD_LOGGERS.iter().any(|c| {
            target
                .strip_prefix(c)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        })
}

/// Holds the local server's log writer: dropping it writes out the lines still buffered.
#[must_use = "the buffered log lines are written out when this is dropped"]
pub(crate) struct LogGuard {
    _writer: Option<tracing_appender::non_blocking::WorkerGuard>,
}

/// Where the lines go. In Lambda each line is written to stderr before the event that logged
/// it returns, so none is left in a buffer when Lambda freezes the environment after a
/// response (or ends it while frozen). The local server hands its lines to a writer thread
/// that writes whatever has queued up at once: the per-call line then costs the request a
/// channel send, not a write system call. The queue is bounded (back-pressure, never a
/// dropped line) and drained when the guard drops.
fn writer() -> (BoxMakeWriter, LogGuard) {
    if in_lambda() {
        return (
            BoxMakeWriter::new(std::io::stderr),
            LogGuard { _writer: None },
        );
    }
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(LOCAL_QUEUED_LINES)
        .thread_name("oxp-log")
        .finish(std::io::BufWriter::with_capacity(
            64 * 1024,
            std::io::stderr(),
        ));
    (
        BoxMakeWriter::new(writer),
        LogGuard {
            _writer: Some(guard),
        },
    )
}

/// Lines the local writer thread may have queued before a logging request waits for it.
const LOCAL_QUEUED_LINES: usize = 16 * 1024;

/// Installs the global subscriber (once; later calls do nothing) and a panic hook that logs
/// panics as structured events instead of raw stderr text.
pub(crate) fn init(config: &Config) -> LogGuard {
    let env = EnvFilter::try_new(&config.log_filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let filter = env.and(filter::filter_fn(below_payloads));
    let (writer, guard) = writer();
    let layer = match config.log_format {
        LogFormat::Json => fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .without_time() // CloudWatch timestamps every line
            .with_writer(writer)
            .boxed(),
        LogFormat::Text => fmt::layer().with_ansi(false).with_writer(writer).boxed(),
    };
    let installed = tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init();
    if installed.is_err() {
        return LogGuard { _writer: None };
    }
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()));
        tracing::error!(target: "oxp::panic", location = location.as_deref(), "{info}");
    }));
    guard
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lambda_runtime_never_logs_below_info_whatever_the_filter() {
        assert!(!allowed("lambda_runtime", Level::TRACE));
        assert!(!allowed("lambda_runtime::layers", Level::DEBUG));
        assert!(!allowed("lambda_http::request", Level::DEBUG));
        assert!(allowed("lambda_runtime", Level::INFO));
        assert!(allowed("oxp::call", Level::TRACE));
        assert!(allowed("lambda_runtimes_of_mine", Level::DEBUG));
    }
}
