//! A role's SQS batches handled in process (feature `lambda-records`), for programs that run the
//! Lambda runtime themselves.

use super::App;
use crate::server::{CallContext, RoleKind};

impl App {
    /// Handles one SQS batch (feature `lambda-records`) as the configured role does when its
    /// protocols are fed records (`OXP_LAMBDA_ROLE=worker`: RAP's invocation jobs, each run once
    /// per invocation id however often SQS delivers it, its result delivered or dead-lettered;
    /// MCP tasks' runs); the records to retry come back in `batchItemFailures`. An app whose
    /// configured role takes no records reports every record. With no deadline, a run waits for
    /// its user as long as it must: see [`App::handle_sqs_batch_within`].
    pub async fn handle_sqs_batch(
        &self,
        event: aws_lambda_events::event::sqs::SqsEvent,
    ) -> aws_lambda_events::event::sqs::SqsBatchResponse {
        self.sqs_batch(event, CallContext::default()).await
    }

    /// [`App::handle_sqs_batch`] within an invocation that ends at `deadline` (a program that
    /// runs the Lambda runtime itself passes its invocation's, less a margin): tools stop at
    /// it, and a run waiting for its user is parked before it (the answer resumes it).
    pub async fn handle_sqs_batch_within(
        &self,
        event: aws_lambda_events::event::sqs::SqsEvent,
        deadline: std::time::Instant,
    ) -> aws_lambda_events::event::sqs::SqsBatchResponse {
        let context = CallContext {
            deadline: Some(deadline),
            ..CallContext::default()
        };
        self.sqs_batch(event, context).await
    }

    async fn sqs_batch(
        &self,
        event: aws_lambda_events::event::sqs::SqsEvent,
        context: CallContext,
    ) -> aws_lambda_events::event::sqs::SqsBatchResponse {
        let handlers = match self.role(&self.parts.config.lambda_role).map(|r| &r.kind) {
            Some(RoleKind::Records(records)) => records.0.as_slice(),
            _ => {
                tracing::error!(target: "oxp::lambda", role = self.parts.config.lambda_role.as_str(), "an SQS batch reached an app whose role takes no records");
                &[]
            }
        };
        crate::transport::lambda::sqs::handle_batch(handlers, event, context).await
    }
}
