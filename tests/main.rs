//! The integration tests of `oxp-lambda`: one test binary, one module per subject (a protocol,
//! a transport, a client written by others, a house rule). Each test is named for the sentence it
//! checks and runs alone by name: `cargo test --test integration -- NAME` (or
//! `scripts/test -- NAME`).
//!
//! One binary rather than a binary per file: each binary links every dependency, so fifty of
//! them cost minutes of linking and gigabytes of disk for the same tests. Tests run in parallel
//! threads of this one process, so none may set process-wide state (variables, the working
//! directory, the global log subscriber other than `common::Captured::global`); the two that must
//! are binaries of their own (`embedding.rs`, `log_forging.rs`, declared in Cargo.toml) and say
//! why.
//!
//! Tests that need a service `scripts/test` installs and starts (moto, an MCP or OXP SDK, Node)
//! are `#[ignore]`d with the reason, so plain `cargo test` stays green without them.

mod common;

mod agentcore;
mod auth;
mod auth_gateway;
mod auth_jwks;
mod auth_start;
mod authoring;
#[cfg(all(
    feature = "oauth",
    feature = "jwt",
    feature = "mcp",
    feature = "bedrock-agent"
))]
mod authorization;
mod bad_input;
mod bad_settings;
mod bedrock_agent;
mod bedrock_agent_api;
mod call_line;
mod content;
mod contract;
#[cfg(feature = "jwt")]
mod custom_protocol;
#[cfg(feature = "rap")]
mod custom_source;
mod deps;
mod docs;
#[cfg(all(feature = "rap", feature = "mcp", feature = "jwt"))]
mod fuzz_seeds;
#[cfg(all(feature = "rap", feature = "mcp"))]
mod hardening;
mod idempotency;
mod lambda_events;
#[cfg(all(
    feature = "role-http",
    feature = "role-worker",
    feature = "role-agentcore",
    feature = "role-bedrock-agent"
))]
mod lambda_roles;
mod lambda_streaming;
mod layout;
mod local_server;
#[cfg(all(feature = "embedded-state", feature = "mcp"))]
mod local_state;
mod managed_instances;
mod mcp;
mod mcp_authorization;
mod mcp_batch;
mod mcp_client2;
mod mcp_client_ts;
mod mcp_client_ts1;
mod mcp_elicitation;
mod mcp_inspector;
mod mcp_modern;
mod mcp_oauth;
mod mcp_progress;
mod mcp_rmcp_client;
mod mcp_round_trips;
mod mcp_sampling;
mod mcp_sdk;
mod mcp_strands;
mod mcp_task_room;
mod mcp_task_support;
#[cfg(feature = "dynamodb")]
mod mcp_task_work;
mod mcp_tasks;
mod mcp_tasks_lambda;
mod mcp_tools;
#[cfg(all(feature = "oauth", feature = "jwt", feature = "rap", feature = "mcp"))]
mod oauth_flow;
mod observability;
mod otel;
mod oxp_sdk;
mod oxp_spec;
mod oxp_spec_errors;
mod properties;
mod rap;
#[cfg(all(feature = "jwt", feature = "webhooks", feature = "oauth"))]
mod rap_crates;
mod rap_delivery;
mod rap_one_path;
mod rap_runtime;
mod rap_security;
mod rap_sqs;
#[cfg(all(feature = "webhooks", feature = "embedded-state"))]
mod rap_status;
mod readme;
mod refused_start;
mod reliability;
#[cfg(all(feature = "webhooks", feature = "embedded-state"))]
mod restart;
mod secrets_aws;
mod security;
mod security_callers;
mod serving;
mod stack;
#[cfg(all(feature = "jwt", feature = "webhooks"))]
mod subscriptions;
#[cfg(all(feature = "webhooks", feature = "embedded-state", feature = "dynamodb"))]
mod takeover;
#[cfg(all(feature = "jwt", feature = "webhooks"))]
mod talk_back;
#[cfg(all(feature = "webhooks", feature = "dynamodb", feature = "rap-sqs"))]
mod talk_back_lambda;
mod template;
mod trace_context;
mod unknown_tools;
#[cfg(all(feature = "jwt", feature = "webhooks"))]
mod webhooks;
