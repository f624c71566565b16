//! SQS as Lambda's poller feeds the worker: messages received from a queue (on moto) made into
//! one SQS event.

use serde_json::json;

/// A new queue named after `prefix` and its dead-letter queue, on moto: their URLs.
pub async fn queues(sqs: &aws_sdk_sqs::Client, prefix: &str) -> (String, String) {
    let name = format!("{prefix}-{}", uuid::Uuid::new_v4().simple());
    let mut urls = Vec::new();
    for queue in [name.clone(), format!("{name}-dlq")] {
        let created = sqs.create_queue().queue_name(queue).send().await.unwrap();
        urls.push(created.queue_url.unwrap());
    }
    let dead_letters = urls.pop().unwrap();
    (urls.pop().unwrap(), dead_letters)
}

/// The next `n` messages of `queue_url` as one SQS batch event (20 s at most to gather them).
pub async fn receive_batch(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    n: usize,
) -> aws_lambda_events::event::sqs::SqsEvent {
    let records = receive_records(sqs, queue_url, n).await;
    serde_json::from_value(json!({"Records": records})).unwrap()
}

/// The next `n` messages of `queue_url` as Lambda's SQS event records (20 s at most).
pub async fn receive_records(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    n: usize,
) -> Vec<serde_json::Value> {
    let mut records = Vec::new();
    for _ in 0..20 {
        let received = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        for m in received.messages.unwrap_or_default() {
            records.push(json!({
                "messageId": m.message_id.unwrap(),
                "receiptHandle": m.receipt_handle.unwrap(),
                "body": m.body.unwrap(),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": m.md5_of_body.unwrap_or_default(),
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:oxp-queue",
                "awsRegion": "us-east-1"
            }));
        }
        if records.len() >= n {
            break;
        }
    }
    let bodies: Vec<_> = records.iter().map(|r| &r["body"]).collect();
    assert_eq!(records.len(), n, "messages in {queue_url}: {bodies:?}");
    records
}
