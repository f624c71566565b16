//! `tracing` setup: JSON lines in Lambda (CloudWatch), readable text locally.
//!
//! Nothing in this crate logs a secret or a token: tool contexts hold them as [`crate::Secret`],
//! whose `Debug` is redacted, and call logs carry only ids, outcome and duration.

use crate::config::{Config, LogFormat};
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber (once; later calls do nothing) and a panic hook that logs
/// panics as structured events instead of raw stderr text.
pub(crate) fn init(config: &Config) {
    let filter = EnvFilter::try_new(&config.log_filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match config.log_format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .without_time() // CloudWatch timestamps every line
            .try_init(),
        LogFormat::Text => builder.with_ansi(false).try_init(),
    };
    if installed.is_ok() {
        std::panic::set_hook(Box::new(|info| {
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            tracing::error!(target: "oxp::panic", location = location.as_deref(), "{info}");
        }));
    }
}
