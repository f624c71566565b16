//! # oxp-lambda
//!
//! Serve AI-agent tools over OXP (the OXP 1.0 tool-calling protocol), the async tool invocation
//! protocol (RAP), MCP and Bedrock's Lambda targets, from AWS Lambda (API Gateway REST and HTTP
//! APIs, Function URLs, ALB, SQS, direct invocations) or as a plain local HTTP server.
//!
//! A tool is an async function: [`#[tool]`](tool) takes its description from the doc comment
//! and its input schema from its parameters, and it runs the same over every protocol. [`run()`]
//! serves a [`Registry`] of them as the `oxp-lambda` binary does; [`App::builder`] embeds the
//! same app in a program of your own; [`Tool::builder`] declares a tool programmatically.
//! `examples/starter/` in the repository is a crate to copy.
//!
//! ```no_run
//! use oxp_lambda::{Registry, ToolError, tool};
//!
//! /// Greets someone.
//! #[tool(name = "Hello.Greet", version = "1.0.0", read_only)]
//! async fn greet(
//!     /// Who to greet.
//!     name: String,
//! ) -> Result<String, ToolError> {
//!     Ok(format!("Hello, {name}!"))
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     let registry = Registry::builder().tool(greet_tool()).build().expect("valid tools");
//!     // In Lambda this serves the Runtime API; elsewhere http://127.0.0.1:8080.
//!     oxp_lambda::run(registry).await
//! }
//! ```
//!
//! A tool that panics fails its call and the server keeps serving when panics unwind (the
//! default; keep `panic = "unwind"` in a release profile, which cargo-lambda would otherwise set
//! to `abort`: the server warns at start when built that way).
//!
//! ## Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `http-server` | the HTTP side: every protocol's routes and the local server (`App::serve`); without it a build answers Lambda's direct and SQS invocations only, and its release binary leaves the HTTP code out |
//! | `lambda` | the Lambda transport: HTTP events (`lambda_http`), `OXP_AUTH=apigateway` and the roles of `lambda-runtime` and `lambda-records` |
//! | `lambda-runtime` | the Lambda Runtime API for the roles that answer no HTTP event, without `lambda_http`: direct invocations (`LambdaRole::direct`) |
//! | `lambda-records` | SQS batches in Lambda: the worker role, `LambdaRole::records`, `App::handle_sqs_batch` |
//! | `aws-secrets` | secrets from AWS Secrets Manager |
//! | `dynamodb` | the DynamoDB idempotency store |
//! | `jwt` | `OXP_AUTH=jwt` (HS256, RS256/ES256 with JWKS) |
//! | `rap` | the async tool invocation adapter: its invocations the runner's work, over the state store |
//! | `rap-sqs` | its wake-up queue and dead-letter queue in Lambda, and the worker role |
//! | `sqs` | SQS queues in Lambda (RAP's, MCP tasks' `OXP_MCP_TASK_QUEUE_URL`), fed to the worker role; not useful alone |
//! | `mcp` | MCP (Streamable HTTP, stateless) at `/mcp`, with `rmcp` |
//! | `agentcore` | the Bedrock AgentCore Gateway Lambda target role, `oxp-lambda schema --agentcore` |
//! | `bedrock-agent` | the Bedrock Agents action group role, `oxp-lambda schema --bedrock-agent` and `--bedrock-agent-api` |
//! | `metrics` | calls, errors, duration and cold starts in CloudWatch Embedded Metric Format (`OXP_METRICS`) |
//! | `oauth` | users' OAuth flows run by the server (`OXP_OAUTH_PROVIDERS`): a tool's token the caller did not send comes from the user's sealed vault |
//! | `otel` | a span per call over OTLP/HTTP (`OXP_OTEL_ENDPOINT`), flushed before each Lambda invocation answers |
//! | `embedded-state` | durable state in an embedded database file (redb): talk-back calls, tasks and acknowledged invocations survive a restart |
//! | `subscriptions` | subscriptions that outlive their call and `Assembly::events()`, where an event source hands them events (RAP carries them) |
//! | `webhooks` | `POST /webhooks/{source}`: signed event sources feeding subscriptions |
//! | `mimalloc` | mimalloc as the binary's allocator |
//!
//! All but `otel` are on by default. The smallest useful set, OXP over Lambda with local secrets, is
//! `default-features = false, features = ["lambda"]` (which brings `http-server`); a local server
//! without Lambda is `features = ["http-server"]`.

// The plumbing the protocols share (the work runner, the state helpers, the guards) goes partly
// unused in a build that leaves those protocols out; the full build, which clippy checks with
// `-D warnings`, keeps every item honest.
#![cfg_attr(
    not(all(
        feature = "rap",
        feature = "mcp",
        feature = "webhooks",
        feature = "embedded-state"
    )),
    allow(dead_code, unused_imports)
)]

// The crate by its own name, for test support shared with the integration tests (`moto.rs`).
#[cfg(test)]
extern crate self as oxp_lambda;

#[cfg(feature = "agentcore")]
mod agentcore;
mod app;
mod args;
mod auth;
#[cfg(feature = "aws")]
mod aws;
#[cfg(not(feature = "aws"))]
#[path = "aws_off.rs"]
mod aws;
#[cfg(feature = "bedrock-agent")]
mod bedrock;
pub mod config;
mod events;
#[cfg(feature = "http-client")]
mod http_client;
#[cfg(not(feature = "http-client"))]
#[path = "http_client_off.rs"]
mod http_client;
mod idempotency;
mod logging;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(all(test, feature = "aws"))]
mod moto;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(not(feature = "oauth"))]
#[path = "oauth_off.rs"]
mod oauth;
mod observe;
mod oxp;
#[cfg(feature = "rap")]
mod rap;
mod run;
mod secrets;
mod server;
mod settings;
#[cfg(feature = "sqs")]
mod sqs;
#[cfg(not(feature = "sqs"))]
#[path = "sqs_off.rs"]
mod sqs;
mod state;
#[cfg(feature = "subscriptions")]
mod subscriptions;
#[cfg(not(feature = "subscriptions"))]
#[path = "subscriptions_off.rs"]
mod subscriptions;
mod transport;
#[cfg(feature = "webhooks")]
mod webhooks;
mod work;

#[cfg(all(
    test,
    feature = "mcp",
    feature = "rap",
    feature = "subscriptions",
    feature = "webhooks",
    feature = "agentcore"
))]
#[path = "config_defaults_tests.rs"]
mod config_defaults_tests;

pub use app::protocols;
pub use app::{App, AppBuilder, StartError};
#[cfg(feature = "aws")]
pub use aws::http_client as aws_http_client;
pub use config::Config;
#[doc(hidden)]
pub use logging::local_text_log;
pub use oxp_lambda_core::content::{
    Content, DisplaySegment, IntoToolOutput, MAX_CONTENT_BYTES, MAX_CONTENT_ITEMS, ResourceBody,
    ToolOutput,
};
pub use oxp_lambda_core::declare::{
    Annotations, AuthorizationProvider, NoInput, Requirements, TaskSupport, Tool, ToolBuilder,
};
pub use oxp_lambda_core::form::{Filled, Form};
pub use oxp_lambda_core::invoke::{Call, Invoker, Outcome};
pub use oxp_lambda_core::refusal::ErrorClass;
pub use oxp_lambda_core::registry::{
    RegisteredTool, Registry, RegistryBuilder, RegistryError, ResolveError,
};
pub use oxp_lambda_core::sample::{Message, ModelPreferences, Role, Root, Sample, Sampled};
pub use oxp_lambda_core::state::{Input, SecretKey, SharedState, State};
pub use oxp_lambda_core::talk;
pub use oxp_lambda_core::talk::{Ask, Choice, Reported, Subscribe, Subscription, TalkError};
pub use oxp_lambda_core::tool::{Cancellation, Extensions, Secret, ToolContext, ToolError};
pub use oxp_lambda_macros::tool;
#[cfg(feature = "rap")]
pub use rap::RapThread;
pub use run::{run, run_app, run_with};

/// Writing a protocol (or an event source) of your own: a [`Protocol`](protocol::Protocol)
/// value owns its settings, routes, Lambda role and schema export; it builds over an
/// [`Assembly`](protocol::Assembly) (the one invoker, authentication, the configuration) and
/// reads each request's caller, deadline and trace with the
/// [`CallContext`](protocol::CallContext) extractor, as the built-in protocols do. Add it
/// with [`AppBuilder::protocol`]; docs/architecture.md walks through one.
pub mod protocol {
    pub use crate::app::protocol::{Assembly, BoxFuture, Contribution, Drain, Protocol};
    pub use crate::events::{
        Events, MAX_EVENT_BYTES, MAX_EVENT_ID_CHARS, PublishError, Published, REPLAY_WINDOW,
    };
    pub use crate::server::{
        CallContext, Deadline, DirectHandler, Handled, LambdaRole, RecordHandler, Refused, WORKER,
    };
}

/// The call path, for in-process calls ([`Invoker::local`], tool tests) and for protocol
/// adapters written outside this crate: an adapter builds a [`Call`], hands it to
/// [`Invoker::invoke`], and formats the [`Outcome`] or the [`Rejection`](invoke::Rejection).
pub mod invoke {
    pub use oxp_lambda_core::invoke::{
        CANCEL_GRACE, Call, Disposition, Invoker, Outcome, Target, TimeLimit,
    };
    pub use oxp_lambda_core::principal::{BindError, Principal};
    pub use oxp_lambda_core::refusal::{Missing, RETRY_AFTER, Rejection};
    pub use oxp_lambda_core::running::Running;
}

/// The extension points for storage: where server-held secrets come from ([`SecretSource`](stores::SecretSource):
/// AWS Secrets Manager and local variables here; [`AppBuilder::secret_source`] takes another)
/// and where idempotent outcomes are kept ([`IdempotencyStore`](stores::IdempotencyStore):
/// memory and DynamoDB here; [`AppBuilder::idempotency_store`] takes another).
pub mod stores {
    pub use oxp_lambda_core::durable::{Item, StateError, StateFuture, StateStore};
    pub use oxp_lambda_core::idempotency::memory::MemoryStore;
    pub use oxp_lambda_core::idempotency::{
        Claim, IdempotencyStore, StoreError, StoreFuture, StoredError, StoredOutcome,
    };
    pub use oxp_lambda_core::secrets::{SecretError, SecretErrorKind, SecretFuture, SecretSource};
}

/// What the `#[tool]` attribute's generated code names; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    /// Installs the JWT verifier's provider (src/auth/jwt_crypto.rs) as jsonwebtoken's
    /// default: the tests sign their tokens with it before any server installs it.
    #[cfg(feature = "jwt")]
    pub fn install_jwt_crypto() {
        crate::auth::jwt_crypto::install();
    }
}

/// The README's Rust examples, compiled as doc tests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The Rust examples of the reference pages, compiled as doc tests too.
#[cfg(doctest)]
#[doc = include_str!("../docs/architecture.md")]
#[doc = include_str!("../docs/rap.md")]
pub struct DocsDoctests;
