//! The app as a Lambda function's entry point (feature `lambda-runtime`): the Runtime API in the
//! configured role (`OXP_LAMBDA_ROLE`). A role's SQS batches handled in process are
//! `records.rs`'s (feature `lambda-records`).

use super::App;
use std::process::ExitCode;

impl App {
    /// Serves the Lambda Runtime API in the configured role (`OXP_LAMBDA_ROLE`) until the
    /// environment ends: the entry point of a Lambda function built around this app, for
    /// programs that start the runtime themselves rather than through [`crate::run()`].
    pub async fn run_lambda(self) -> Result<(), lambda_runtime::Error> {
        let config = self.parts.config.clone();
        let role = self.role(&config.lambda_role).cloned();
        crate::transport::lambda::run(self, role.as_ref(), &config).await
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
