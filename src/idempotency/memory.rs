//! The in-memory idempotency store: the local default, and per execution environment in Lambda.

use crate::core::idempotency::{Claim, IdempotencyStore, StoreFuture, StoredOutcome};
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
enum Record {
    InProgress {
        fingerprint: String,
        until: Instant,
    },
    Completed {
        fingerprint: String,
        outcome: StoredOutcome,
        until: Instant,
    },
}

impl Record {
    fn until(&self) -> Instant {
        match self {
            Record::InProgress { until, .. } | Record::Completed { until, .. } => *until,
        }
    }
}

/// In-memory store: at most `capacity` keys; expired records are dropped first, then the
/// records closest to expiry.
#[derive(Debug)]
pub(crate) struct MemoryStore {
    records: std::sync::Mutex<HashMap<String, Record>>,
    capacity: usize,
}

impl MemoryStore {
    /// A store holding at most `capacity` keys.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            records: std::sync::Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    fn claim_now(&self, key: &str, fingerprint: &str, hold: Duration) -> Claim {
        let now = Instant::now();
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        match records.get(key) {
            Some(r) if r.until() > now => {
                return match r {
                    Record::InProgress { fingerprint: f, .. } if f == fingerprint => {
                        Claim::InProgress
                    }
                    Record::Completed {
                        fingerprint: f,
                        outcome,
                        ..
                    } if f == fingerprint => Claim::Completed(outcome.clone()),
                    _ => Claim::Conflict,
                };
            }
            _ => {}
        }
        if records.len() >= self.capacity && !records.contains_key(key) {
            records.retain(|_, r| r.until() > now);
            while records.len() >= self.capacity {
                let Some(oldest) = records
                    .iter()
                    .min_by_key(|(_, r)| r.until())
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                records.remove(&oldest);
            }
        }
        records.insert(
            key.to_owned(),
            Record::InProgress {
                fingerprint: fingerprint.to_owned(),
                until: now + hold,
            },
        );
        Claim::Acquired
    }
}

impl IdempotencyStore for MemoryStore {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        hold: Duration,
    ) -> StoreFuture<'a, Claim> {
        Box::pin(std::future::ready(Ok(self.claim_now(
            key,
            fingerprint,
            hold,
        ))))
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        outcome: &'a StoredOutcome,
        keep: Duration,
    ) -> StoreFuture<'a, ()> {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.insert(
            key.to_owned(),
            Record::Completed {
                fingerprint: fingerprint.to_owned(),
                outcome: outcome.clone(),
                until: Instant::now() + keep,
            },
        );
        Box::pin(std::future::ready(Ok(())))
    }

    fn release<'a>(&'a self, key: &'a str, fingerprint: &'a str) -> StoreFuture<'a, ()> {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(records.get(key), Some(Record::InProgress { fingerprint: f, .. }) if f == fingerprint)
        {
            records.remove(key);
        }
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome() -> StoredOutcome {
        StoredOutcome::new(&Ok(json!(15)), Duration::from_millis(2))
    }

    #[tokio::test]
    async fn a_key_is_claimed_once_then_replayed_or_refused() {
        let store = MemoryStore::new(10);
        let hold = Duration::from_secs(5);
        assert_eq!(store.claim("k", "f1", hold).await.unwrap(), Claim::Acquired);
        assert_eq!(
            store.claim("k", "f1", hold).await.unwrap(),
            Claim::InProgress
        );
        assert_eq!(store.claim("k", "f2", hold).await.unwrap(), Claim::Conflict);
        store
            .complete("k", "f1", &outcome(), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(
            store.claim("k", "f1", hold).await.unwrap(),
            Claim::Completed(outcome())
        );
        assert_eq!(store.claim("k", "f2", hold).await.unwrap(), Claim::Conflict);
    }

    #[tokio::test]
    async fn records_expire_and_released_keys_are_free() {
        let store = MemoryStore::new(10);
        assert_eq!(
            store
                .claim("k", "f", Duration::from_millis(20))
                .await
                .unwrap(),
            Claim::Acquired
        );
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            store.claim("k", "f", Duration::from_secs(5)).await.unwrap(),
            Claim::Acquired,
            "an expired claim is free"
        );
        store.release("k", "f").await.unwrap();
        assert_eq!(
            store
                .claim("k", "other", Duration::from_secs(5))
                .await
                .unwrap(),
            Claim::Acquired
        );
    }

    #[tokio::test]
    async fn the_memory_store_is_bounded() {
        let store = MemoryStore::new(3);
        for i in 0..10 {
            store
                .claim(&format!("k{i}"), "f", Duration::from_secs(60))
                .await
                .unwrap();
        }
        assert_eq!(store.records.lock().unwrap().len(), 3);
    }
}
