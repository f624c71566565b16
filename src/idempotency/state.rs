//! Idempotency records on the one [`StateStore`]: the embedded database (`OXP_IDEMPOTENCY=state`
//! locally) or a DynamoDB table (`OXP_IDEMPOTENCY_TABLE`, every execution environment), with the
//! store's compare-and-swap and expiry, so there is no second DynamoDB client to keep.
//!
//! A record is `{"fingerprint": .., "outcome": ..}` at key `<scoped key>` of partition
//! [`PARTITION`]: without an outcome it is a claim in progress, held until the claim's deadline;
//! with one, the stored answer, kept `OXP_IDEMPOTENCY_TTL_SECS`. Both expire like every record.

use oxp_lambda_core::durable::{Item, StateError, StateStore};
use oxp_lambda_core::idempotency::{
    Claim, IdempotencyStore, StoreError, StoreFuture, StoredOutcome,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The partition of idempotency records.
pub(crate) const PARTITION: &str = "idempotency";

/// Compare-and-swap rounds before a store that keeps changing under a key is reported (another
/// process claiming, completing or expiring it at the same moment).
const ROUNDS: usize = 3;

/// An [`IdempotencyStore`] over a [`StateStore`].
#[derive(Debug, Clone)]
pub(crate) struct StateRecords {
    store: Arc<dyn StateStore>,
}

impl StateRecords {
    pub(crate) fn new(store: Arc<dyn StateStore>) -> Self {
        Self { store }
    }
}

#[derive(Serialize, Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    fingerprint: std::borrow::Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outcome: Option<StoredOutcome>,
}

fn failed(e: StateError) -> StoreError {
    StoreError(e.0)
}

fn encode(fingerprint: &str, outcome: Option<&StoredOutcome>) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(&Record {
        fingerprint: fingerprint.into(),
        outcome: outcome.cloned(),
    })
    .map_err(|e| StoreError(format!("unwritable record: {e}")))
}

fn decode(bytes: &[u8]) -> Result<Record<'_>, StoreError> {
    serde_json::from_slice(bytes).map_err(|_| StoreError("unreadable record".into()))
}

/// What a record found under a key means for a call with `fingerprint`.
fn decide(bytes: &[u8], fingerprint: &str) -> Result<Claim, StoreError> {
    let record = decode(bytes)?;
    Ok(match record.outcome {
        _ if record.fingerprint != fingerprint => Claim::Conflict,
        Some(outcome) => Claim::Completed(outcome),
        None => Claim::InProgress,
    })
}

impl IdempotencyStore for StateRecords {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        hold: Duration,
    ) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            let claim = encode(fingerprint, None)?;
            for _ in 0..ROUNDS {
                // The usual case, a new key, in one write: taken only where nothing lives.
                let item = Item::new(claim.clone(), Some(SystemTime::now() + hold));
                if self
                    .store
                    .put_if(PARTITION, key, item, None)
                    .await
                    .map_err(failed)?
                {
                    return Ok(Claim::Acquired);
                }
                // Held: by whom and how far. (Gone again when it expired in between.)
                if let Some(found) = self.store.get(PARTITION, key).await.map_err(failed)? {
                    return decide(&found.value, fingerprint);
                }
            }
            Err(StoreError("the record kept changing; retry".into()))
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
            let value = encode(fingerprint, Some(outcome))?;
            for _ in 0..ROUNDS {
                let found = self.store.get(PARTITION, key).await.map_err(failed)?;
                if let Some(found) = &found
                    && decode(&found.value)?.fingerprint != fingerprint
                {
                    // Another call took the key over after this claim expired: nothing of
                    // this call's is left to change.
                    return Ok(());
                }
                let item = Item::new(value.clone(), Some(SystemTime::now() + keep));
                let expected = found.as_ref().map(|f| f.value.as_slice());
                if self
                    .store
                    .put_if(PARTITION, key, item, expected)
                    .await
                    .map_err(failed)?
                {
                    return Ok(());
                }
            }
            Err(StoreError("the record kept changing; retry".into()))
        })
    }

    fn release<'a>(&'a self, key: &'a str, fingerprint: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let Some(found) = self.store.get(PARTITION, key).await.map_err(failed)? else {
                return Ok(());
            };
            let record = decode(&found.value)?;
            if record.fingerprint != fingerprint || record.outcome.is_some() {
                // Completed, or another call's: left alone.
                return Ok(());
            }
            // Only this claim goes, never one another process made after it: a swap to a
            // record already expired (read as absent at once, deleted by the store's expiry).
            let gone = Item::new(
                b"released".to_vec(),
                Some(SystemTime::now() - Duration::from_secs(1)),
            );
            self.store
                .put_if(PARTITION, key, gone, Some(&found.value))
                .await
                .map_err(failed)?;
            Ok(())
        })
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
