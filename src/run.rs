//! What the `oxp-lambda` binary does with a registry: read the configuration, then serve the
//! Lambda Runtime API or a local port.

use crate::app::{App, AppBuilder};
use crate::config::{Config, LogFormat};
use oxp_lambda_core::registry::Registry;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

/// Runs `registry` the way the `oxp-lambda` binary does: configuration from `OXP_*` variables
/// (and `--port N` from the command line), then Lambda when `AWS_LAMBDA_RUNTIME_API` is set,
/// else the local server. An invalid configuration fails here with one log line naming the
/// variable.
pub async fn run(registry: Registry) -> ExitCode {
    run_app(App::builder(registry)).await
}

/// [`run`] for an app with protocols of your own ([`AppBuilder::protocol`]): the configuration
/// from `OXP_*` variables and the command line (it replaces any the builder was given), the
/// logging subscriber installed, then Lambda or the local server.
pub async fn run_app(builder: AppBuilder) -> ExitCode {
    let mut config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            let runtime = crate::config::Runtime::of_process();
            let _log = crate::logging::init(&Config {
                log_format: if runtime.lambda {
                    LogFormat::Json
                } else {
                    LogFormat::Text
                },
                runtime,
                ..Config::default()
            });
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    // As text, a byte that is not UTF-8 replaced: `std::env::args` panics on it.
    let args = std::env::args_os().skip(1);
    match crate::args::apply(&mut config, args.map(|a| a.to_string_lossy().into_owned())) {
        Ok(crate::args::Command::Serve) => {}
        Ok(crate::args::Command::Help) => {
            let _ = writeln!(std::io::stdout(), "{}", crate::args::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(crate::args::Command::Version) => {
            let _ = writeln!(
                std::io::stdout(),
                "oxp-lambda {}",
                env!("CARGO_PKG_VERSION")
            );
            return ExitCode::SUCCESS;
        }
        Ok(crate::args::Command::Schema(protocol)) => {
            return print_schema(builder.config(config), &protocol);
        }
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    }
    // The schemas compile while the logging and the app are set up (`build` joins them).
    let builder = builder.config(config).compiling();
    // Held to the end of `run`, so every line logged until then is written out.
    let _log = crate::logging::init(builder.configured());
    run_with(builder).await
}

/// Runs an app the program configured itself, as [`run`] does after reading the environment
/// and the command line: the Lambda Runtime API when the configuration says it runs in Lambda
/// ([`Config::runtime`]), else the local server on the configuration's host and port until
/// Ctrl-C or SIGTERM (a build without the `http-server` feature has none: it fails, saying so). It reads no argument and no `OXP_*` variable and installs no logging
/// subscriber: for programs that own their configuration, arguments and logging:
/// `run_with(App::builder(registry).config(config)).await`.
pub async fn run_with(builder: AppBuilder) -> ExitCode {
    let config = builder.configured();
    let addr = SocketAddr::new(config.host, config.port);
    let lambda = config.runtime.lambda;
    // API Gateway's authorizer reaches the server only inside a Lambda event: a local server
    // (even one API Gateway fronts over HTTP) would refuse every request with 401.
    if !lambda && matches!(config.auth, crate::auth::AuthConfig::ApiGateway { .. }) {
        tracing::error!(
            "invalid configuration: OXP_AUTH: 'apigateway' reads the authorizer API Gateway puts in Lambda events, which a local server never gets: use 'jwt' here"
        );
        return ExitCode::FAILURE;
    }
    let app = match builder.build().await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if cfg!(panic = "abort") {
        // The promise that a panicking tool only fails its call needs unwinding.
        tracing::warn!(
            "built with panic = \"abort\": a tool that panics ends the process instead of failing its call; build with panic = \"unwind\" (docs/architecture.md)"
        );
    }
    if lambda {
        return crate::app::lambda::run(app).await;
    }
    crate::app::http_side::serve_locally(app, addr).await
}

/// `oxp-lambda schema --<protocol>`: that protocol's export of the tools (the AgentCore
/// target's inline `toolSchema`, the Bedrock Agents action group's function schema), on
/// standard output; a tool it cannot express fails, named.
fn print_schema(mut builder: AppBuilder, protocol: &str) -> ExitCode {
    match builder.schema(protocol) {
        Ok(Ok(schema)) => {
            let text = serde_json::to_string_pretty(&schema).unwrap_or_default();
            // A reader that stopped early (`| head`) is no panic of ours (println! panics).
            match writeln!(std::io::stdout(), "{text}") {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Ok(Err(e)) => {
            eprintln!("oxp-lambda schema --{protocol}: {e}");
            ExitCode::FAILURE
        }
        Err(exporting) => {
            let names: Vec<String> = exporting.iter().map(|n| format!("--{n}")).collect();
            eprintln!(
                "oxp-lambda schema --{protocol}: no protocol of this build exports a schema by that name (those that do: {})",
                names.join(", ")
            );
            ExitCode::FAILURE
        }
    }
}
