//! Running accepted invocations: the tool runs (its arguments validated first), the result
//! is delivered to the callback, and an undeliverable result goes to the dead-letter store.
//! The same code runs behind the in-process queue and as the Lambda SQS worker.

use crate::invoke::{self, Supplied};
use crate::rap::dead_letter::{DeadLetter, DeadLetters};
use crate::rap::deliver::{Deliverer, Delivery};
use crate::rap::job::{Job, error, rfc3339, unix_ms, unknown_operation};
use crate::rap::toolset::ServedToolset;
use crate::rap::wire::{ErrorBody, ErrorText, ToolResult};
use crate::secrets::Secrets;
use crate::tool::ToolError;
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use axum::body::Bytes;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Semaphore;

/// Runs jobs and delivers their results.
#[derive(Debug)]
pub struct Worker {
    toolset: Arc<ServedToolset>,
    secrets: Secrets,
    deliverer: Deliverer,
    dead_letters: DeadLetters,
    tool_timeout: Option<Duration>,
    slots: Semaphore,
}

/// What became of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `success`, or the error kind of the result.
    pub outcome: String,
    /// Whether the result was delivered (else it was dead-lettered).
    pub delivered: bool,
    /// Delivery attempts.
    pub attempts: u32,
}

impl Worker {
    /// A worker running tools of `toolset` with server-held `secrets`, at most
    /// `max_concurrent` at once, each within `tool_timeout`.
    pub fn new(
        toolset: Arc<ServedToolset>,
        secrets: Secrets,
        deliverer: Deliverer,
        dead_letters: DeadLetters,
        tool_timeout: Option<Duration>,
        max_concurrent: usize,
    ) -> Self {
        Self {
            toolset,
            secrets,
            deliverer,
            dead_letters,
            tool_timeout,
            slots: Semaphore::new(max_concurrent),
        }
    }

    /// The served toolset.
    pub fn toolset(&self) -> &Arc<ServedToolset> {
        &self.toolset
    }

    /// Runs `job` and delivers its result before `deadline`. `Err` only when the result was
    /// neither delivered nor dead-lettered: the caller must keep the job (SQS redelivers it).
    pub async fn process(&self, job: Job, deadline: Option<Instant>) -> Result<Report, String> {
        let result = {
            let _slot = self.slots.acquire().await.ok();
            // Leave time to deliver after the tool: one attempt's worth.
            let tool_deadline = deadline.map(|d| {
                d.checked_sub(self.deliverer.attempt_timeout())
                    .unwrap_or(d)
                    .max(Instant::now())
            });
            self.run(&job, tool_deadline).await
        };
        let (outcome, text) = match result {
            Ok(value) => ("success".to_owned(), output_text(value)),
            Err(e) => (e.kind.clone(), error_text(e)),
        };
        let message = ToolResult::new(&job.reply_to, text);
        self.deliver(job, message, outcome, deadline).await
    }

    /// Delivers `message` for `job`, dead-letters it when that fails, and writes the audit line.
    async fn deliver(
        &self,
        job: Job,
        message: ToolResult,
        outcome: String,
        deadline: Option<Instant>,
    ) -> Result<Report, String> {
        let body = Bytes::from(serde_json::to_vec(&message).expect("results serialize"));
        let delivery = self
            .deliverer
            .deliver(&job.reply_to.callback_url, body, deadline)
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
                message,
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
                    id = %job.reply_to.id,
                    call_id = job.reply_to.call_id.as_deref(),
                    group_id = %job.reply_to.group_id,
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

    /// Records `job` as undeliverable without running it (the server is shutting down).
    pub async fn abandon(&self, job: Job, why: &str) -> Result<Report, String> {
        let error = ErrorBody {
            can_retry: true,
            ..error(
                "interrupted",
                "The tool server stopped before the call finished; it may be retried".into(),
            )
        };
        let message = ToolResult::new(&job.reply_to, error_text(error));
        let letter = DeadLetter {
            reason: why.to_owned(),
            attempts: 0,
            callback_url: job.reply_to.callback_url.clone(),
            operation: job.operation.clone(),
            received_at: rfc3339(job.received_at_ms),
            failed_at: rfc3339(unix_ms(SystemTime::now())),
            message,
        };
        self.dead_letters.record(&letter).await?;
        tracing::warn!(
            target: "oxp::rap::audit",
            operation = job.operation.as_deref(),
            id = %job.reply_to.id,
            group_id = %job.reply_to.group_id,
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

    /// The tool's output, or the error to report.
    async fn run(&self, job: &Job, deadline: Option<Instant>) -> Result<Value, ErrorBody> {
        let operation = job.operation.as_deref();
        if let Some(rejection) = &job.rejected {
            return Err(rejection.error(operation, self.toolset.operations()));
        }
        let operation = operation.unwrap_or_default();
        // The toolset may have changed between acknowledgement and now (a new deployment).
        let Some(tool) = self.toolset.get(operation) else {
            return Err(unknown_operation(operation, self.toolset.operations()));
        };
        let supplied = Supplied {
            call_id: Some(job.reply_to.id.clone()),
            user_id: job.user_id.clone(),
            ..Supplied::default()
        };
        let mut ctx = invoke::prepare(tool, supplied, &self.secrets)
            .await
            .map_err(|missing| error("missing_requirement", missing.user_message()))?;
        ctx.group_id = Some(job.reply_to.group_id.clone());
        ctx.thread_ancestors = job.thread_ancestors.clone();
        ctx.deadline = deadline;
        invoke::check_input(tool, &job.arguments).map_err(invalid_arguments)?;
        let outcome = invoke::execute(tool, job.arguments.clone(), ctx, self.tool_timeout)
            .await
            .map_err(invalid_arguments)?;
        outcome.result.map_err(tool_error)
    }

    /// Handles one SQS batch: every record runs concurrently; a record whose body is not a
    /// job, or whose result could be neither delivered nor dead-lettered, is reported in
    /// `batchItemFailures` so SQS redelivers it (and moves it to the queue's dead-letter queue
    /// after its `maxReceiveCount`).
    pub async fn handle_batch(
        &self,
        event: SqsEvent,
        deadline: Option<Instant>,
    ) -> SqsBatchResponse {
        let records = event.records.into_iter().map(|record| async move {
            let id = record.message_id.unwrap_or_default();
            let job = match record.body.as_deref().map(serde_json::from_str::<Job>) {
                Some(Ok(job)) => job,
                Some(Err(e)) => {
                    tracing::error!(target: "oxp::rap", message_id = %id, error = %e, "queue message is not an invocation job");
                    return Some(id);
                }
                None => {
                    tracing::error!(target: "oxp::rap", message_id = %id, "queue message has no body");
                    return Some(id);
                }
            };
            self.process(job, deadline).await.err().map(|_| id)
        });
        let mut response = SqsBatchResponse::default();
        for failed in futures_util::future::join_all(records)
            .await
            .into_iter()
            .flatten()
        {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = failed;
            response.batch_item_failures.push(failure);
        }
        response
    }
}

/// A string output is sent as it is; any other output JSON-encoded.
fn output_text(value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

fn error_text(error: ErrorBody) -> String {
    serde_json::to_string(&ErrorText { error }).expect("errors serialize")
}

fn invalid_arguments(parameter_errors: crate::validate::ParameterErrors) -> ErrorBody {
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
fn tool_error(e: ToolError) -> ErrorBody {
    ErrorBody {
        kind: "tool_error".into(),
        message: e.message,
        can_retry: e.can_retry,
        retry_after_ms: e.retry_after_ms,
        additional_prompt_content: e.additional_prompt_content,
        parameter_errors: None,
    }
}
