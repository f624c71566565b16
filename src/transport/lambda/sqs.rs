//! SQS batches (a role whose protocols are fed queued records, such as RAP's
//! `OXP_LAMBDA_ROLE=worker`): each record goes to the role's [`RecordHandler`]s; what must be
//! retried goes back in `batchItemFailures`. The transport knows no protocol: a record no
//! handler takes is kept for redelivery (and moved to the queue's dead-letter queue after its
//! `maxReceiveCount`).

use super::invocation::{Event, InvocationLayer, Meta};
use crate::server::{CallContext, Handled, RecordHandler};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_http::{LambdaEvent, service_fn};
use std::sync::Arc;
use tower::{Layer, ServiceExt};

/// Handles one SQS batch: every record runs concurrently; a record that no handler takes, or
/// that its handler could not finish, is reported in `batchItemFailures` so SQS redelivers it.
pub(crate) async fn handle_batch(
    handlers: &[Arc<dyn RecordHandler>],
    event: SqsEvent,
    context: CallContext,
) -> SqsBatchResponse {
    let records = event.records.into_iter().map(|record| {
        let context = context.clone();
        async move {
            let id = record.message_id.unwrap_or_default();
            let Some(body) = record.body else {
                tracing::error!(target: "oxp::lambda", message_id = %id, "queue message has no body");
                return Some(id);
            };
            match first_taker(handlers, &body, context).await {
                Handled::Done => None,
                Handled::Retry(reason) => {
                    tracing::warn!(target: "oxp::lambda", message_id = %id, reason = reason.as_str(), "record kept for redelivery");
                    Some(id)
                }
                Handled::NotMine => {
                    tracing::error!(target: "oxp::lambda", message_id = %id, "queue message is no record this role handles");
                    Some(id)
                }
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

/// Each record to the first of the role's handlers that takes it.
async fn first_taker(
    handlers: &[Arc<dyn RecordHandler>],
    body: &str,
    context: CallContext,
) -> Handled {
    for handler in handlers {
        match handler.handle(body, context.clone()).await {
            Handled::NotMine => continue,
            handled => return handled,
        }
    }
    Handled::NotMine
}

/// Serves SQS batches until the execution environment ends, `AWS_LAMBDA_MAX_CONCURRENCY` of
/// them at once under Lambda Managed Instances (one at a time otherwise).
pub(crate) async fn run(
    handlers: Vec<Arc<dyn RecordHandler>>,
    layer: InvocationLayer,
) -> Result<(), lambda_http::Error> {
    let handlers: Arc<[Arc<dyn RecordHandler>]> = handlers.into();
    let batches = layer.layer(service_fn(move |event: Event<SqsEvent>| {
        let handlers = handlers.clone();
        async move {
            Ok::<_, lambda_http::Error>(handle_batch(&handlers, event.payload, event.context).await)
        }
    }));
    lambda_http::lambda_runtime::run_concurrent(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let meta = Meta::of_context(&event.context);
        batches.clone().oneshot(Event::new(event.payload, meta))
    }))
    .await
}
