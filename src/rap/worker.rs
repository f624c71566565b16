//! Running accepted invocations (the runner's work: `queue.rs`): the tool runs through the
//! invoker to an answer, which the runner keeps in the work record and then has delivered here
//! to the callback, one attempt at a time; an answer given up goes to the dead-letter store.

use crate::rap::RapThread;
use crate::rap::audit::audit;
use crate::rap::dead_letter::{DeadLetter, DeadLetters};
use crate::rap::deliver::{Attempt, Deliverer};
pub(crate) use crate::rap::job::Kept;
use crate::rap::job::{self, Job, rfc3339, unix_ms, unknown_operation};
use crate::rap::once::{self, Delivered};
use crate::rap::result::{error_text, interrupted_result, rejected, retryable, tool_error};
use crate::rap::talk::{RapTalk, Talkback};
use crate::rap::toolset::ServedToolset;
use crate::rap::wire::{ErrorBody, ToolResult};
use crate::work::{Outcome, Run};
use axum::body::Bytes;
use oxp_lambda_core::content::ToolOutput;
use oxp_lambda_core::invoke::{Call, Disposition, Invoker, Rejection, Target};
use oxp_lambda_core::refusal::ErrorClass;
use oxp_lambda_core::running::Running;
use oxp_lambda_core::tool::Cancellation;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The error of a result its caller's room has no space for.
const NO_ROOM: &str = "The result is larger than the room this caller's undelivered results leave; send the invocation again once they are delivered";

/// Runs jobs to their answers and delivers them.
#[derive(Debug)]
pub(crate) struct Worker {
    pub(super) invoker: Arc<Invoker>,
    /// The served toolset.
    pub(super) toolset: Arc<ServedToolset>,
    pub(super) deliverer: Deliverer,
    pub(super) dead_letters: Arc<DeadLetters>,
    /// The longest one run may take (`OXP_RAP_TOOL_TIMEOUT_MS`).
    pub(super) tool_timeout: Option<Duration>,
    /// The invocations this worker is running, for `/cancel_tool_call`.
    pub(super) running: Arc<Running>,
    /// Users' authorizations the server runs (feature `oauth`, with a provider configured).
    pub(crate) authorizing: Option<crate::rap::authorize::Authorizing>,
    /// How calls talk back: questions, views, subscriptions.
    pub(crate) talk: Arc<Talkback>,
}

/// A job's answer as the work record keeps it: the `tool_result` (its bytes, delivered as they
/// are by every attempt) and what it says, for the audit line.
#[derive(Debug, Serialize, Deserialize)]
struct Answer {
    /// `success`, or the error kind of the result.
    outcome: String,
    /// The `tool_result`, as sent.
    message: String,
    /// The subscriptions its call opened, which its delivery starts (or its giving up ends);
    /// `None` when unknown (an interrupted run's), then listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    opened: Option<Vec<String>>,
}

impl Worker {
    /// Runs `job` to its answer, to keep and deliver: `Err` when it is not answered now (a copy
    /// runs it, the user has not answered yet) or was answered and delivered before.
    pub(crate) async fn answer(&self, job: &Job, run: &Run) -> Result<Vec<u8>, Kept> {
        // The whole executor's time: the answer is kept before it is delivered, and a
        // delivery the deadline cuts short is tried again later.
        let ran = self.run_authorized(job, run.deadline, run).await?;
        let (outcome, mut message) = match ran {
            Ok(output) => (
                "success".to_owned(),
                crate::rap::result::success(&job.reply_to, output),
            ),
            Err(e) => (
                e.kind.clone(),
                ToolResult::new(&job.reply_to, error_text(e)),
            ),
        };
        // A call that opened subscriptions says so, and they start once its answer arrived.
        let opened = self.talk.opened(&RapTalk::owner(job)).await;
        if outcome == "success" && !opened.is_empty() {
            message.subscription = Some(true);
        }
        self.claimed(job, outcome, message, Some(opened)).await
    }

    /// `job`'s answer `message` (what it says: `outcome`), to keep once its delivery mark is
    /// claimed: `Err` when another copy delivers it, or one did.
    async fn claimed(
        &self,
        job: &Job,
        outcome: String,
        message: ToolResult,
        opened: Option<Vec<String>>,
    ) -> Result<Vec<u8>, Kept> {
        let body = serde_json::to_string(&message).expect("results serialize");
        let longest = self.deliverer.longest();
        match once::claim(&self.invoker, job, body.as_bytes(), longest).await {
            Delivered::Elsewhere => Err(Kept::Duplicate),
            Delivered::Already => {
                audit(job, &outcome, "already_delivered", None, None);
                Err(Kept::Delivered)
            }
            Delivered::Claimed | Delivered::Untracked => Ok(answer(outcome, body, opened)),
        }
    }

    /// The answer to keep instead of `kept`, `job`'s, for which its caller's room
    /// (`OXP_WORK_MAX_BYTES_PER_CALLER`) has no space: an error saying so, retryable (once the
    /// caller's earlier results are delivered, the invocation sent again replays its result).
    /// The delivery mark goes from the one answer to the other.
    pub(crate) async fn unkept(&self, job: &Job, kept: &[u8]) -> Result<Vec<u8>, Kept> {
        self.let_go(job, kept).await;
        let message = retryable(job, "busy", NO_ROOM);
        self.claimed(job, "busy".into(), message, None).await
    }

    /// Lets go of the delivery mark of `kept`, `job`'s answer, not kept: the next run must not
    /// find it held by a copy that never delivers (and wait out `OXP_RAP_DELIVERY_TIMEOUT_SECS`).
    pub(crate) async fn let_go(&self, job: &Job, kept: &[u8]) {
        if let Ok(answer) = serde_json::from_slice::<Answer>(kept) {
            let mark = once::mark(job, answer.message.as_bytes());
            once::settle(&self.invoker, &mark, false).await;
        }
    }

    /// The answer of `job` whose run ended unfinished (its process died) and whose tool may not
    /// run twice: retryable.
    pub(crate) fn interrupted_answer(&self, job: &Job) -> Vec<u8> {
        serde_json::to_vec(&interrupted(job)).expect("answers serialize")
    }

    /// One attempt to deliver `kept`, `job`'s answer: done once taken (its subscriptions
    /// start, its delivery is marked), else why (to retry, or to give up).
    pub(crate) async fn deliver(
        &self,
        job: &Job,
        kept: &[u8],
        deadline: Option<Instant>,
    ) -> Outcome {
        let Ok(answer) = serde_json::from_slice::<Answer>(kept) else {
            return Outcome::GiveUp("the kept answer does not read".into());
        };
        let body = Bytes::from(answer.message.clone());
        let attempt = self
            .deliverer
            .attempt(
                &job.reply_to.callback_url,
                body,
                job.traceparent.as_deref(),
                deadline,
            )
            .await;
        match attempt {
            Attempt::Delivered => {
                self.settled(job, &answer.message, true, answer.opened.clone())
                    .await;
                audit(job, &answer.outcome, "delivered", None, None);
                Outcome::Done
            }
            Attempt::Again {
                reason,
                after: Some(after),
            } => Outcome::RetryAfter(reason, after),
            Attempt::Again { reason, .. } => Outcome::Retry(reason),
            Attempt::Refused(reason) => Outcome::GiveUp(reason),
        }
    }

    /// Gives `job`'s answer up (`reason`, after `attempts` to deliver it): dead-lettered, the
    /// kept one (`kept`) or, when none was kept, an "interrupted" one.
    pub(crate) async fn dead_letter(
        &self,
        job: &Job,
        reason: &str,
        kept: Option<&[u8]>,
        attempts: u32,
    ) {
        let answer = kept
            .and_then(|kept| serde_json::from_slice::<Answer>(kept).ok())
            .unwrap_or_else(|| interrupted(job));
        let letter = DeadLetter {
            reason: reason.to_owned(),
            attempts,
            callback_url: job.reply_to.callback_url.clone(),
            operation: job.operation.clone(),
            received_at: rfc3339(job.received_at_ms),
            failed_at: rfc3339(unix_ms(SystemTime::now())),
            message: serde_json::from_str(&answer.message).unwrap_or_default(),
        };
        let caller = crate::state::caller_key(job.principal.subject.as_deref());
        let recorded = self.dead_letters.record(&letter, &caller).await;
        self.settled(job, &answer.message, false, answer.opened.clone())
            .await;
        let delivery = if recorded.is_ok() {
            "dead_lettered"
        } else {
            "not_recorded"
        };
        audit(
            job,
            &answer.outcome,
            delivery,
            Some(reason),
            recorded.err().as_deref(),
        );
    }

    /// After `job`'s answer `message` was `delivered` (or given up): its delivery marked (or
    /// freed, so a repeat tries again), and the subscriptions the call opened started when the
    /// answer confirmed them (or dropped).
    async fn settled(
        &self,
        job: &Job,
        message: &str,
        delivered: bool,
        opened: Option<Vec<String>>,
    ) {
        once::settle(
            &self.invoker,
            &once::mark(job, message.as_bytes()),
            delivered,
        )
        .await;
        let opened = match opened {
            Some(opened) => opened,
            None => self.talk.opened(&RapTalk::owner(job)).await,
        };
        if !opened.is_empty() {
            let confirmed = serde_json::from_str::<serde_json::Value>(message)
                .is_ok_and(|m| m["subscription"] == true);
            self.talk.settle(opened, confirmed && delivered).await;
        }
    }

    /// Whether `job`'s run, interrupted (its process died), may simply run again: its tool is
    /// read-only or idempotent, or nothing of it runs (an invocation refused at
    /// acknowledgement, an operation gone).
    pub(crate) fn may_run_again(&self, job: &Job) -> bool {
        if job.rejected.is_some() {
            return true;
        }
        job.operation
            .as_deref()
            .and_then(|operation| self.toolset.get(operation))
            .is_none_or(|tool| tool.may_run_again())
    }

    /// [`Worker::run`], asking the user to authorize and waiting for them when the tool needs it
    /// (until the run's deadline; see `rap::authorize`).
    async fn run_authorized(
        &self,
        job: &Job,
        deadline: Option<Instant>,
        run: &Run,
    ) -> Result<Result<ToolOutput<Value>, ErrorBody>, Kept> {
        if let Some(authorizing) = &self.authorizing {
            let (deliverer, toolset) = (&self.deliverer, &self.toolset);
            return authorizing
                .run(deliverer, toolset, job, run.deadline, || {
                    self.run(job, deadline, &run.cancel)
                })
                .await;
        }
        self.run(job, deadline, &run.cancel).await
    }

    /// The call of `job`'s `target`, as the invoker runs it.
    fn call_of(&self, job: &Job, target: Target, deadline: Option<Instant>) -> Call {
        let mut call = Call::new("rap", target, job.arguments.clone());
        // Acknowledged, so counted where it was accepted (`OXP_RAP_RATE_LIMIT`): refused now,
        // an invocation the caller was told is accepted would end by the rate of its caller.
        call.rate_counted = true;
        // The invocation id is the idempotency key: a redelivered job never runs twice. Ids
        // are the thread's (the runtime makes them unique in it, often `call_1`, `call_2`...):
        // the same id in another thread is another invocation.
        call.call_id = Some(job.reply_to.id.clone());
        call.call_scope = Some(job.reply_to.group_id.clone());
        call.user_id = job.user_id.clone();
        call.traceparent = job.traceparent.clone();
        call.principal = job.principal.clone();
        call.deadline = deadline;
        call.timeout = self.tool_timeout.into();
        call
    }

    /// The tool's output or the error to report; `Err` when the job is not answered now.
    /// `stopping`: the process asks the tool to stop (it is shutting down).
    async fn run(
        &self,
        job: &Job,
        deadline: Option<Instant>,
        stopping: &Cancellation,
    ) -> Result<Result<ToolOutput<Value>, ErrorBody>, Kept> {
        let operation = job.operation.as_deref();
        let unknown = matches!(job.rejected, Some(job::Rejection::UnknownOperation));
        if let Some(rejection) = job.rejected.as_ref().filter(|_| !unknown) {
            return Ok(Err(rejection.error(operation, self.toolset.operations())));
        }
        let operation = operation.unwrap_or_default();
        // The toolset may have changed between acknowledgement and now (a new deployment).
        let Some(tool) = self.toolset.get(operation).filter(|_| !unknown) else {
            // Refused by the invoker as every protocol's call of an unknown tool is: its line.
            let call = self.call_of(job, Target::Unserved(operation.to_owned()), deadline);
            let _refused = self.invoker.invoke(call).await;
            return Ok(Err(unknown_operation(operation, self.toolset.operations())));
        };
        let mut call = self.call_of(job, Target::Tool(tool.clone()), deadline);
        call.extensions.insert(RapThread {
            group_id: job.reply_to.group_id.clone(),
            thread_ancestors: job.thread_ancestors.clone(),
        });
        // `/cancel_tool_call` reaches the call through this registration while it runs.
        let (cancellation, _registered) = self.running.start(
            job.principal.subject.as_deref(),
            &job.reply_to.group_id,
            &job.reply_to.id,
        );
        let talk = Arc::new(RapTalk::new(
            self.talk.clone(),
            self.deliverer.clone(),
            Arc::new(job.clone()),
            deadline,
            cancellation.clone(),
        ));
        call.talk = Some(talk.clone());
        // A cancellation sent to another process (the HTTP function) reaches this one too.
        let _watch = self.talk.watch_cancel(job, cancellation.clone());
        call.cancellation = Some(cancellation.clone());
        let invoke = self.invoker.invoke(call);
        tokio::pin!(invoke);
        // At shutdown the tool is asked to stop; what it returns is the answer.
        let answer = tokio::select! {
            answer = &mut invoke => answer,
            () = stopping.cancelled() => {
                cancellation.cancel();
                invoke.await
            }
        };
        if talk.parked() {
            return Err(Kept::AwaitingAnswer);
        }
        match answer {
            Ok(outcome) if matches!(outcome.disposition, Disposition::InProgress) => {
                Err(Kept::Duplicate)
            }
            Ok(outcome) => {
                let class = outcome.error_class().unwrap_or(ErrorClass::ToolError);
                Ok(outcome.result.map_err(|e| tool_error(e, class)))
            }
            Err(Rejection::Missing(oxp_lambda_core::refusal::Missing::Authorization {
                challenge: Some(challenge),
                ..
            })) if self.authorizing.is_some() => Err(Kept::Authorize(challenge)),
            Err(rejection) => Ok(Err(rejected(rejection))),
        }
    }
}

/// A kept answer: what it says, and the message as sent.
fn answer(outcome: String, message: String, opened: Option<Vec<String>>) -> Vec<u8> {
    let answer = Answer {
        outcome,
        message,
        opened,
    };
    serde_json::to_vec(&answer).expect("answers serialize")
}

/// The answer of `job`, whose run ended unfinished: retryable.
fn interrupted(job: &Job) -> Answer {
    Answer {
        outcome: "interrupted".into(),
        message: serde_json::to_string(&interrupted_result(job)).expect("results serialize"),
        opened: None,
    }
}
