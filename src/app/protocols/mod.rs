//! The protocols this build serves, as values: the Cargo features decide which exist, the app
//! takes them all and knows none of them (`super::protocol`). Each file here is the glue of one
//! protocol adapter: its settings, how it is built over the assembly, the Lambda role it
//! serves, its schema export and its own entry points on [`super::App`].
//!
//! A program edits a built-in protocol's settings with
//! [`AppBuilder::configure`](super::AppBuilder::configure) (`configure::<Mcp>(|mcp| ...)`) or
//! replaces it with [`AppBuilder::protocol`](super::AppBuilder::protocol).

#[cfg(feature = "agentcore")]
mod agentcore;
#[cfg(feature = "bedrock-agent")]
mod bedrock;
#[cfg(feature = "mcp")]
mod mcp;
mod oxp;
#[cfg(feature = "rap")]
mod rap;
#[cfg(feature = "webhooks")]
mod webhooks;

#[cfg(feature = "agentcore")]
pub use agentcore::AgentCore;
#[cfg(feature = "bedrock-agent")]
pub use bedrock::BedrockAgents;
#[cfg(feature = "bedrock-agent")]
use bedrock::BedrockAgentsApi;
#[cfg(feature = "mcp")]
pub use mcp::Mcp;
pub use oxp::Oxp;
#[cfg(feature = "rap")]
pub use rap::Rap;
#[cfg(feature = "webhooks")]
pub use webhooks::EventSources;

use super::protocol::{Configured, Entry};

/// Every protocol compiled in that something can reach in this build, in the order their
/// routes are merged.
pub(crate) fn all() -> Vec<Box<dyn Entry>> {
    vec![
        Box::new(Configured::new(Oxp)),
        // Nothing reaches /mcp in a build that serves no HTTP and takes no queue's work (the
        // AgentCore function, whose MCP tools come as direct invocations): built there, its
        // round trips and tasks would be set up at every start, and linked, for none.
        #[cfg(all(
            feature = "mcp",
            any(feature = "http-server", feature = "lambda-records")
        ))]
        Box::new(Configured::new(Mcp)),
        #[cfg(feature = "rap")]
        Box::new(Configured::new(Rap)),
        #[cfg(feature = "agentcore")]
        Box::new(Configured::new(AgentCore)),
        #[cfg(feature = "bedrock-agent")]
        Box::new(Configured::new(BedrockAgents)),
        #[cfg(feature = "bedrock-agent")]
        Box::new(Configured::new(BedrockAgentsApi)),
        #[cfg(feature = "webhooks")]
        Box::new(Configured::new(EventSources)),
    ]
}
