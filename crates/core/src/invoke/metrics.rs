//! Each call's metrics, through the `metrics` facade (a no-op until a program installs a
//! recorder; the server installs CloudWatch Embedded Metric Format in Lambda): [`CALLS`] and
//! [`DURATION`] per tool and protocol, [`ERRORS`] per tool, protocol and class. The `tool`
//! dimension is a registered tool's id (a name no tool has is [`UNRESOLVED`]), the `protocol` an
//! adapter's name, the `class` an [`ErrorClass`]: the cardinality is the registry's, never a
//! call's, a caller's or a user's.

use super::{Disposition, Outcome};
use crate::refusal::ErrorClass;
use crate::registry::RegisteredTool;

/// Calls that ended, whatever the outcome (a counter).
pub const CALLS: &str = "calls";
/// Calls that did not succeed, by `class` (a counter).
pub const ERRORS: &str = "errors";
/// Time in the tool, in milliseconds, of calls whose tool ran (a histogram).
pub const DURATION: &str = "duration";
/// The `tool` dimension of a call that named no registered tool.
pub const UNRESOLVED: &str = "unresolved";
/// Cold starts of Lambda execution environments (a counter, dimension `service` only): counted
/// by the transport that starts invocations, described here with the call metrics.
pub const COLD_STARTS: &str = "cold_starts";

fn tool_label(tool: Option<&RegisteredTool>) -> metrics::SharedString {
    tool.map_or(metrics::SharedString::const_str(UNRESOLVED), |t| {
        metrics::SharedString::from(t.id.clone())
    })
}

fn count(protocol: &'static str, tool: metrics::SharedString, class: Option<ErrorClass>) {
    if let Some(class) = class {
        metrics::counter!(ERRORS, "tool" => tool.clone(), "protocol" => protocol, "class" => class.as_str())
            .increment(1);
    }
    metrics::counter!(CALLS, "tool" => tool, "protocol" => protocol).increment(1);
}

/// A call that reached its tool (or its stored outcome).
pub(super) fn outcome(protocol: &'static str, outcome: &Outcome) {
    let tool = tool_label(Some(&outcome.tool));
    if let Disposition::Ran(_) = outcome.disposition {
        metrics::histogram!(DURATION, "tool" => tool.clone(), "protocol" => protocol)
            .record(outcome.duration.as_secs_f64() * 1e3);
    }
    count(protocol, tool, outcome.error_class());
}

/// A call refused before its tool ran.
pub(super) fn refused(protocol: &'static str, tool: Option<&RegisteredTool>, class: ErrorClass) {
    count(protocol, tool_label(tool), Some(class));
}
