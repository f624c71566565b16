//! Without the `lambda-runtime` feature the binary cannot answer the Lambda Runtime API.

use super::App;
use std::process::ExitCode;

/// Refuses to run in Lambda: this build has no Lambda transport.
pub(crate) async fn run(_app: App) -> ExitCode {
    tracing::error!(
        "running in Lambda, but built without the `lambda` or `lambda-runtime` feature of oxp-lambda"
    );
    ExitCode::FAILURE
}
