//! The worker as the Lambda transport feeds it (`OXP_LAMBDA_ROLE=worker`): each queued record
//! is a [`Job`]; a record that is none is another protocol's (or no one's: the transport keeps
//! it for redelivery, and SQS moves it to the queue's dead-letter queue in the end).

use crate::rap::job::Job;
use crate::rap::worker::Worker;
use crate::server::{BoxFuture, CallContext, Handled, RecordHandler};

impl RecordHandler for Worker {
    fn handle<'a>(&'a self, body: &'a str, context: CallContext) -> BoxFuture<'a, Handled> {
        Box::pin(async move {
            let Ok(job) = serde_json::from_str::<Job>(body) else {
                return Handled::NotMine;
            };
            match self.process(job, context.deadline).await {
                Ok(_) => Handled::Done,
                Err(kept) => Handled::Retry(kept.to_string()),
            }
        })
    }
}
