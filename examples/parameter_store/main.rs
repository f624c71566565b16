//! The example tools with their secrets from Parameter Store: secret `TWILIO_API_KEY` is the
//! parameter `/oxp-example/TWILIO_API_KEY`. Run with AWS credentials (or
//! `AWS_ENDPOINT_URL` pointing at an emulator):
//!
//! ```sh
//! cargo run --example parameter_store
//! ```

mod source;
#[path = "../spec_tools/tools.rs"]
mod tools;

use oxp_lambda::{App, Config};
use source::ParameterStore;
use std::process::ExitCode;
use std::sync::Arc;

#[tokio::main]
async fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let registry = match tools::registry() {
        Ok(registry) => registry,
        Err(e) => {
            eprintln!("invalid tools: {e}");
            return ExitCode::FAILURE;
        }
    };
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let source = ParameterStore::new(
        aws_sdk_ssm::Client::new(&sdk),
        "/oxp-example/",
        &["TWILIO_API_KEY"],
    );
    let builder = App::builder(registry)
        .config(config)
        .secret_source(Arc::new(source));
    oxp_lambda::run_with(builder).await
}
