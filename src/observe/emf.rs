//! Metrics in CloudWatch Embedded Metric Format (feature `metrics`): written to stdout after
//! each Lambda invocation.

use super::MetricsConfig;
use metrics_cloudwatch_embedded::Collector;
use std::sync::OnceLock;

static COLLECTOR: OnceLock<&'static Collector> = OnceLock::new();

/// The values of a histogram the collector holds between two flushes (its
/// `MAX_HISTOGRAM_VALUES`, an EMF document's bound per metric): past them it drops each one with
/// an error line, which under a local server's load was a line per call.
const UNFLUSHED_VALUES: u32 = 100;

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
            metrics::describe_counter!(
                oxp_lambda_core::invoke::metrics::COLD_STARTS,
                metrics::Unit::Count,
                "cold starts"
            );
            oxp_lambda_core::invoke::metrics::bound_unflushed(UNFLUSHED_VALUES);
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
        // Before the collector drains them: a value recorded meanwhile counts against the
        // next flush's room, so the collector never holds more than it keeps.
        oxp_lambda_core::invoke::metrics::flushed();
        let out = std::io::stdout();
        let mut out = out.lock();
        if let Err(e) = collector.flush(&mut out) {
            tracing::warn!(error = %e, "EMF metrics not written");
        }
    }
}
