//! # oxp-lambda
//!
//! Serve AI-agent tools over the [OXP](https://opentoolcalling.org) tool-calling protocol from AWS
//! Lambda (API Gateway REST and HTTP APIs, Function URLs, ALB) or as a plain local HTTP server.
//!
//! Tools are declared once, protocol-neutral, with [`Tool::builder`]: an async function over a
//! `Deserialize + JsonSchema` input type. The [`http`] module adapts the [`Registry`] to OXP;
//! the [`rap`] module serves the same registry over the async tool invocation protocol (RAP),
//! with results delivered to a callback URL (through SQS and a worker function in Lambda).
//!
//! ```no_run
//! use oxp_lambda::{Registry, Tool, ToolContext, ToolError};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! async fn greet(input: Greet, _ctx: ToolContext) -> Result<String, ToolError> {
//!     Ok(format!("Hello, {}!", input.name))
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     let registry = Registry::builder()
//!         .tool(Tool::builder("Hello.Greet", "1.0.0").description("Greets someone.").handler(greet))
//!         .build()
//!         .expect("valid tools");
//!     // In Lambda this serves the Runtime API; elsewhere http://127.0.0.1:8080.
//!     oxp_lambda::run(registry).await
//! }
//! ```
#![warn(missing_docs)]

// Lets `example_tools` (shared with `examples/`) name this crate as users do.
extern crate self as oxp_lambda;

pub mod auth;
pub mod config;
#[path = "../examples/spec_tools/tools.rs"]
pub mod example_tools;
pub mod http;
pub mod idempotency;
pub mod invoke;
pub mod lambda;
pub mod local;
pub mod logging;
pub mod protocol;
pub mod rap;
pub mod registry;
pub mod secrets;
pub mod tool;
pub mod validate;

pub use config::Config;
pub use registry::{NoInput, Registry, Tool};
pub use tool::{Secret, ToolContext, ToolError};

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

/// Runs `registry` the way the `oxp-lambda` binary does: configuration from `OXP_*` variables
/// (and `--port N` from the command line), then Lambda when `AWS_LAMBDA_RUNTIME_API` is set,
/// else the local server. Invalid configuration fails here with one log line naming the variable.
pub async fn run(registry: Registry) -> ExitCode {
    let mut config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            let format = if config::in_lambda() {
                config::LogFormat::Json
            } else {
                config::LogFormat::Text
            };
            logging::init(&Config {
                log_format: format,
                ..Config::default()
            });
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(message) = apply_args(&mut config, std::env::args().skip(1)) {
        eprintln!("{message}");
        return ExitCode::from(2);
    }
    logging::init(&config);
    if config::in_lambda() && config.lambda_role == config::LambdaRole::Worker {
        let worker = match build_worker(registry, config.clone()).await {
            Ok(worker) => worker,
            Err(e) => {
                tracing::error!("invalid configuration: {e}");
                return ExitCode::FAILURE;
            }
        };
        return match lambda::run_worker(Arc::new(worker), config.deadline_margin).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("lambda runtime failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let Server { app, rap } = match build_server(registry, config.clone()).await {
        Ok(server) => server,
        Err(e) => {
            tracing::error!("invalid configuration: {e}");
            return ExitCode::FAILURE;
        }
    };
    if config::in_lambda() {
        return match lambda::run(app).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("lambda runtime failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let addr = SocketAddr::new(config.host, config.port);
    let listener = match local::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!("cannot listen on {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let bound = listener.local_addr().unwrap_or(addr);
    println!("OXP server listening on http://{bound}");
    tracing::info!(%bound, "OXP server listening");
    let served = local::serve(listener, app, local::shutdown_signal()).await;
    if let Some(rap) = rap {
        let abandoned = rap.drain(config.rap.drain_timeout).await;
        if abandoned > 0 {
            tracing::warn!(
                abandoned,
                "unfinished invocations were dead-lettered at shutdown"
            );
        }
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("server failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Builds the app `config` describes; see [`build_server`].
pub async fn build_app(registry: Registry, config: Config) -> Result<http::App, String> {
    build_server(registry, config)
        .await
        .map(|server| server.app)
}

/// What [`build_server`] builds.
#[derive(Debug)]
pub struct Server {
    /// The HTTP app (OXP, and RAP when enabled).
    pub app: http::App,
    /// The async adapter, when enabled: the local server drains its queue on shutdown.
    pub rap: Option<Arc<rap::Rap>>,
}

/// Builds every part `config` describes: loads the AWS configuration once when a part needs
/// it, then the secret source, the authenticator, the idempotency store and the async
/// adapter. Errors name the variable at fault.
pub async fn build_server(registry: Registry, config: Config) -> Result<Server, String> {
    let sdk = aws_sdk_config(&config).await;
    let secrets = secrets::Secrets::from_config(&config.secrets, sdk.as_ref())
        .map_err(|e| format!("secrets: {e}"))?;
    let auth = auth::Authenticator::from_config(&config.auth, secrets.clone())?;
    if let config::AuthConfig::None { explicit } = config.auth
        && !config::in_lambda()
    {
        tracing::warn!(
            explicit,
            "authentication is off (OXP_AUTH=none): any local process can call the tools"
        );
    }
    let dynamo = match (&config.idempotency.table, &sdk) {
        (Some(table), Some(sdk))
            if config.idempotency.mode == config::IdempotencyMode::DynamoDb =>
        {
            Some(invoke::Idempotency {
                store: Arc::new(idempotency::DynamoStore::new(
                    aws_sdk_dynamodb::Client::new(sdk),
                    table.clone(),
                )),
                keep: config.idempotency.ttl,
            })
        }
        _ => None,
    };
    let rap = if config.rap.enabled {
        let sqs = sdk.as_ref().map(aws_sdk_sqs::Client::new);
        Some(Arc::new(rap::build(
            &registry,
            &config,
            secrets.clone(),
            sqs.as_ref(),
        )?))
    } else {
        None
    };
    let mut state = http::AppState::new(Arc::new(registry), config, secrets, auth);
    if dynamo.is_some() {
        state = state.with_idempotency(dynamo);
    }
    if let Some(rap) = &rap {
        state = state.with_rap(rap.clone());
    }
    Ok(Server {
        app: http::app(state),
        rap,
    })
}

/// Builds the RAP worker `config` describes, for `OXP_LAMBDA_ROLE=worker`.
pub async fn build_worker(
    registry: Registry,
    config: Config,
) -> Result<rap::worker::Worker, String> {
    let sdk = aws_sdk_config(&config).await;
    let secrets = secrets::Secrets::from_config(&config.secrets, sdk.as_ref())
        .map_err(|e| format!("secrets: {e}"))?;
    let sqs = sdk.as_ref().map(aws_sdk_sqs::Client::new);
    rap::build_worker(&registry, &config, secrets, sqs.as_ref())
}

/// The AWS configuration, loaded only when a configured part talks to AWS.
async fn aws_sdk_config(config: &Config) -> Option<aws_config::SdkConfig> {
    let needs_aws = config.secrets.source == config::SecretSourceKind::Aws
        || config.idempotency.mode == config::IdempotencyMode::DynamoDb
        || (config.rap.enabled
            && (config.rap.queue_url.is_some() || config.rap.dead_letter_queue_url.is_some()));
    if !needs_aws {
        return None;
    }
    Some(
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .load()
            .await,
    )
}

/// Applies command-line arguments (`--port N`, `--port=N`, `--help`).
fn apply_args(config: &mut Config, args: impl Iterator<Item = String>) -> Result<(), String> {
    const USAGE: &str = "usage: oxp-lambda [--port N]\n\nConfiguration is read from OXP_* environment variables (see README).";
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let port = match arg.as_str() {
            "--port" | "-p" => args
                .next()
                .ok_or_else(|| format!("--port needs a value\n{USAGE}"))?,
            "--help" | "-h" => return Err(USAGE.to_owned()),
            other => match other.strip_prefix("--port=") {
                Some(port) => port.to_owned(),
                None => return Err(format!("unknown argument '{other}'\n{USAGE}")),
            },
        };
        config.port = port
            .parse()
            .map_err(|_| format!("--port: '{port}' is not a port number"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Config, String> {
        let mut c = Config::default();
        apply_args(&mut c, list.iter().map(|s| s.to_string())).map(|()| c)
    }

    #[test]
    fn port_flag_overrides_the_environment() {
        assert_eq!(args(&["--port", "9001"]).unwrap().port, 9001);
        assert_eq!(args(&["--port=9002"]).unwrap().port, 9002);
        assert!(args(&["--port"]).is_err());
        assert!(args(&["--port", "x"]).is_err());
        assert!(args(&["--bogus"]).is_err());
    }
}

/// The README's Rust examples, compiled as doc tests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
