//! SQS batches of async invocations (`OXP_LAMBDA_ROLE=worker`): each record is a job for the
//! RAP worker; what must be retried goes back in `batchItemFailures`.

use crate::rap::job::Job;
use crate::rap::worker::Worker;
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_http::{LambdaEvent, service_fn};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Handles one SQS batch: every record runs concurrently; a record whose body is not a job,
/// whose invocation is still running elsewhere, or whose result could be neither delivered nor
/// dead-lettered, is reported in `batchItemFailures` so SQS redelivers it (and moves it to the
/// queue's dead-letter queue after its `maxReceiveCount`).
pub(crate) async fn handle_batch(
    worker: &Worker,
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
        match worker.process(job, deadline).await {
            Ok(_) => None,
            Err(kept) => {
                tracing::warn!(target: "oxp::rap", message_id = %id, reason = %kept, "record kept for redelivery");
                Some(id)
            }
        }
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

/// Reports every record of `event` for redelivery: no worker runs here.
pub(crate) fn refuse_batch(event: SqsEvent) -> SqsBatchResponse {
    tracing::error!(target: "oxp::rap", "an SQS batch reached an app without the worker role (OXP_LAMBDA_ROLE=worker)");
    let mut response = SqsBatchResponse::default();
    for record in event.records {
        let mut failure = BatchItemFailure::default();
        failure.item_identifier = record.message_id.unwrap_or_default();
        response.batch_item_failures.push(failure);
    }
    response
}

/// Serves SQS batches until the execution environment ends, `AWS_LAMBDA_MAX_CONCURRENCY` of
/// them at once under Lambda Managed Instances (one at a time otherwise). Results must be
/// delivered or dead-lettered `margin` before the invocation deadline.
pub(crate) async fn run(worker: Arc<Worker>, margin: Duration) -> Result<(), lambda_http::Error> {
    lambda_http::lambda_runtime::run_concurrent(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let worker = worker.clone();
        async move {
            let context = event.context;
            let deadline = super::deadline(&context, margin);
            let batch = handle_batch(&worker, event.payload, deadline);
            let answer = crate::observe::invocation(
                &context.request_id,
                context.xray_trace_id.as_deref(),
                context.tenant_id.as_deref(),
                batch,
            )
            .await;
            Ok::<_, lambda_http::Error>(answer)
        }
    }))
    .await
}
