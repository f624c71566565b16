//! The protocols this build serves, as values: the Cargo features decide which exist, the app
//! takes them all and knows none of them (`super::protocol`). Each file here is the glue of one
//! protocol adapter: how it is built over the assembly, the Lambda role it runs, and its own
//! entry points on [`super::App`].

#[cfg(feature = "agentcore")]
mod agentcore;
#[cfg(feature = "bedrock-agent")]
mod bedrock;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "oauth")]
mod oauth;
mod oxp;
#[cfg(feature = "rap")]
mod rap;

use super::protocol::Protocol;

/// The Lambda role runner of a direct-invocation protocol (AgentCore, Bedrock Agents): the
/// direct Runtime API loop over `handler`.
#[cfg(any(feature = "agentcore", feature = "bedrock-agent"))]
fn direct_runner(
    handler: std::sync::Arc<dyn crate::transport::lambda::direct::DirectHandler>,
) -> super::protocol::RoleRunner {
    std::sync::Arc::new(move |margin, max_bytes| {
        let handler = handler.clone();
        Box::pin(
            async move { crate::transport::lambda::direct::run(handler, margin, max_bytes).await },
        )
    })
}

/// Every protocol compiled in, in the order their routes are merged.
pub(crate) fn all() -> Vec<Box<dyn Protocol>> {
    vec![
        Box::new(oxp::OxpProtocol),
        #[cfg(feature = "mcp")]
        Box::new(mcp::McpProtocol),
        #[cfg(feature = "rap")]
        Box::new(rap::RapProtocol),
        #[cfg(feature = "agentcore")]
        Box::new(agentcore::AgentCoreProtocol),
        #[cfg(feature = "bedrock-agent")]
        Box::new(bedrock::BedrockAgentsProtocol),
        #[cfg(feature = "oauth")]
        Box::new(oauth::OAuthRoutes),
    ]
}
