//! MCP at `/mcp` (`OXP_MCP`) as the value the app takes.

use crate::app::StartError;
use crate::app::protocol::{Assembly, Contribution, Protocol};

/// MCP (Streamable HTTP, stateless).
pub(crate) struct McpProtocol;

impl Protocol for McpProtocol {
    fn build(&self, assembly: &Assembly<'_>) -> Result<Contribution, StartError> {
        let config = assembly.config;
        if !config.mcp.enabled {
            return Ok(Contribution::default());
        }
        let served =
            crate::mcp::served(assembly.invoker.clone(), &config.mcp).map_err(StartError::Mcp)?;
        Ok(Contribution::routes(crate::mcp::router(
            served,
            assembly.auth,
            &config.mcp,
            &config.allowed_origins,
            config.max_body_bytes,
            crate::config::in_lambda(),
        )))
    }
}
