//! Each call's metrics, through the `metrics` facade (a no-op until a program installs a
//! recorder; the server installs CloudWatch Embedded Metric Format in Lambda): [`CALLS`] and
//! [`DURATION`] per tool and protocol, [`ERRORS`] per tool, protocol and class. The `tool`
//! dimension is a registered tool's id (a name no tool has is [`UNRESOLVED`]), the `protocol` an
//! adapter's name, the `class` an [`ErrorClass`]: the cardinality is the registry's, never a
//! call's, a caller's or a user's. Each is recorded through its tool's handles
//! (`metric_handles.rs`), registered by its first call: a program installs its recorder
//! before its first call.

use super::{Disposition, Outcome};
use crate::metric_handles::ToolMetrics;
use crate::refusal::ErrorClass;
use crate::registry::RegisteredTool;
use std::sync::LazyLock;

pub use crate::metric_handles::{
    CALLS, COLD_STARTS, DURATION, ERRORS, UNRESOLVED, bound_unflushed, flushed,
};

/// The handles of calls that named no registered tool.
static UNRESOLVED_CALLS: LazyLock<ToolMetrics> = LazyLock::new(ToolMetrics::default);

/// A call that reached its tool (or its stored outcome).
pub(super) fn outcome(protocol: &'static str, outcome: &Outcome) {
    let tool = &outcome.tool;
    tool.metrics.with(&tool.id, protocol, |handles| {
        if let Disposition::Ran(_) = outcome.disposition {
            handles.ran(outcome.duration.as_secs_f64() * 1e3);
        }
        handles.count(outcome.error_class());
    });
}

/// A call refused before its tool ran.
pub(super) fn refused(protocol: &'static str, tool: Option<&RegisteredTool>, class: ErrorClass) {
    let (metrics, id) = match tool {
        Some(tool) => (&tool.metrics, tool.id.as_str()),
        None => (&*UNRESOLVED_CALLS, UNRESOLVED),
    };
    metrics.with(id, protocol, |handles| handles.count(Some(class)));
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
