//! Without the `metrics` feature no metrics are recorded: `OXP_METRICS=emf` is refused at start.

use super::MetricsConfig;

/// Records nothing: returns that no metrics are recorded.
pub(crate) fn install(_config: &MetricsConfig) -> bool {
    false
}

/// Nothing to write.
pub(crate) fn flush() {}
