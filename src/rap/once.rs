//! Each invocation's result is delivered once, however many times its job arrives (SQS
//! delivers at least once; a runtime may send the same `/invoke` again): before delivering, the
//! worker claims a mark beside the invocation's idempotency record, fingerprinted by the message
//! and its callback, and completes it once the callback took the message. A repeat bringing the
//! same message (the stored result replayed) that finds the mark completed is acknowledged
//! without a second callback; one that finds it held waits on the queue. Another message under
//! the same id (an invocation refused before its tool ran, sent again corrected) is delivered.
//! A result that was dead-lettered frees the mark, so a repeat tries the callback again. Without
//! an idempotency store, or when the store cannot answer, the message is delivered (at least
//! once rather than never).

use crate::rap::job::Job;
use oxp_lambda_core::content::ToolOutput;
use oxp_lambda_core::idempotency::{Claim, StoredOutcome, lower_hex, scoped_key};
use oxp_lambda_core::invoke::Invoker;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::Duration;

/// Whether an invocation's result is still to be delivered.
pub(crate) enum Delivered {
    /// Deliver it; nothing is recorded (no store, or it could not say).
    Untracked,
    /// This run delivers it, and marks it.
    Claimed,
    /// An earlier run of the same invocation delivered it.
    Already,
    /// Another copy of the job is delivering it right now: this one waits on its queue.
    Elsewhere,
}

/// A claimed delivery mark.
pub(crate) struct Mark {
    key: String,
    fingerprint: String,
}

/// The mark of delivering `body` for `job`: the same for every copy of the job and every
/// delivery of the same answer. Keyed as a call of its own protocol (`rap-delivered`, never a
/// call's key) so that the mark counts in its caller's share of the store, as the call does.
pub(crate) fn mark(job: &Job, body: &[u8]) -> Mark {
    let key = scoped_key(
        "rap-delivered",
        job.principal.subject.as_deref(),
        Some(&job.reply_to.group_id),
        &job.reply_to.id,
    );
    let mut hash = Sha256::new();
    hash.update(job.reply_to.callback_url.as_bytes());
    hash.update([0]);
    hash.update(body);
    let fingerprint = lower_hex(&hash.finalize());
    Mark { key, fingerprint }
}

/// Claims the mark of delivering `body` for `job`, held for `longest` (a whole delivery's
/// bound, its retries included).
pub(crate) async fn claim(
    invoker: &Invoker,
    job: &Job,
    body: &[u8],
    longest: Duration,
) -> Delivered {
    let Some(idempotency) = invoker.idempotency() else {
        return Delivered::Untracked;
    };
    let Mark { key, fingerprint } = mark(job, body);
    match idempotency.store.claim(&key, &fingerprint, longest).await {
        Ok(Claim::Acquired) => Delivered::Claimed,
        Ok(Claim::Completed(_)) => Delivered::Already,
        Ok(Claim::InProgress) => Delivered::Elsewhere,
        Ok(Claim::Conflict) | Err(_) => Delivered::Untracked,
    }
}

/// Completes `mark` when the message was `delivered`, frees it otherwise.
pub(crate) async fn settle(invoker: &Invoker, mark: &Mark, delivered: bool) {
    let Some(idempotency) = invoker.idempotency() else {
        return;
    };
    let store = &idempotency.store;
    let recorded = if delivered {
        let done = StoredOutcome::new(&Ok(ToolOutput::new(Value::Null)), Duration::ZERO);
        store
            .complete(&mark.key, &mark.fingerprint, &done, idempotency.keep)
            .await
    } else {
        store.release(&mark.key, &mark.fingerprint).await
    };
    if let Err(e) = recorded {
        tracing::warn!(target: "oxp::rap", error = %e, "the delivery mark was not recorded: a repeat may deliver again");
    }
}

#[cfg(test)]
mod tests {
    use super::mark;
    use crate::rap::job::Job;
    use crate::rap::wire::ReplyTo;
    use oxp_lambda_core::content::ToolOutput;
    use oxp_lambda_core::idempotency::memory::MemoryStore;
    use oxp_lambda_core::idempotency::{Claim, IdempotencyStore, StoredOutcome};
    use serde_json::Value;
    use std::time::Duration;

    fn job(caller: &str, id: usize) -> Job {
        let mut job = Job::new(ReplyTo {
            id: format!("call-{id}"),
            group_id: "thread".into(),
            callback_url: "https://agent.example/cb".into(),
            call_id: None,
        });
        job.principal.subject = Some(caller.into());
        job
    }

    /// Claims and completes the mark of delivering `job`'s result, as a worker does.
    async fn deliver(store: &MemoryStore, job: &Job) -> Claim {
        let (mark, hour) = (mark(job, b"{}"), Duration::from_secs(3600));
        let claim = store
            .claim(&mark.key, &mark.fingerprint, hour)
            .await
            .unwrap();
        let done = StoredOutcome::new(&Ok(ToolOutput::new(Value::Null)), Duration::ZERO);
        store
            .complete(&mark.key, &mark.fingerprint, &done, hour)
            .await
            .unwrap();
        claim
    }

    #[tokio::test]
    async fn one_callers_many_deliveries_never_evict_another_callers_delivery_mark() {
        // Shares of 16 KiB: alice's 1,000 marks are far past hers.
        let store = MemoryStore::with_share(1 << 20, 16 << 10);
        assert_eq!(deliver(&store, &job("bob", 0)).await, Claim::Acquired);
        for id in 0..1000 {
            deliver(&store, &job("alice", id)).await;
        }
        let again = deliver(&store, &job("bob", 0)).await;
        assert!(
            matches!(again, Claim::Completed(_)),
            "bob's redelivered job finds its result delivered, not {again:?}"
        );
        assert!(
            !matches!(deliver(&store, &job("alice", 0)).await, Claim::Completed(_)),
            "alice's oldest marks made room for her own newer ones"
        );
    }
}
