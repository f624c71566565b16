//! The core: what a tool is, the registry of tools, their schemas, and the one call path every
//! protocol goes through. It knows no protocol, transport or AWS service: secret sources and
//! idempotency stores plug in through the traits defined here.

pub(crate) mod content;
pub(crate) mod declare;
pub(crate) mod idempotency;
pub(crate) mod invoke;
pub(crate) mod naming;
pub(crate) mod principal;
pub(crate) mod refusal;
pub(crate) mod registry;
pub(crate) mod registry_error;
// The adapters that cancel calls by a protocol message (RAP, MCP) use it.
#[cfg_attr(not(any(feature = "rap", feature = "mcp")), allow(dead_code))]
pub(crate) mod running;
pub(crate) mod schema;
pub(crate) mod secrets;
pub(crate) mod tool;
