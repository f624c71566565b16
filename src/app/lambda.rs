//! The app as a Lambda function's entry point (feature `lambda-runtime`): the Runtime API in the
//! configured role (`OXP_LAMBDA_ROLE`), and a role's SQS batches handled in process.

use super::App;
use crate::server::{CallContext, RoleKind};
use std::process::ExitCode;

impl App {
    /// Serves the Lambda Runtime API in the configured role (`OXP_LAMBDA_ROLE`) until the
    /// environment ends: the entry point of a Lambda function built around this app, for
    /// programs that start the runtime themselves rather than through [`crate::run`].
    pub async fn run_lambda(self) -> Result<(), lambda_runtime::Error> {
        let config = self.parts.config.clone();
        let role = self.role(&config.lambda_role).cloned();
        crate::transport::lambda::run(self, role.as_ref(), &config).await
    }

    /// Handles one SQS batch as the configured role does when its protocols are fed records
    /// (`OXP_LAMBDA_ROLE=worker`: RAP's invocation jobs, each run once per invocation id however
    /// often SQS delivers it, its result delivered or dead-lettered; MCP tasks' runs); the
    /// records to retry come back in `batchItemFailures`. An app whose configured role takes no
    /// records reports every record. With no deadline, a run waits for its user as long as
    /// it must: see [`App::handle_sqs_batch_within`].
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
            Some(RoleKind::Records(handlers)) => handlers.as_slice(),
            _ => {
                tracing::error!(target: "oxp::lambda", role = self.parts.config.lambda_role.as_str(), "an SQS batch reached an app whose role takes no records");
                &[]
            }
        };
        crate::transport::lambda::sqs::handle_batch(handlers, event, context).await
    }
}

/// Runs `app` under the Lambda Runtime API (the binary in Lambda).
pub(crate) async fn run(app: App) -> ExitCode {
    match app.run_lambda().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("lambda runtime failed: {e}");
            ExitCode::FAILURE
        }
    }
}
