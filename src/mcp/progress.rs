//! Progress on the request's own stream. A client that sends `_meta.progressToken` with a
//! `tools/call` gets the tool's progress as `notifications/progress` before the result: rmcp
//! answers in JSON while the first message is the result, and turns the answer into an SSE
//! stream at the first notification (in Lambda, where the response is buffered, the stream
//! arrives whole, the progress before the result).

use oxp_lambda_core::form::{Filled, Form};
use oxp_lambda_core::sample::{Root, Sample, Sampled};
use oxp_lambda_core::talk::{
    Ask, Choice, Progress, Reported, Silent, Subscribe, Subscription, Talk, TalkError, TalkFuture,
    View,
};
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use std::sync::{Arc, Mutex};

/// A call's progress, sent on its request's stream; questions go to the channel it wraps.
pub(crate) struct Streamed {
    peer: Peer<RoleServer>,
    token: ProgressToken,
    /// Progress sent so far: the spec has each notification's value increase.
    last: Mutex<Option<f64>>,
    /// What else the call may say or ask: the request's questions (2026-07-28 rounds), or
    /// nothing.
    inner: Arc<dyn Talk>,
}

impl std::fmt::Debug for Streamed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streamed")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl Streamed {
    /// The channel of a request that asked for progress (`None` when it sent no token).
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Option<Self> {
        Some(Self {
            peer: context.peer.clone(),
            token: context.meta.get_progress_token()?,
            last: Mutex::new(None),
            inner: Arc::new(Silent("mcp")),
        })
    }

    /// The same, with the request's questions going to `inner`.
    pub(crate) fn around(mut self, inner: Option<Arc<dyn Talk>>) -> Self {
        if let Some(inner) = inner {
            self.inner = inner;
        }
        self
    }
}

impl Talk for Streamed {
    fn protocol(&self) -> &'static str {
        "mcp"
    }

    fn progress(&self, progress: Progress) -> TalkFuture<'_, Reported> {
        Box::pin(async move {
            // A value that does not increase (or is not a number) is not sent: a client may
            // take a repeated value for a stalled call.
            {
                let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
                if !progress.done.is_finite() || last.is_some_and(|l| progress.done <= l) {
                    return Reported::Failed;
                }
                *last = Some(progress.done);
            }
            let mut param = ProgressNotificationParam::new(self.token.clone(), progress.done);
            param.total = progress.total.filter(|t| t.is_finite());
            param.message = progress.message;
            match self.peer.notify_progress(param).await {
                Ok(()) => Reported::Sent,
                // The client closed the request: the call's cancellation follows.
                Err(_) => Reported::Failed,
            }
        })
    }

    fn view(&self, view: View) -> TalkFuture<'_, Reported> {
        self.inner.view(view)
    }

    fn ask(&self, ask: Ask, seq: u32) -> TalkFuture<'_, Result<Choice, TalkError>> {
        self.inner.ask(ask, seq)
    }

    fn fill(&self, form: Form, seq: u32) -> TalkFuture<'_, Result<Filled, TalkError>> {
        self.inner.fill(form, seq)
    }

    fn sample(&self, sample: Sample, seq: u32) -> TalkFuture<'_, Result<Sampled, TalkError>> {
        self.inner.sample(sample, seq)
    }

    fn roots(&self, seq: u32) -> TalkFuture<'_, Result<Vec<Root>, TalkError>> {
        self.inner.roots(seq)
    }

    fn detach(&self) -> TalkFuture<'_, Result<(), TalkError>> {
        self.inner.detach()
    }

    fn subscribe(
        &self,
        subscribe: Subscribe,
        seq: u32,
    ) -> TalkFuture<'_, Result<Subscription, TalkError>> {
        self.inner.subscribe(subscribe, seq)
    }
}
