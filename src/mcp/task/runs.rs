//! The runner's handler of MCP task runs ([`super::TASK_RUN`]): a run ends
//! done, parked (waiting for the user past its executor's deadline), or retried; given up, the
//! task fails with a message its client sees.

use super::store::TASK_TTL;
use super::{RunEnd, TASK_RUN, Tasks};
use crate::server::BoxFuture;
use crate::work::{Handler, Outcome, Run, Work};
use serde_json::Value;
use std::sync::Arc;

/// The runner's handler of task runs.
struct TaskRuns(std::sync::Weak<Tasks>);

/// Registers the handler of `tasks`' runs with `runner`.
pub(in crate::mcp) fn register(tasks: &Arc<Tasks>, runner: &crate::work::Runner) {
    runner.register(TASK_RUN, Arc::new(TaskRuns(Arc::downgrade(tasks))));
}

impl Handler for TaskRuns {
    fn run<'a>(&'a self, _: &'a str, work: &'a Work, run: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(tasks) = self.0.upgrade() else {
                return Outcome::Retry("the server is shutting down".into());
            };
            let Some(id) = work.body.get("task").and_then(Value::as_str) else {
                return Outcome::Done;
            };
            let traceparent = work
                .body
                .get("traceparent")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let ended = tokio::select! {
                ended = tasks.run(id, traceparent, run.deadline, work.interrupted) => ended,
                // Let go (the process stops) or taken over: the run ends here.
                () = run.stop.cancelled() => return Outcome::Retry("stopped".into()),
            };
            match ended {
                // Its record, the result in it, counts in its caller's share while it lives.
                RunEnd::Finished => Outcome::Kept(std::time::SystemTime::now() + TASK_TTL),
                RunEnd::Parked => Outcome::Park,
                RunEnd::Unavailable(why) => Outcome::Retry(why),
            }
        })
    }

    fn give_up<'a>(
        &'a self,
        _: &'a str,
        work: &'a Work,
        reason: &'a str,
        _: Option<&'a [u8]>,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let (Some(tasks), Some(id)) = (
                self.0.upgrade(),
                work.body.get("task").and_then(Value::as_str),
            ) else {
                return false;
            };
            tracing::error!(target: "oxp::mcp", reason, "task run given up");
            if let Err(e) = tasks
                .fail(id, "The server could not run the task; call the tool again")
                .await
            {
                tracing::error!(target: "oxp::mcp", error = %e, "task outcome not recorded");
            }
            false
        })
    }
}
