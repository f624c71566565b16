//! MCP tasks in Lambda: an execution environment freezes once it has answered, so a task's run
//! goes to an SQS queue (`OXP_MCP_TASK_QUEUE_URL`) whose consumer, the worker role, runs it;
//! any environment answers `tasks/get` from the state table, and `tasks/cancel` reaches the run
//! through it. A run that waits for the user past its worker's invocation parks the task; the
//! answer (`tasks/update`, in whichever environment) sends the run to the queue again.

use super::tasks::{RunEnd, Tasks};
use crate::server::{BoxFuture, CallContext, Handled, RecordHandler};
use crate::sqs::Sqs;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Where task runs go.
#[derive(Debug, Clone)]
pub(crate) struct TaskQueue {
    sqs: Sqs,
    url: String,
}

/// A queued run: the task (its record holds the rest) and the trace it belongs to.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TaskJob {
    pub(super) mcp_task: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) traceparent: Option<String>,
}

/// Longest task id a queued record may name (ids made here are 32 characters).
pub(super) const MAX_TASK_ID: usize = 64;

impl TaskQueue {
    /// The queue at `url`, over the shared AWS configuration.
    pub(crate) fn connect(sdk: &crate::aws::SharedSdk, url: String) -> Result<Self, String> {
        Ok(Self {
            sqs: Sqs::connect(sdk)?,
            url,
        })
    }

    /// Sends task `id`'s run.
    pub(crate) async fn send(&self, id: &str, traceparent: Option<&str>) -> Result<(), String> {
        let job = TaskJob {
            mcp_task: id.to_owned(),
            traceparent: traceparent.map(str::to_owned),
        };
        let body = serde_json::to_string(&job).map_err(|e| e.to_string())?;
        self.sqs.send(&self.url, body).await
    }
}

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
