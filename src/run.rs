//! What the `oxp-lambda` binary does with a registry: read the configuration, then serve the
//! Lambda Runtime API or a local port.

use crate::app::{App, AppBuilder};
use crate::config::{Config, in_lambda};
use crate::transport::local;
use oxp_lambda_core::registry::Registry;
use std::net::SocketAddr;
use std::process::ExitCode;

/// Runs `registry` the way the `oxp-lambda` binary does: configuration from `OXP_*` variables
/// (and `--port N` from the command line), then Lambda when `AWS_LAMBDA_RUNTIME_API` is set,
/// else the local server. An invalid configuration fails here with one log line naming the
/// variable.
pub async fn run(registry: Registry) -> ExitCode {
    let mut config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            let _log = crate::logging::init(&Config {
                log_format: if in_lambda() {
                    crate::config::LogFormat::Json
                } else {
                    crate::config::LogFormat::Text
                },
                ..Config::default()
            });
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match crate::args::apply(&mut config, std::env::args().skip(1)) {
        Ok(crate::args::Command::Serve) => {}
        Ok(crate::args::Command::AgentCoreSchema) => {
            return print_agentcore_schema(&registry, &config);
        }
        Ok(crate::args::Command::BedrockAgentSchema) => {
            return print_bedrock_agent_schema(&registry);
        }
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    }
    // Held to the end of `run`, so every line logged until then is written out.
    let _log = crate::logging::init(&config);
    run_with(App::builder(registry).config(config)).await
}

/// Runs an app the program configured itself, as [`run`] does after reading the environment
/// and the command line: the Lambda Runtime API when `AWS_LAMBDA_RUNTIME_API` is set, else
/// the local server on the configuration's host and port until Ctrl-C or SIGTERM. It reads no
/// argument and no `OXP_*` variable and installs no logging subscriber: for programs that own
/// their configuration, arguments and logging:
/// `run_with(App::builder(registry).config(config)).await`.
pub async fn run_with(builder: AppBuilder) -> ExitCode {
    let config = builder.configured();
    let addr = SocketAddr::new(config.host, config.port);
    let app = match builder.build().await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("{e}");
            return ExitCode::FAILURE;
        }
    };
    #[cfg(feature = "lambda")]
    if in_lambda() {
        return match app.run_lambda().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("lambda runtime failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
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
    match app.serve(listener, local::shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("server failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `oxp-lambda schema --agentcore`: the tools MCP serves (`OXP_MCP_TOOLS` pins them), as the
/// gateway target's inline `toolSchema`, on standard output.
fn print_agentcore_schema(registry: &Registry, config: &Config) -> ExitCode {
    #[cfg(feature = "agentcore")]
    {
        let exported = registry
            .served(&config.mcp.pins, "OXP_MCP_TOOLS")
            .and_then(|tools| crate::agentcore::schema::export(&tools));
        print_schema("--agentcore", exported)
    }
    #[cfg(not(feature = "agentcore"))]
    {
        let _ = (registry, config);
        eprintln!("oxp-lambda schema --agentcore: built without the `agentcore` feature");
        ExitCode::FAILURE
    }
}

/// `oxp-lambda schema --bedrock-agent`: the latest version of each tool as the action group's
/// function schema, on standard output; a tool it cannot express fails, named.
fn print_bedrock_agent_schema(registry: &Registry) -> ExitCode {
    #[cfg(feature = "bedrock-agent")]
    {
        let exported = registry
            .served(&[], "")
            .and_then(|tools| crate::bedrock::schema::export(&tools));
        print_schema("--bedrock-agent", exported)
    }
    #[cfg(not(feature = "bedrock-agent"))]
    {
        let _ = registry;
        eprintln!("oxp-lambda schema --bedrock-agent: built without the `bedrock-agent` feature");
        ExitCode::FAILURE
    }
}

/// Prints an exported schema on standard output, or why `oxp-lambda schema <flag>` cannot.
#[cfg(any(feature = "agentcore", feature = "bedrock-agent"))]
fn print_schema(flag: &str, exported: Result<serde_json::Value, String>) -> ExitCode {
    match exported {
        Ok(schema) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&schema).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("oxp-lambda schema {flag}: {e}");
            ExitCode::FAILURE
        }
    }
}
