//! The worker role's side of MCP tasks in Lambda: a queued run (a record of the invocations
//! queue naming a task) runs the task's tool here, in whichever environment takes it.

use super::task_queue::{MAX_TASK_ID, TaskJob};
use super::tasks::{RunEnd, Tasks};
use crate::server::{BoxFuture, CallContext, Handled, RecordHandler};
use std::sync::Arc;

/// The worker role's handler of queued task runs.
pub(crate) struct TaskRecords(pub(crate) Arc<Tasks>);

impl RecordHandler for TaskRecords {
    fn handle<'a>(&'a self, body: &'a str, context: CallContext) -> BoxFuture<'a, Handled> {
        Box::pin(async move {
            let Ok(job) = serde_json::from_str::<TaskJob>(body) else {
                return Handled::NotMine;
            };
            if job.mcp_task.is_empty() || job.mcp_task.len() > MAX_TASK_ID {
                return Handled::NotMine;
            }
            let traceparent = job.traceparent.or(context.traceparent);
            match self
                .0
                .run(&job.mcp_task, traceparent, context.deadline)
                .await
            {
                // A parked task's answer enqueues it again: this record is done with.
                RunEnd::Finished | RunEnd::Parked => Handled::Done,
                RunEnd::Unavailable(why) => Handled::Retry(why),
            }
        })
    }
}
