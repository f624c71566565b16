//! The audit line of an invocation's answer (target `oxp::rap::audit`), which its `work_id`
//! joins to the runner's lines about its work (`oxp::work`: retries, a takeover, a giving up).

use crate::rap::job::{Job, rfc3339, unix_ms};

/// The audit line of `job`'s answer: who asked for what, when, and what became of it. Never
/// arguments, results or secrets.
pub(super) fn audit(
    job: &Job,
    outcome: &str,
    delivery: &str,
    reason: Option<&str>,
    store_error: Option<&str>,
) {
    macro_rules! audit {
        ($level:expr) => {
            tracing::event!(
                target: "oxp::rap::audit",
                $level,
                operation = job.operation.as_deref(),
                id = job.reply_to.id.as_str(),
                call_id = job.reply_to.call_id.as_deref(),
                group_id = job.reply_to.group_id.as_str(),
                user_id = job.user_id.as_deref(),
                caller = job.principal.subject.as_deref(),
                work_id = job.work.as_str(),
                received_at = %rfc3339(job.received_at_ms),
                completed_at = %rfc3339(unix_ms(std::time::SystemTime::now())),
                outcome,
                delivery,
                reason,
                store_error,
            )
        };
    }
    match delivery {
        "delivered" | "already_delivered" => audit!(tracing::Level::INFO),
        "dead_lettered" => audit!(tracing::Level::WARN),
        _ => audit!(tracing::Level::ERROR),
    }
}
