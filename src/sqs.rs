//! SQS (feature `sqs`): in Lambda, work that outlives its request (RAP's acknowledged
//! invocations, MCP tasks' runs) goes to a queue whose consumer is the worker function (the
//! HTTP function freezes once it has answered, so nothing may run after it), and RAP's
//! undeliverable results to a dead-letter queue.

use crate::aws::{AwsClient, SharedSdk};

/// An SQS client, built by its first message.
#[derive(Debug, Clone)]
pub(crate) struct Sqs(AwsClient<aws_sdk_sqs::Client>);

impl Sqs {
    /// A client over the shared AWS configuration.
    pub(crate) fn connect(sdk: &SharedSdk) -> Result<Self, String> {
        Ok(Self(AwsClient::lazy(sdk, aws_sdk_sqs::Client::new)))
    }

    /// Sends `body` to `queue_url`.
    pub(crate) async fn send(&self, queue_url: &str, body: String) -> Result<(), String> {
        self.send_later(queue_url, body, std::time::Duration::ZERO)
            .await
    }

    /// [`Sqs::send`], the message visible only `after` from now (at most SQS's 15 minutes: a
    /// later one is visible then, and finds its work not yet due).
    pub(crate) async fn send_later(
        &self,
        queue_url: &str,
        body: String,
        after: std::time::Duration,
    ) -> Result<(), String> {
        let delay = after.as_secs_f64().ceil().min(900.0) as i32;
        self.0
            .get()
            .await
            .send_message()
            .queue_url(queue_url)
            .message_body(body)
            .set_delay_seconds((delay > 0).then_some(delay))
            .send()
            .await
            .map(drop)
            .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(e).to_string())
    }
}
