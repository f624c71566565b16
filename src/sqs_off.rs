//! Without the `sqs` feature there is no SQS queue: `OXP_RAP_QUEUE_URL`,
//! `OXP_RAP_DEAD_LETTER_QUEUE_URL` and `OXP_MCP_TASK_QUEUE_URL` are refused at start.

use crate::aws::SharedSdk;

/// A client that cannot exist in this build.
#[derive(Debug, Clone)]
pub(crate) enum Sqs {}

impl Sqs {
    /// Refuses: the queues need the feature.
    pub(crate) fn connect(_sdk: &SharedSdk) -> Result<Self, String> {
        Err("SQS queues (OXP_RAP_QUEUE_URL, OXP_RAP_DEAD_LETTER_QUEUE_URL, OXP_MCP_TASK_QUEUE_URL, OXP_WORK_QUEUE_URL) need the `sqs` feature of oxp-lambda".into())
    }

    /// Unreachable: no client is ever made.
    pub(crate) async fn send(&self, _queue_url: &str, _body: String) -> Result<(), String> {
        match *self {}
    }

    /// Unreachable: no client is ever made.
    pub(crate) async fn send_later(
        &self,
        _queue_url: &str,
        _body: String,
        _after: std::time::Duration,
    ) -> Result<(), String> {
        match *self {}
    }
}
