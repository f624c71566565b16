//! `tracing` setup: JSON lines in Lambda (CloudWatch), readable text locally.
//!
//! Nothing in this crate logs a secret or a token: tool contexts hold them as [`crate::Secret`],
//! whose `Debug` is redacted, and call logs carry only ids, outcome and duration. The Lambda
//! runtime crates would log whole events (bearer tokens, client secrets) at `debug` and
//! `trace`, so they are held to `info` whatever `OXP_LOG` says.

use crate::config::{Config, LogFormat};
use tracing::{Level, Metadata};
use tracing_subscriber::filter::{self, FilterExt};
use tracing_subscriber::prelude::*;
use tracing_subscriber::{EnvFilter, fmt};

/// Crates that log request and response payloads below `info`.
const PAYLOAD_LOGGERS: &[&str] = &["lambda_runtime", "lambda_http", "lambda_runtime_api_client"];

/// Whether an event may be written at all, before `OXP_LOG` is asked.
fn below_payloads(meta: &Metadata<'_>) -> bool {
    *meta.level() <= Level::INFO
        || !PAYLOAD_LOGGERS
            .iter()
            .any(|c| meta.target() == *c || meta.target().starts_with(&format!("{c}::")))
}

/// Installs the global subscriber (once; later calls do nothing) and a panic hook that logs
/// panics as structured events instead of raw stderr text.
pub(crate) fn init(config: &Config) {
    let env = EnvFilter::try_new(&config.log_filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let filter = env.and(filter::filter_fn(below_payloads));
    let layer = match config.log_format {
        LogFormat::Json => fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .without_time() // CloudWatch timestamps every line
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Text => fmt::layer()
            .with_ansi(false)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    let installed = tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init();
    if installed.is_ok() {
        std::panic::set_hook(Box::new(|info| {
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()));
            tracing::error!(target: "oxp::panic", location = location.as_deref(), "{info}");
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::callsite::Identifier;
    use tracing::field::FieldSet;
    use tracing::metadata::Kind;

    struct Site;
    impl tracing::callsite::Callsite for Site {
        fn set_interest(&self, _: tracing::subscriber::Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            unimplemented!("not registered")
        }
    }
    static SITE: Site = Site;

    fn meta(target: &'static str, level: Level) -> Metadata<'static> {
        Metadata::new(
            "event",
            target,
            level,
            None,
            None,
            None,
            FieldSet::new(&[], Identifier(&SITE)),
            Kind::EVENT,
        )
    }

    #[test]
    fn the_lambda_runtime_never_logs_below_info_whatever_the_filter() {
        assert!(!below_payloads(&meta("lambda_runtime", Level::TRACE)));
        assert!(!below_payloads(&meta(
            "lambda_runtime::layers",
            Level::DEBUG
        )));
        assert!(!below_payloads(&meta("lambda_http::request", Level::DEBUG)));
        assert!(below_payloads(&meta("lambda_runtime", Level::INFO)));
        assert!(below_payloads(&meta("oxp::call", Level::TRACE)));
        assert!(below_payloads(&meta(
            "lambda_runtimes_of_mine",
            Level::DEBUG
        )));
    }
}
