//! Lambda roles a protocol can serve besides HTTP (`OXP_LAMBDA_ROLE`), as values the Lambda
//! transport runs without knowing the protocol: a [`DirectHandler`] for direct invocations (an
//! AWS service invokes the function with its own event: the AgentCore Gateway target, Bedrock
//! Agents), a [`RecordHandler`] for queued records (SQS batches: RAP's invocation jobs).
//!
//! The transport computes each invocation's deadline once and hands it over in the
//! [`CallContext`]; it reads no protocol's types.

use super::{CallContext, Records};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The role fed by the server's own queue (`OXP_LAMBDA_ROLE=worker`): RAP's invocation jobs and
/// events, MCP tasks' runs; a protocol of your own may take records there too (each record goes
/// to the first [`RecordHandler`] that takes it).
pub const WORKER: &str = "worker";

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A protocol invoked directly by an AWS service: the raw event and client context in, the
/// JSON answer out. Every event gets an answer (never a function error), so the caller always
/// learns why.
pub trait DirectHandler: Send + Sync {
    /// Answers one event; `context` carries the invocation's deadline (less the margin).
    fn handle<'a>(
        &'a self,
        event: &'a [u8],
        client_context: Option<&'a [u8]>,
        context: CallContext,
    ) -> BoxFuture<'a, Value>;

    /// The answer to an event over the size limit (`OXP_MAX_BODY_BYTES`).
    fn too_large(&self) -> Value;
}

/// What a [`RecordHandler`] made of one queued record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Done with: the queue may forget it.
    Done,
    /// Not done: the queue delivers it again later (why, for the log).
    Retry(String),
    /// Not a record of this handler's kind: the next handler of the role is asked.
    NotMine,
}

/// A protocol fed by queued records (an SQS queue whose consumer is the function). Several
/// protocols may serve the same role: each record goes to the first that does not answer
/// [`Handled::NotMine`].
pub trait RecordHandler: Send + Sync {
    /// Handles one record's body before `context.deadline`.
    fn handle<'a>(&'a self, body: &'a str, context: CallContext) -> BoxFuture<'a, Handled>;

    /// The role's schedule fired (an EventBridge scheduled event, rather than a batch): work
    /// that is due without a record naming it, before `context.deadline`. Nothing by default.
    fn tick(&self, context: CallContext) -> BoxFuture<'_, ()> {
        let _ = context;
        Box::pin(async {})
    }
}

/// One Lambda role: its name (the value of `OXP_LAMBDA_ROLE`) and its handler.
#[derive(Clone)]
pub struct LambdaRole {
    pub(crate) name: &'static str,
    pub(crate) kind: RoleKind,
}

/// How a role's events arrive.
#[derive(Clone)]
pub(crate) enum RoleKind {
    /// One event per invocation, answered with JSON.
    Direct(Arc<dyn DirectHandler>),
    /// A batch of queued records per invocation (none without feature `lambda-records`).
    Records(Records),
}

impl LambdaRole {
    /// `OXP_LAMBDA_ROLE=name`: direct invocations answered by `handler`.
    pub fn direct(name: &'static str, handler: Arc<dyn DirectHandler>) -> Self {
        Self {
            name,
            kind: RoleKind::Direct(handler),
        }
    }

    /// The role's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Puts `other`'s handlers behind this role's, when both are fed records; `Err` names the
    /// role when they cannot share it.
    pub(crate) fn join(&mut self, other: LambdaRole) -> Result<(), &'static str> {
        match (&mut self.kind, other.kind) {
            (RoleKind::Records(mine), RoleKind::Records(theirs)) => {
                mine.join(theirs);
                Ok(())
            }
            _ => Err(self.name),
        }
    }
}

impl fmt::Debug for LambdaRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            RoleKind::Direct(_) => "direct",
            RoleKind::Records(_) => "records",
        };
        f.debug_struct("LambdaRole")
            .field("name", &self.name)
            .field("kind", &kind)
            .finish()
    }
}
