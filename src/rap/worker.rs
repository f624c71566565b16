//! Running accepted invocations: the tool runs through the invoker, the result is delivered to
//! the callback, and an undeliverable result goes to the dead-letter store. The same code runs
//! behind the in-process queue and as the Lambda SQS worker.

use crate::rap::RapThread;
use crate::rap::dead_letter::{DeadLetter, DeadLetters};
use crate::rap::deliver::{Deliverer, Delivery};
pub(crate) use crate::rap::job::Kept;
use crate::rap::job::{Job, error, rfc3339, unix_ms, unknown_operation};
use crate::rap::once::{self, Delivered};
use crate::rap::talk::{RapTalk, Talkback};
use crate::rap::toolset::ServedToolset;
use crate::rap::wire::{ErrorBody, ErrorText, ToolResult};
use axum::body::Bytes;
use oxp_lambda_core::content::ToolOutput;
use oxp_lambda_core::invoke::{Call, Disposition, Invoker, Rejection, Target};
use oxp_lambda_core::refusal::ErrorClass;
use oxp_lambda_core::running::Running;
use oxp_lambda_core::schema::ParameterErrors;
use oxp_lambda_core::tool::ToolError;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Runs jobs and delivers their results.
#[derive(Debug)]
pub(crate) struct Worker {
    invoker: Arc<Invoker>,
    toolset: Arc<ServedToolset>,
    deliverer: Deliverer,
    dead_letters: Arc<DeadLetters>,
    tool_timeout: Option<Duration>,
    running: Arc<Running>,
    /// Users' authorizations the server runs (feature `oauth`, with a provider configured).
    pub(crate) authorizing: Option<crate::rap::authorize::Authorizing>,
    /// How calls talk back: questions, views, subscriptions.
    pub(crate) talk: Arc<Talkback>,
}

/// What became of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Report {
    /// `success`, or the error kind of the result.
    pub(crate) outcome: String,
    /// Whether the result was delivered (else it was dead-lettered).
    pub(crate) delivered: bool,
    /// Delivery attempts.
    pub(crate) attempts: u32,
}

impl Worker {
    /// A worker running tools of `toolset` through `invoker`, each within `tool_timeout`.
    pub(crate) fn new(
        invoker: Arc<Invoker>,
        toolset: Arc<ServedToolset>,
        deliverer: Deliverer,
        dead_letters: Arc<DeadLetters>,
        tool_timeout: Option<Duration>,
        talk: Arc<Talkback>,
    ) -> Self {
        Self {
            invoker,
            toolset,
            deliverer,
            dead_letters,
            tool_timeout,
            running: Arc::default(),
            authorizing: None,
            talk,
        }
    }

    /// How long one delivery attempt may take.
    pub(crate) fn deliverer_timeout(&self) -> Duration {
        self.deliverer.attempt_timeout()
    }

    /// The invocations this worker is running, for `/cancel_tool_call`.
    pub(crate) fn running(&self) -> &Arc<Running> {
        &self.running
    }

    /// The served toolset.
    pub(crate) fn toolset(&self) -> &Arc<ServedToolset> {
        &self.toolset
    }

    /// Runs `job` and delivers its result before `deadline`. `Err` when the job must stay on
    /// its queue (SQS redelivers it).
    pub(crate) async fn process(
        &self,
        job: Job,
        deadline: Option<Instant>,
    ) -> Result<Report, Kept> {
        // Leave time to deliver after the tool: one attempt's worth.
        let tool_deadline = deadline.map(|d| {
            d.checked_sub(self.deliverer.attempt_timeout())
                .unwrap_or(d)
                .max(Instant::now())
        });
        let (outcome, mut message) =
            match self.run_authorized(&job, tool_deadline, deadline).await? {
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
        let owner = RapTalk::owner(&job);
        let opened = self.talk.opened(&owner).await;
        if !opened.is_empty() && outcome == "success" {
            message.subscription = Some(true);
        }
        let body = Bytes::from(serde_json::to_vec(&message).expect("results serialize"));
        let marker = match once::claim(&self.invoker, &job, &body, self.deliverer.longest()).await {
            Delivered::Elsewhere => return Err(Kept::Duplicate),
            Delivered::Already => {
                tracing::info!(
                    target: "oxp::rap::audit",
                    operation = job.operation.as_deref(),
                    id = job.reply_to.id.as_str(),
                    group_id = job.reply_to.group_id.as_str(),
                    outcome = %outcome,
                    delivery = "already_delivered",
                );
                return Ok(Report {
                    outcome,
                    delivered: true,
                    attempts: 0,
                });
            }
            Delivered::Claimed(mark) => Some(mark),
            Delivered::Untracked => None,
        };
        let confirmed = message.subscription.is_some();
        let report = self.deliver(job, message, body, outcome, deadline).await;
        if !opened.is_empty() {
            let delivered = matches!(&report, Ok(r) if r.delivered);
            self.talk.settle(opened, confirmed && delivered).await;
        }
        if let Some(mark) = marker {
            once::settle(
                &self.invoker,
                &mark,
                matches!(&report, Ok(r) if r.delivered),
            )
            .await;
        }
        report.map_err(Kept::NotRecorded)
    }

    /// Delivers `message` for `job`, dead-letters it when that fails, and writes the audit line.
    async fn deliver(
        &self,
        job: Job,
        message: ToolResult,
        body: Bytes,
        outcome: String,
        deadline: Option<Instant>,
    ) -> Result<Report, String> {
        let delivery = self
            .deliverer
            .deliver(
                &job.reply_to.callback_url,
                body,
                job.traceparent.as_deref(),
                deadline,
            )
            .await;
        let (attempts, reason) = match delivery {
            Delivery::Delivered { attempts } => (attempts, None),
            Delivery::Failed { attempts, reason } => (attempts, Some(reason)),
        };
        let completed_at_ms = unix_ms(SystemTime::now());
        let mut recorded = Ok(());
        if let Some(reason) = &reason {
            let letter = DeadLetter {
                reason: reason.clone(),
                attempts,
                callback_url: job.reply_to.callback_url.clone(),
                operation: job.operation.clone(),
                received_at: rfc3339(job.received_at_ms),
                failed_at: rfc3339(completed_at_ms),
                message: serde_json::to_value(&message).expect("results serialize"),
            };
            recorded = self.dead_letters.record(&letter).await;
        }
        let delivery = match (&reason, &recorded) {
            (None, _) => "delivered",
            (Some(_), Ok(())) => "dead_lettered",
            (Some(_), Err(_)) => "not_recorded",
        };
        // The audit line: who asked for what, when, and what became of it. Never arguments,
        // results or secrets.
        macro_rules! audit {
            ($level:expr) => {
                tracing::event!(
                    target: "oxp::rap::audit",
                    $level,
                    operation = job.operation.as_deref(),
                    id = job.reply_to.id.as_str(),
                    call_id = job.reply_to.call_id.as_deref(),
                    group_id = job.reply_to.group_id.as_str(),
                    user_id = job.user_id.as_deref(),
                    received_at = %rfc3339(job.received_at_ms),
                    completed_at = %rfc3339(completed_at_ms),
                    outcome = %outcome,
                    delivery,
                    attempts,
                    reason = reason.as_deref(),
                    store_error = recorded.as_ref().err().map(String::as_str),
                )
            };
        }
        match delivery {
            "delivered" => audit!(tracing::Level::INFO),
            "dead_lettered" => audit!(tracing::Level::WARN),
            _ => audit!(tracing::Level::ERROR),
        }
        recorded.map(|()| Report {
            outcome,
            delivered: reason.is_none(),
            attempts,
        })
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

    /// Answers `job` "interrupted" without running it (its run before ended unfinished and its
    /// tool may not run twice): delivered to the callback, or dead-lettered.
    pub(crate) async fn interrupted(&self, job: Job) -> Result<(), String> {
        let message = interrupted_result(&job);
        let body = Bytes::from(serde_json::to_vec(&message).expect("results serialize"));
        self.deliver(job, message, body, "interrupted".into(), None)
            .await
            .map(drop)
    }

    /// Records `job` as undeliverable without running it (the server is shutting down).
    pub(crate) async fn abandon(&self, job: Job, why: &str) -> Result<Report, String> {
        let message = interrupted_result(&job);
        let letter = DeadLetter {
            reason: why.to_owned(),
            attempts: 0,
            callback_url: job.reply_to.callback_url.clone(),
            operation: job.operation.clone(),
            received_at: rfc3339(job.received_at_ms),
            failed_at: rfc3339(unix_ms(SystemTime::now())),
            message: serde_json::to_value(&message).expect("results serialize"),
        };
        self.dead_letters.record(&letter).await?;
        tracing::warn!(
            target: "oxp::rap::audit",
            operation = job.operation.as_deref(),
            id = job.reply_to.id.as_str(),
            group_id = job.reply_to.group_id.as_str(),
            user_id = job.user_id.as_deref(),
            received_at = %rfc3339(job.received_at_ms),
            outcome = "interrupted",
            delivery = "dead_lettered",
            reason = why,
        );
        Ok(Report {
            outcome: "interrupted".into(),
            delivered: false,
            attempts: 0,
        })
    }

    /// [`Worker::run`], asking the user to authorize and waiting for them when the tool needs it
    /// (`auth_deadline`: when the worker must stop waiting; see `rap::authorize`).
    async fn run_authorized(
        &self,
        job: &Job,
        deadline: Option<Instant>,
        auth_deadline: Option<Instant>,
    ) -> Result<Result<ToolOutput<Value>, ErrorBody>, Kept> {
        if let Some(authorizing) = &self.authorizing {
            let (deliverer, toolset) = (&self.deliverer, &self.toolset);
            return authorizing
                .run(deliverer, toolset, job, auth_deadline, || {
                    self.run(job, deadline)
                })
                .await;
        }
        self.run(job, deadline).await
    }

    /// The tool's output or the error to report; `Err` when the job must stay queued.
    async fn run(
        &self,
        job: &Job,
        deadline: Option<Instant>,
    ) -> Result<Result<ToolOutput<Value>, ErrorBody>, Kept> {
        let operation = job.operation.as_deref();
        if let Some(rejection) = &job.rejected {
            return Ok(Err(rejection.error(operation, self.toolset.operations())));
        }
        let operation = operation.unwrap_or_default();
        // The toolset may have changed between acknowledgement and now (a new deployment).
        let Some(tool) = self.toolset.get(operation) else {
            return Ok(Err(unknown_operation(operation, self.toolset.operations())));
        };
        let mut call = Call::new("rap", Target::Tool(tool.clone()), job.arguments.clone());
        // The invocation id is the idempotency key: a redelivered job never runs twice.
        call.call_id = Some(job.reply_to.id.clone());
        call.user_id = job.user_id.clone();
        call.traceparent = job.traceparent.clone();
        call.principal = job.principal.clone();
        call.deadline = deadline;
        call.timeout = self.tool_timeout.into();
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
        call.cancellation = Some(cancellation);
        let answer = self.invoker.invoke(call).await;
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

/// The result of a call whose run ended unfinished (a shutdown, a crash): retryable.
fn interrupted_result(job: &Job) -> ToolResult {
    let error = ErrorBody {
        can_retry: true,
        ..error(
            "interrupted",
            "The tool server stopped before the call finished; it may be retried".into(),
        )
    };
    ToolResult::new(&job.reply_to, error_text(error))
}

/// The `text` of a failed call, as the published spec's convention has it: `Error: ` and the
/// message (with the retry hint), then on the next line the same error as JSON
/// (`{"error": {"kind", "message", ...}}`) for runtimes and models that read the detail.
pub(crate) fn error_text(error: ErrorBody) -> String {
    let mut text = format!("Error: {}", error.message);
    match (error.can_retry, error.retry_after_ms) {
        (true, Some(ms)) => text.push_str(&format!(" (retry after {ms} ms)")),
        (true, None) => text.push_str(" (it may be retried)"),
        _ => {}
    }
    text.push('\n');
    text.push_str(&serde_json::to_string(&ErrorText { error }).expect("errors serialize"));
    text
}

/// The error kind of a class, in RAP's words where they differ from the core's.
fn kind(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::InvalidInput => "invalid_arguments",
        ErrorClass::NotFound => "unknown_operation",
        ErrorClass::Conflict => "id_reused",
        other => other.as_str(),
    }
}

/// The error result of a call the invoker refused before the tool ran: the core's class,
/// user message and retry guidance, never its developer detail.
fn rejected(rejection: Rejection) -> ErrorBody {
    let class = rejection.class();
    let retry_after_ms = rejection
        .retry_after()
        .map(|after| u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
    match rejection {
        Rejection::InvalidInput(errors) => invalid_arguments(errors),
        other => ErrorBody {
            can_retry: class.retryable(),
            retry_after_ms,
            ..error(kind(class), other.user_message())
        },
    }
}

fn invalid_arguments(parameter_errors: ParameterErrors) -> ErrorBody {
    ErrorBody {
        parameter_errors: Some(parameter_errors),
        additional_prompt_content: Some(
            "Fix the arguments listed in parameter_errors to match the operation's inputSchema and call it again.".into(),
        ),
        ..error("invalid_arguments", "Some arguments are invalid".into())
    }
}

/// A tool failure without its developer message: that may carry internal detail (a panic
/// text, a path), which results must not leak. It is in the call's log line instead.
fn tool_error(e: ToolError, class: ErrorClass) -> ErrorBody {
    ErrorBody {
        kind: kind(class).into(),
        message: e.message,
        can_retry: e.can_retry,
        retry_after_ms: e.retry_after_ms,
        additional_prompt_content: e.additional_prompt_content,
        parameter_errors: None,
    }
}
