//! The `oxp-lambda` binary: serves the example tools, in Lambda or locally.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    match oxp_lambda::example_tools::registry() {
        Ok(registry) => oxp_lambda::run(registry).await,
        Err(e) => {
            eprintln!("invalid tools: {e}");
            ExitCode::FAILURE
        }
    }
}
