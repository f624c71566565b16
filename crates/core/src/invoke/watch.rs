//! What a call leaves behind if it never finishes: the invoker's future can be dropped at any
//! await (an HTTP caller that goes away drops the request's future), and then nobody would log
//! the call, tell the tool's helpers to stop, or free its idempotency claim. [`Watch`] does, in
//! its `Drop`; a call that ends normally disarms it with [`Watch::finish`].

use super::metrics;
use super::{Call, Outcome, Rejection, Target, run};
use crate::idempotency::IdempotencyStore;
use crate::tool::Cancellation;
use std::sync::Arc;

/// An idempotency claim this call holds, to release if the call is abandoned.
pub(super) struct Held {
    pub(super) store: Arc<dyn IdempotencyStore>,
    pub(super) key: String,
    pub(super) print: String,
}

/// The one log line of a call, and its clean-up if it is abandoned.
pub(super) struct Watch {
    protocol: &'static str,
    /// The authenticated caller (`None` without authentication), who an operator asks about.
    caller: Option<String>,
    trace_id: Option<String>,
    traceparent: Option<String>,
    requested: Requested,
    call_id: Option<String>,
    /// The tool the call resolved to, once it did (the metrics' `tool` dimension: a name the
    /// caller made up never becomes one).
    resolved: Option<Arc<crate::registry::RegisteredTool>>,
    /// The call's signal, once the call has one.
    pub(super) cancellation: Option<Cancellation>,
    /// The claim, between claiming and storing the outcome.
    pub(super) claim: Option<Held>,
    done: bool,
}

/// The tool as the call named it, for the log line.
enum Requested {
    Id(String),
    Tool(Arc<crate::registry::RegisteredTool>),
}

impl Watch {
    /// Watches `call` (the log line's fields are copied before the call is consumed).
    pub(super) fn new(call: &Call) -> Self {
        Self {
            protocol: call.protocol,
            caller: call.principal.subject.clone(),
            trace_id: call.trace_id.clone(),
            traceparent: call.traceparent.clone(),
            requested: match &call.target {
                Target::Id(id) | Target::Unserved(id) => Requested::Id(id.clone()),
                Target::Tool(tool) => Requested::Tool(tool.clone()),
            },
            call_id: call.call_id.clone(),
            resolved: match &call.target {
                Target::Tool(tool) => Some(tool.clone()),
                Target::Id(_) | Target::Unserved(_) => None,
            },
            cancellation: None,
            claim: None,
            done: false,
        }
    }

    /// The call resolved to `tool`.
    pub(super) fn resolved(&mut self, tool: &Arc<crate::registry::RegisteredTool>) {
        if self.resolved.is_none() {
            self.resolved = Some(tool.clone());
        }
    }

    /// The call ended with `result`: writes its log line and records its metrics.
    pub(super) fn finish(mut self, result: &Result<Outcome, Rejection>) {
        self.done = true;
        match result {
            Ok(outcome) => {
                run::log_outcome(
                    self.protocol,
                    self.caller.as_deref(),
                    self.trace_id.as_deref(),
                    self.traceparent.as_deref(),
                    outcome,
                );
                metrics::outcome(self.protocol, outcome);
            }
            Err(rejection) => {
                self.refused(rejection.class(), &rejection.developer_detail());
            }
        }
    }

    /// The line and metrics of a call that ended without its tool's outcome.
    fn refused(&self, class: crate::refusal::ErrorClass, reason: &str) {
        metrics::refused(self.protocol, self.resolved.as_deref(), class);
        // Strings, not `%` Display: a formatter escapes a string's control characters, so a
        // caller's newline cannot start a forged log line.
        tracing::info!(
            target: "oxp::call",
            protocol = self.protocol,
            caller = self.caller.as_deref(),
            call_id = self.call_id.as_deref(),
            trace_id = self.trace_id.as_deref(),
            traceparent = self.traceparent.as_deref(),
            tool_id = self.tool_id(),
            outcome = class.as_str(),
            reason,
        );
    }

    fn tool_id(&self) -> &str {
        match &self.requested {
            Requested::Id(id) => id,
            Requested::Tool(tool) => &tool.id,
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // The tool's future is gone with the call's; clones of the signal it handed to tasks
        // of its own learn it here.
        if let Some(cancellation) = &self.cancellation {
            cancellation.cancel();
        }
        // Freed at once, so a retry with the same call id runs instead of waiting out the hold.
        if let Some(held) = self.claim.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                if let Err(e) = held.store.release(&held.key, &held.print).await {
                    tracing::warn!(target: "oxp::call", error = %e, "claim of an abandoned call not released");
                }
            });
        }
        self.refused(
            crate::refusal::ErrorClass::Cancelled,
            "the caller went away before the call ended",
        );
    }
}
