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
        let served = crate::mcp::served(assembly.invoker.clone(), &settings.pins)?;
        Ok(Contribution::routes(crate::mcp::router(
            served,
            assembly.auth,
            &settings,
            &config.allowed_origins,
            config.max_body_bytes,
            config.runtime.lambda,
        )))
    }
}
