//! MCP tasks in Lambda: an execution environment freezes once it has answered, so a task's run
//! goes to an SQS queue (`OXP_MCP_TASK_QUEUE_URL`) whose consumer, the worker role, runs it;
//! any environment answers `tasks/get` from the state table, and `tasks/cancel` reaches the run
//! through it. A run that waits for the user past its worker's invocation parks the task; the
//! answer (`tasks/update`, in whichever environment) sends the run to the queue again.

use crate::sqs::Sqs;
use serde::{Deserialize, Serialize};

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
