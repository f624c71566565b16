//! Where work goes in Lambda: the worker's queue, whose messages name work to run
//! (`{"oxp_work": [ids]}`) or a sweep (`{"oxp_sweep": true}`, the schedule's), and the worker
//! role's handler of those messages.

use super::{Runner, WAKE_BATCH, Wake};
use crate::server::{BoxFuture, CallContext, Handled, RecordHandler};
use crate::sqs::Sqs;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// The worker's queue (`OXP_WORK_QUEUE_URL`, else the RAP or MCP task queue): a message
/// names up to [`WAKE_BATCH`] pieces of work for the worker role to run.
pub(crate) struct Queue {
    pub(crate) sqs: Sqs,
    pub(crate) url: String,
}

impl Wake for Queue {
    fn wake(&self, ids: Vec<String>, after: Duration) -> BoxFuture<'_, Result<(), String>> {
        debug_assert!(ids.len() <= WAKE_BATCH);
        Box::pin(self.sqs.send_later(&self.url, queued_work(ids), after))
    }
}

/// The queued messages of the worker role: work to run, or a sweep.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Queued {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    oxp_work: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    oxp_sweep: bool,
}

/// The worker role's messages of the runner: work to run now, or a sweep (the schedule's).
pub(crate) struct WorkRecords(pub(crate) Arc<Runner>);

impl RecordHandler for WorkRecords {
    fn handle<'a>(&'a self, body: &'a str, context: CallContext) -> BoxFuture<'a, Handled> {
        Box::pin(async move {
            let Ok(queued) = serde_json::from_str::<Queued>(body) else {
                return Handled::NotMine;
            };
            if queued.oxp_work.len() > WAKE_BATCH
                || (queued.oxp_work.is_empty() && !queued.oxp_sweep)
            {
                return Handled::NotMine;
            }
            // Work another runner holds, or that ended, needs nothing from this message: the
            // record is the truth, and a lapsed lease is the next sweep's.
            let unread = self.0.run_now(&queued.oxp_work, context.deadline).await;
            if queued.oxp_sweep {
                self.0.sweep(context.deadline).await;
            }
            if unread > 0 {
                return Handled::Retry(format!("{unread} of its work could not be claimed"));
            }
            Handled::Done
        })
    }

    /// The worker's schedule (template.yaml: every minute): work whose process died, retries
    /// come due, work whose queued message was lost.
    fn tick(&self, context: CallContext) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.0.sweep(context.deadline).await;
        })
    }
}

/// The body of the queued message that runs `ids`.
pub(crate) fn queued_work(ids: Vec<String>) -> String {
    serde_json::to_string(&Queued {
        oxp_work: ids,
        oxp_sweep: false,
    })
    .expect("messages serialize")
}
