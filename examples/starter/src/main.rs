//! A tool server: the tools of `tools.rs`, served in AWS Lambda (when deployed) or on
//! 127.0.0.1:8080 (`cargo run`).

mod tools;

use oxp_lambda::{Registry, RegistryError};

/// Every tool of this server.
fn registry() -> Result<Registry, RegistryError> {
    Registry::builder()
        .tool(tools::add_tool())
        .tool(tools::forecast_tool())
        .build()
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match registry() {
        Ok(registry) => oxp_lambda::run(registry).await,
        Err(e) => {
            eprintln!("invalid tools: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
