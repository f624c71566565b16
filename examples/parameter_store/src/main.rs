//! A tool server whose secrets come from Parameter Store: secret `TWILIO_API_KEY` is the
//! parameter `/oxp-example/TWILIO_API_KEY`. Run with AWS credentials (or `AWS_ENDPOINT_URL`
//! pointing at an emulator):
//!
//! ```sh
//! cargo run --manifest-path examples/parameter_store/Cargo.toml
//! ```

use oxp_lambda::{App, Config, Registry, SecretKey, ToolContext, ToolError, tool};
use oxp_parameter_store::ParameterStore;
use std::process::ExitCode;
use std::sync::Arc;

/// The SMS service's key, a `SecureString` parameter.
const TWILIO_KEY: SecretKey = SecretKey::new("TWILIO_API_KEY");

/// Says whether a text message to a number would go out. A demo: it sends nothing, but it needs
/// the service's key, fetched from Parameter Store (and cached) before it runs.
#[tool(name = "Sms.Check", version = "1.0.0", read_only, secrets = [TWILIO_KEY])]
async fn check(
    /// The number, e.g. "+15551234567".
    to: String,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let _key = ctx.expose(TWILIO_KEY)?;
    if !to.starts_with('+') {
        return Err(ToolError::new(
            "Give the number with its country code, e.g. +1...",
        ));
    }
    Ok(format!("A message to {to} would go out"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let registry = match Registry::builder().tool(check_tool()).build() {
        Ok(registry) => registry,
        Err(e) => {
            eprintln!("invalid tools: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Over the server's own HTTP client (one TLS configuration, its CA roots read once), not
    // the SDK's: the crate then builds no second TLS stack (Cargo.toml).
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(oxp_lambda::aws_http_client())
        .load()
        .await;
    let source = ParameterStore::new(
        aws_sdk_ssm::Client::new(&sdk),
        "/oxp-example/",
        &[TWILIO_KEY.id()],
    );
    let builder = App::builder(registry)
        .config(config)
        .secret_source(Arc::new(source));
    oxp_lambda::run_with(builder).await
}
