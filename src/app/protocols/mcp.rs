//! MCP at `/mcp` (`OXP_MCP`, `OXP_MCP_*`) as the value the app takes.

use crate::app::protocol::{Assembly, Contribution, Protocol};
use crate::config::{Config, ConfigError, Env};
use crate::mcp::McpConfig;

/// MCP (Streamable HTTP, stateless).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mcp;

impl Protocol for Mcp {
    type Settings = McpConfig;

    fn name(&self) -> &'static str {
        "mcp"
    }

    fn settings(&self, env: &Env<'_>, server: &Config) -> Result<McpConfig, ConfigError> {
        let mut settings = McpConfig::from_env(env)?;
        settings.scopes = server.required_scopes.clone();
        Ok(settings)
    }

    fn build(&self, settings: McpConfig, assembly: &Assembly<'_>) -> Result<Contribution, String> {
        if !settings.enabled {
            return Ok(Contribution::default());
        }
        let config = assembly.config;
        state_key_kept_from_tools(assembly.invoker)?;
        if config.runtime.lambda && settings.task_queue_url.is_some() && assembly.state().is_none()
        {
            return Err("OXP_MCP_TASK_QUEUE_URL needs the state table (OXP_STATE_TABLE) the tasks are kept in".into());
        }
        // Servers sharing a state table open each other's states: they need the one shared
        // key. Held nowhere, that is known now (a key from Secrets Manager is read, and its
        // absence said, at the first round).
        let key = crate::mcp::STATE_KEY_SECRET_ID;
        let held = assembly.invoker.secrets().holds(key);
        let shared = matches!(config.state, crate::state::StateConfig::DynamoDb { .. });
        if shared && !held {
            return Err(format!(
                "{key} must be set where servers share a state table (OXP_STATE_TABLE): each would seal MCP's requestStates and sessions with a key of its own, which the others cannot open"
            ));
        }
        // Locally, without MCP_STATE_KEY, the server seals with a key of its own, kept in a file
        // beside its state (0600): said once at start.
        let key_file = crate::state::key_file(&config.state).filter(|_| !held);
        if let Some(file) = &key_file {
            tracing::info!(target: "oxp::mcp", key_file = %file.display(), "MCP_STATE_KEY is not set: requestStates and sessions are sealed with the server's own key, kept in this file (0600)");
        }
        let served = crate::mcp::served_for_mcp(
            assembly.invoker.clone(),
            &settings,
            assembly.questions,
            (config.runtime.lambda, shared),
            config.lambda_streaming,
            assembly.runner,
            key_file,
        )?;
        Ok(Contribution::http(|| {
            let routes = crate::mcp::router(
                served,
                assembly.auth,
                &settings,
                &config.allowed_origins,
                config.max_body_bytes,
                config.runtime.lambda,
            );
            (routes, &crate::mcp::PATHS, crate::mcp::refused)
        }))
    }
}

/// Refuses a tool that declares the secret that seals MCP's `requestState` (it could forge the
/// answers of any caller's questions), and a held key too short to seal with.
fn state_key_kept_from_tools(invoker: &oxp_lambda_core::invoke::Invoker) -> Result<(), String> {
    let key = crate::mcp::STATE_KEY_SECRET_ID;
    crate::app::guards::kept_from_tools(
        invoker.registry(),
        &[key],
        "which seals MCP's requestState",
    )?;
    crate::app::guards::long_enough(invoker.secrets(), key, crate::mcp::STATE_KEY_BYTES)
}
