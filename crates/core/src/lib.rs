//! # oxp-lambda-core
//!
//! The protocol-neutral core of [oxp-lambda](https://crates.io/crates/oxp-lambda): what a tool
//! is ([`Tool`], [`ToolContext`], [`ToolOutput`]), the [`Registry`] of tools with their compiled
//! schemas, the refusal classes every protocol maps ([`ErrorClass`]), and the one call path
//! every protocol goes through ([`Invoker`]): resolution, requirements and secrets,
//! validation, one deadline, one concurrency pool, idempotency, cancellation, panic isolation,
//! output checks and one log line.
//!
//! It knows no protocol, HTTP framework or AWS service. Protocol adapters build a [`Call`],
//! hand it to [`Invoker::invoke`] and format the [`Outcome`] or [`Rejection`]; secret sources
//! ([`SecretSource`]) and idempotency stores ([`IdempotencyStore`]) plug in through the traits
//! defined here. Tool authors use the `oxp-lambda` crate, which re-exports what they need.

pub mod class;
pub mod content;
pub mod declare;
pub mod durable;
pub mod form;
pub mod idempotency;
pub mod invoke;
mod metric_handles;
pub mod naming;
pub mod principal;
pub mod refusal;
pub mod registry;
pub mod registry_error;
pub mod running;
pub mod sample;
pub mod schema;
pub mod secrets;
pub mod state;
pub mod talk;
mod talk_error;
pub mod tokens;
pub mod tool;
mod tool_error;

pub use content::{
    Content, DisplaySegment, IntoToolOutput, MAX_CONTENT_BYTES, MAX_CONTENT_ITEMS, ResourceBody,
    ToolOutput,
};
pub use declare::{Annotations, AuthorizationProvider, NoInput, Requirements, Tool, ToolBuilder};
pub use idempotency::{IdempotencyStore, StoreError};
pub use invoke::{Call, Disposition, Invoker, Outcome, Target, TimeLimit};
pub use principal::Principal;
pub use refusal::{ErrorClass, Rejection};
pub use registry::{RegisteredTool, Registry, RegistryBuilder, RegistryError, ResolveError};
pub use secrets::{SecretError, SecretErrorKind, SecretSource};
pub use state::{Input, SecretKey, SharedState, State};
pub use talk::{Ask, Choice, Reported, Subscribe, Subscription, TalkError};
pub use tokens::{Authorized, Challenge, TokenStore, UserTokens};
pub use tool::{Cancellation, Extensions, Secret, ToolContext, ToolError};
