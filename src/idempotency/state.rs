//! Idempotency records on the one [`StateStore`]: the embedded database (`OXP_IDEMPOTENCY=state`
//! locally) or a DynamoDB table (`OXP_IDEMPOTENCY_TABLE`, every execution environment), with the
//! store's compare-and-swap and expiry, so there is no second DynamoDB client to keep.
//!
//! A record is `{"fingerprint": .., "outcome": ..}` at key `<scoped key>` of partition
//! [`PARTITION`]: without an outcome it is a claim in progress, held until the claim's deadline;
//! with one, the stored answer, kept `OXP_IDEMPOTENCY_TTL_SECS`. Both expire like every record.

use crate::state::books::{Books, ROW_OVERHEAD};
use crate::state::record::Records;
use oxp_lambda_core::durable::{Item, StateError, StateStore};
use oxp_lambda_core::idempotency::{
    Claim, IdempotencyStore, StoreError, StoreFuture, StoredOutcome,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The partition of idempotency records.
pub(crate) const PARTITION: &str = "idempotency";

/// An [`IdempotencyStore`] over a [`StateStore`].
#[derive(Debug, Clone)]
pub(crate) struct StateRecords {
    store: Arc<dyn StateStore>,
    /// Each caller's share of the outcomes written (`None`: unbounded, as on a DynamoDB table).
    books: Option<Arc<Books>>,
}

impl StateRecords {
    pub(crate) fn new(store: Arc<dyn StateStore>) -> Self {
        Self { store, books: None }
    }

    /// The same, each caller's outcomes this process writes bounded by `per_caller` bytes.
    pub(crate) fn with_share(store: Arc<dyn StateStore>, per_caller: u64) -> Self {
        let books = Some(Arc::new(Books::new(per_caller)));
        Self { store, books }
    }
}

#[derive(Serialize, Deserialize)]
struct Record {
    fingerprint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<StoredOutcome>,
    /// Which outcome this is, where the books count it (a deletion takes this one only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stamp: Option<u64>,
}

impl crate::state::record::Record for Record {}

fn failed(e: StateError) -> StoreError {
    StoreError(e.0)
}

impl StateRecords {
    /// The idempotency records, each changed by compare-and-swap.
    fn records(&self) -> Records<'_> {
        Records::new(&*self.store, PARTITION, "an idempotency record")
    }
}

/// The claim of `fingerprint` as [`IdempotencyStore::claim`] wrote it: completing or releasing
/// it starts from there, one conditional write where nothing wrote since (a read and a write
/// only when something did: the claim expired and was taken again, say).
fn as_claimed(fingerprint: &str) -> Option<(Record, Item)> {
    let record = Record {
        fingerprint: fingerprint.to_owned(),
        outcome: None,
        stamp: None,
    };
    let bytes = serde_json::to_vec(&record).ok()?;
    Some((record, Item::new(bytes, None)))
}

impl StateRecords {
    /// Deletes the outcome stamped `stamp` under `key` (written already expired, as a release
    /// is), if it is still there: a later one under the same key stays. Not deleted (the store
    /// did not answer), it expires on its own.
    async fn delete(&self, key: &str, stamp: u64) {
        let gone = SystemTime::now() - Duration::from_secs(1);
        let ours = |record: &mut Record| record.stamp == Some(stamp);
        let records = self.records();
        if let Err(e) = records.update(key, None, ours, |_, _| Some(gone)).await {
            tracing::warn!(target: "oxp::call", error = %e, "an outcome past its caller's share not deleted");
        }
    }
}

impl IdempotencyStore for StateRecords {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        hold: Duration,
    ) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            // The usual case, a new key, in one write (no read first): taken only where nothing
            // lives. Held: by whom and how far (declined, nothing written).
            let found = std::sync::Mutex::new(None);
            let claim = || {
                Some(Record {
                    fingerprint: fingerprint.to_owned(),
                    outcome: None,
                    stamp: None,
                })
            };
            let decide = |record: &mut Record| {
                *found.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(match record.outcome.take() {
                        _ if record.fingerprint != fingerprint => Claim::Conflict,
                        Some(outcome) => Claim::Completed(outcome),
                        None => Claim::InProgress,
                    });
                false
            };
            let until = SystemTime::now() + hold;
            let records = self.records();
            if let Some(new) = claim()
                && let Some(_) = records
                    .write(key, &new, None, Some(until))
                    .await
                    .map_err(failed)?
            {
                return Ok(Claim::Acquired);
            }
            // Something lives there: read, and decided on what it is (or taken, expired meanwhile).
            let claimed = records
                .upsert(key, None, claim, decide, |_, _| Some(until))
                .await
                .map_err(failed)?;
            Ok(
                match (
                    claimed,
                    found.into_inner().unwrap_or_else(|p| p.into_inner()),
                ) {
                    (Some(_), _) => Claim::Acquired,
                    (None, Some(held)) => held,
                    (None, None) => Claim::InProgress,
                },
            )
        })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        outcome: &'a StoredOutcome,
        keep: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            // Where the claim expired meanwhile, written anew; where another call took the key
            // over after it expired, nothing of this call's is left to change.
            let stamp = self.books.as_ref().map(|books| books.stamp());
            let completed = || {
                Some(Record {
                    fingerprint: fingerprint.to_owned(),
                    outcome: Some(outcome.clone()),
                    stamp,
                })
            };
            let complete = |record: &mut Record| {
                let ours = record.fingerprint == fingerprint;
                if ours {
                    record.outcome = Some(outcome.clone());
                    record.stamp = stamp;
                }
                ours
            };
            let until = SystemTime::now() + keep;
            let written = self
                .records()
                .upsert(key, as_claimed(fingerprint), completed, complete, |_, _| {
                    Some(until)
                })
                .await
                .map_err(failed)?;
            if let (Some(books), Some(stamp), Some((_, item))) = (&self.books, stamp, written) {
                let bytes = (key.len() + item.value.len()) as u64 + ROW_OVERHEAD;
                for (key, stamp) in books.wrote(key, stamp, bytes, Instant::now() + keep) {
                    self.delete(&key, stamp).await;
                }
            }
            Ok(())
        })
    }

    fn release<'a>(&'a self, key: &'a str, fingerprint: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            // Only this claim goes, never one another process made after it, nor a completed
            // one: written already expired (gone at once), over the claim as read.
            let gone = SystemTime::now() - Duration::from_secs(1);
            self.records()
                .update(
                    key,
                    as_claimed(fingerprint),
                    |record: &mut Record| {
                        record.fingerprint == fingerprint && record.outcome.is_none()
                    },
                    |_, _| Some(gone),
                )
                .await
                .map_err(failed)?;
            Ok(())
        })
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
