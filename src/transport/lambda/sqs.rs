//! SQS batches (feature `lambda-records`: a role whose protocols are fed queued records, such
//! as RAP's `OXP_LAMBDA_ROLE=worker`): each record goes to the role's [`RecordHandler`]s; what
//! must be retried goes back in `batchItemFailures`. The transport knows no protocol: a record
//! no handler takes is kept for redelivery (and moved to the queue's dead-letter queue after
//! its `maxReceiveCount`). The role's schedule (an EventBridge scheduled event) is a tick to
//! every handler.

use super::invocation::{Event, InvocationLayer, Meta};
use crate::server::{CallContext, Handled, RecordHandler, Records};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::{LambdaEvent, service_fn};
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

/// Whether `event` is an EventBridge scheduled event (the role's schedule).
fn scheduled(event: &serde_json::Value) -> bool {
    event.get("source").and_then(|s| s.as_str()) == Some("aws.events")
        && event.get("detail-type").and_then(|d| d.as_str()) == Some("Scheduled Event")
}

/// Handles one event of a records role: an SQS batch (its answer the batch response), or the
/// role's schedule (every handler's tick; answered `{}`).
pub(crate) async fn handle_event(
    handlers: &[Arc<dyn RecordHandler>],
    event: serde_json::Value,
    context: CallContext,
) -> Result<serde_json::Value, String> {
    if scheduled(&event) {
        futures_util::future::join_all(handlers.iter().map(|h| h.tick(context.clone()))).await;
        return Ok(serde_json::json!({}));
    }
    // serde's own message would quote what the event held (a string where the batch's
    // records belong, say), and it goes back to whoever invoked the function.
    let batch: SqsEvent = serde_json::from_value(event).map_err(|e| {
        let unfit = oxp_lambda_core::naming::unfit(&e);
        format!("the event is neither an SQS batch nor a scheduled event: {unfit}")
    })?;
    let response = handle_batch(handlers, batch, context).await;
    Ok(serde_json::to_value(response).expect("batch responses serialize"))
}

/// Serves SQS batches (and the role's schedule) until the execution environment ends,
/// `AWS_LAMBDA_MAX_CONCURRENCY` of them at once under Lambda Managed Instances (one at a time
/// otherwise).
pub(crate) async fn run(
    records: Records,
    layer: InvocationLayer,
) -> Result<(), lambda_runtime::Error> {
    let handlers: Arc<[Arc<dyn RecordHandler>]> = records.0.into();
    let events = layer.layer(service_fn(move |event: Event<serde_json::Value>| {
        let handlers = handlers.clone();
        async move {
            handle_event(&handlers, event.payload, event.context)
                .await
                .map_err(lambda_runtime::Error::from)
        }
    }));
    lambda_runtime::run_concurrent(service_fn(move |event: LambdaEvent<serde_json::Value>| {
        let meta = Meta::of_context(&event.context);
        events.clone().oneshot(Event::new(event.payload, meta))
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An event that is no batch is refused without quoting what it held: the refusal goes
    /// back to whoever invoked the function, and into its log.
    #[tokio::test]
    async fn an_event_that_is_no_batch_is_refused_without_its_text() {
        let sent = "sk_live_never_echoed";
        for event in [
            json!(sent),
            json!({"Records": sent}),
            json!({"Records": [{"messageId": "m", "body": {"k": sent}}]}),
            json!({"Records": [{"messageId": "m", "attributes": {"SentTimestamp": [sent]}}]}),
        ] {
            let refused = handle_event(&[], event.clone(), CallContext::default()).await;
            let message = refused.expect_err("no batch");
            assert!(!message.contains(sent), "{event}: {message}");
            assert!(message.contains("neither an SQS batch nor a scheduled event"));
        }
    }

    /// A batch whose records no handler takes has each reported for redelivery, a record
    /// without a body among them.
    #[tokio::test]
    async fn a_batch_no_handler_takes_reports_every_record() {
        let event = json!({"Records": [{"messageId": "a", "body": "x"}, {"messageId": "b"}]});
        let answer = handle_event(&[], event, CallContext::default())
            .await
            .unwrap();
        let failed = &answer["batchItemFailures"];
        assert_eq!(
            failed,
            &json!([{"itemIdentifier": "a"}, {"itemIdentifier": "b"}])
        );
    }
}
