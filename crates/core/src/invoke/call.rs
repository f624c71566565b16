//! What a protocol adapter hands the invoker ([`Call`], for a [`Target`] within a
//! [`TimeLimit`]) and what it gets back when the call reached its tool ([`Outcome`], with its
//! [`Disposition`]).

use super::run;
use crate::content::ToolOutput;
use crate::principal::Principal;
use crate::refusal::ErrorClass;
use crate::registry::RegisteredTool;
use crate::talk::Talk;
use crate::tool::{Cancellation, Secret, ToolError};
use http::Extensions;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Which tool a call is for.
#[derive(Debug, Clone)]
pub enum Target {
    /// A selector to resolve: `Name`, `Name@x.y.z` or `Name@x` (dotted or listing name).
    Id(String),
    /// A tool the adapter resolved itself (MCP, RAP and AgentCore serve one version of each).
    Tool(Arc<RegisteredTool>),
    /// A name the adapter serves no tool under: refused as not found
    /// ([`ResolveError::NotServed`](crate::registry::ResolveError::NotServed)), its line and
    /// metrics written as every call's, and counted against its caller's rate.
    Unserved(String),
}

/// How long a call may run, besides the transport's deadline and the tool's own limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeLimit {
    /// The invoker's limit (`OXP_TOOL_TIMEOUT_MS`).
    #[default]
    Server,
    /// This limit instead of the invoker's.
    Within(Duration),
    /// No limit of the protocol's or the server's (the tool's own and the transport's still
    /// apply).
    Unlimited,
}

impl From<Option<Duration>> for TimeLimit {
    /// A configured limit, `None` meaning "no limit".
    fn from(limit: Option<Duration>) -> Self {
        limit.map_or(Self::Unlimited, Self::Within)
    }
}

/// One call of one tool, whatever protocol it came over.
#[derive(Debug)]
pub struct Call {
    /// The protocol, for the log line (`oxp`, `rap`, ...).
    pub(crate) protocol: &'static str,
    /// The tool.
    pub(crate) target: Target,
    /// The input; it must be a JSON object.
    pub(crate) input: Value,
    /// The caller's call id: the idempotency key. `None`: a fresh id, no idempotency.
    pub call_id: Option<String>,
    /// Where `call_id` names one call, when its protocol makes ids unique in less than the
    /// caller's whole key space (RAP: the invocation's thread, its `group_id`): the same id in
    /// another scope is another call. `None`: the caller's (OXP's `call_id`).
    pub call_scope: Option<String>,
    /// The caller's trace id.
    pub trace_id: Option<String>,
    /// The caller's W3C trace context (a `traceparent` header or MCP `_meta` entry), when it
    /// is well-formed ([`traceparent`](super::traceparent)).
    pub traceparent: Option<String>,
    /// Who is calling.
    pub principal: Principal,
    /// The end user, as the client named it (bound to the caller when binding is on).
    pub user_id: Option<String>,
    /// Authorization tokens sent by the client, by provider id.
    pub authorization: Vec<(String, Secret)>,
    /// Secrets sent by the client, by id.
    pub secrets: Vec<(String, Secret)>,
    /// When the transport stops waiting (the Lambda deadline less its margin).
    pub deadline: Option<Instant>,
    /// The time limit of this call's run: the invoker's (`OXP_TOOL_TIMEOUT_MS`) unless the
    /// protocol has its own (RAP's `OXP_RAP_TOOL_TIMEOUT_MS`).
    pub timeout: TimeLimit,
    /// The protocol's cancellation signal for this call (RAP `/cancel_tool_call`, MCP
    /// `notifications/cancelled`); `None`: the call gets a signal of its own.
    pub cancellation: Option<Cancellation>,
    /// Protocol metadata for the tool ([`ToolContext::extension`](crate::ToolContext::extension)).
    pub extensions: Extensions,
    /// How the call talks back ([`crate::talk`]); `None`: its protocol carries nothing back.
    pub talk: Option<Arc<dyn Talk>>,
    /// The call was counted against its caller's rate where its protocol accepted it (a RAP
    /// invocation acknowledged before it runs, an MCP task's run: [`Invoker::count_call`](super::Invoker::count_call)):
    /// the invoker does not count it again.
    pub rate_counted: bool,
}

impl Call {
    /// A call of `target` with `input` over `protocol`, with nothing else known yet.
    pub fn new(protocol: &'static str, target: Target, input: Value) -> Self {
        Self {
            protocol,
            target,
            input,
            call_id: None,
            call_scope: None,
            trace_id: None,
            traceparent: None,
            principal: Principal::default(),
            user_id: None,
            authorization: Vec::new(),
            secrets: Vec::new(),
            deadline: None,
            timeout: TimeLimit::Server,
            cancellation: None,
            extensions: Extensions::new(),
            talk: None,
            rate_counted: false,
        }
    }
}

/// What a call that reached its tool (or a stored outcome of it) produced.
#[derive(Debug)]
pub struct Outcome {
    /// The call id: the caller's, or a generated UUID.
    pub call_id: String,
    /// The tool that ran.
    pub tool: Arc<RegisteredTool>,
    /// The output, or why the tool failed.
    pub result: Result<ToolOutput<Value>, ToolError>,
    /// Time spent in the tool (of the original run, for a replay).
    pub duration: Duration,
    /// Whether the tool ran for this call.
    pub disposition: Disposition,
}

impl Outcome {
    /// The class of a failed result (`None` on success).
    pub fn error_class(&self) -> Option<ErrorClass> {
        self.result.as_ref().err()?;
        Some(match &self.disposition {
            Disposition::Ran(logged) => logged.class.unwrap_or(ErrorClass::ToolError),
            Disposition::Replayed => ErrorClass::ToolError,
            Disposition::InProgress => ErrorClass::Busy,
        })
    }
}

/// Whether the tool ran for this call.
#[derive(Debug)]
pub enum Disposition {
    /// It ran, and ended as logged.
    Ran(run::Logged),
    /// An earlier call with the same key ran it: this is its stored outcome.
    Replayed,
    /// An earlier call with the same key is still running it; the result says to retry.
    InProgress,
}
