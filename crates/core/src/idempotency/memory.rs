//! The in-memory idempotency store: the local default, and per execution environment in Lambda.
//!
//! Completed outcomes live in a `quick_cache` cache bounded by bytes
//! (`OXP_IDEMPOTENCY_MAX_BYTES`): a caller who sends many large calls evicts stored outcomes,
//! never memory. An entry weighs its key, its fingerprint and its outcome's JSON and what it
//! takes beside them ([`ENTRY_OVERHEAD`]), so the bound is near the memory the store holds.
//! Each outcome carries when it was stored and for how long; one read past that is dropped.
//! In-progress claims live apart, so eviction never takes one (a duplicate would then run the
//! tool again); they are few, since a call claims its key only once it holds an execution slot.
//!
//! Not `moka`: under load every call with a new `call_id` inserts an outcome, and `moka`'s
//! bookkeeping (its per-entry timers, its frequency sketch, its write log) cost more per call
//! than the rest of the store (docs/performance.md has the figures).

use super::{Claim, IdempotencyStore, StoreFuture, StoredOutcome};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A stored outcome, what it answers, when it was stored and for how long, what it weighs.
#[derive(Debug)]
struct Completed {
    fingerprint: String,
    outcome: StoredOutcome,
    at: Instant,
    keep: Duration,
    bytes: u64,
}

/// What an entry costs: its key, fingerprint and outcome as stored (weighed once, at insert).
#[derive(Clone)]
struct ByBytes;

impl quick_cache::Weighter<String, Arc<Completed>> for ByBytes {
    fn weight(&self, key: &String, value: &Arc<Completed>) -> u64 {
        key.len() as u64 + value.bytes
    }
}

/// The bytes an entry takes beside its key, its fingerprint and its outcome's JSON: the cache's
/// slot and index, the entry's record (the outcome's fields, the times), each allocation's
/// header and the allocator's rounding. Measured (2026-12-04, 300,000 small outcomes): the
/// process grew by 433 bytes an entry, which this weighs 437; with 64 bytes here, as before,
/// the store took about 2.4 times `OXP_IDEMPOTENCY_MAX_BYTES`.
const ENTRY_OVERHEAD: u64 = 320;

/// Counts the bytes of a value's JSON without keeping them.
struct Count(u64);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An in-progress claim: its fingerprint and when it lapses.
type Claimed = (String, Instant);

/// The claims in progress, by key.
type Claims = HashMap<String, Claimed, foldhash::quality::RandomState>;

/// In-memory store: completed outcomes bounded by bytes, in-progress claims apart.
pub struct MemoryStore {
    /// Hashed as the cache hashes its keys, with foldhash's seeded quality hasher, where
    /// SipHash (std's default) cost a call with a call id about 800 instructions over its three
    /// lookups. The keys are callers' call ids, and foldhash claims no resistance to a caller
    /// who learns its hashes; the table holds only the calls in flight (each an open request
    /// or a running job, both bounded: `OXP_MAX_CONNECTIONS`, `OXP_WORK_RUNNING_MAX`) and
    /// claims lapsed since, swept at 1,024, so colliding ids slow a lookup by that many at most.
    in_progress: Mutex<Claims>,
    completed: quick_cache::sync::Cache<String, Arc<Completed>, ByBytes>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// A store whose completed outcomes take at most about `max_bytes`.
    pub fn new(max_bytes: u64) -> Self {
        // The item estimate only sizes the cache's memory of recently evicted keys; its table
        // grows as outcomes come. A small outcome weighs about 450 bytes.
        let items = usize::try_from(max_bytes / 450)
            .unwrap_or(usize::MAX)
            .max(16);
        Self {
            in_progress: Mutex::new(HashMap::default()),
            completed: quick_cache::sync::Cache::with_weighter(items, max_bytes.max(1), ByBytes),
        }
    }

    /// The outcome stored under `key`, unless its time has passed (then it is dropped).
    fn completed(&self, key: &str, now: Instant) -> Option<Arc<Completed>> {
        let done = self.completed.get(key)?;
        if now.saturating_duration_since(done.at) < done.keep {
            return Some(done);
        }
        // This one only: a fresh outcome stored meanwhile under the same key stays.
        self.completed
            .remove_if(key, |now_stored| Arc::ptr_eq(now_stored, &done));
        None
    }

    fn claim_now(&self, key: &str, fingerprint: &str, hold: Duration) -> Claim {
        let now = Instant::now();
        let mut claims = self.in_progress.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(done) = self.completed(key, now) {
            return if done.fingerprint == fingerprint {
                Claim::Completed(done.outcome.clone())
            } else {
                Claim::Conflict
            };
        }
        match claims.get(key) {
            Some((f, until)) if *until > now => {
                return if f == fingerprint {
                    Claim::InProgress
                } else {
                    Claim::Conflict
                };
            }
            _ => {}
        }
        // Claims of calls that died lapse; drop them now and then, not on every call.
        if claims.len() >= 1024 {
            claims.retain(|_, (_, until)| *until > now);
        }
        claims.insert(key.to_owned(), (fingerprint.to_owned(), now + hold));
        Claim::Acquired
    }

    /// Removes `key`'s claim if `fingerprint` holds it.
    fn unclaim(&self, key: &str, fingerprint: &str) {
        let mut claims = self.in_progress.lock().unwrap_or_else(|e| e.into_inner());
        take_claim(&mut claims, key, fingerprint);
    }
}

/// Takes `key`'s claim out of `claims` if `fingerprint` holds it: its key and fingerprint.
fn take_claim(claims: &mut Claims, key: &str, fingerprint: &str) -> Option<(String, String)> {
    match claims.get(key) {
        Some((held, _)) if held == fingerprint => claims
            .remove_entry(key)
            .map(|(key, (fingerprint, _))| (key, fingerprint)),
        _ => None,
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
        let mut size = Count(0);
        // Serializing into a counter cannot fail: a value that could not be written weighs 0.
        let _ = serde_json::to_writer(&mut size, outcome);
        let bytes = fingerprint.len() as u64 + size.0 + ENTRY_OVERHEAD;
        let outcome = outcome.clone();
        let mut claims = self.in_progress.lock().unwrap_or_else(|e| e.into_inner());
        // The claim's own key and fingerprint become the outcome's, not copied again; swapped
        // under the claims' lock, so a repeat finds the claim or the outcome, never neither.
        let (key, fingerprint) = take_claim(&mut claims, key, fingerprint)
            .unwrap_or_else(|| (key.to_owned(), fingerprint.to_owned()));
        let done = Completed {
            bytes,
            fingerprint,
            outcome,
            at: Instant::now(),
            keep,
        };
        self.completed.insert(key, Arc::new(done));
        drop(claims);
        Box::pin(std::future::ready(Ok(())))
    }

    fn release<'a>(&'a self, key: &'a str, fingerprint: &'a str) -> StoreFuture<'a, ()> {
        self.unclaim(key, fingerprint);
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome() -> StoredOutcome {
        StoredOutcome::new(&Ok(json!(15).into()), Duration::from_millis(2))
    }

    #[tokio::test]
    async fn a_key_is_claimed_once_then_replayed_or_refused() {
        let store = MemoryStore::new(1 << 20);
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
    async fn a_repeat_gets_the_stored_outcome_whole_content_and_errors_included() {
        use crate::content::{Content, ToolOutput};
        use crate::tool::ToolError;
        let store = MemoryStore::new(1 << 20);
        let hold = Duration::from_secs(60);
        let output = ToolOutput::new(json!({"sum": 0.1 + 0.2, "note": "\u{2603} \"quoted\""}))
            .content(Content::text("a line"))
            .content(Content::image(vec![0, 255, 7], "image/png"));
        let failed = ToolError::new("no").developer_message("why not");
        for (key, result) in [("ok", Ok(output)), ("failed", Err(failed))] {
            let stored = StoredOutcome::new(&result, Duration::from_micros(1_234));
            store.claim(key, "f", hold).await.unwrap();
            store.complete(key, "f", &stored, hold).await.unwrap();
            assert_eq!(
                store.claim(key, "f", hold).await.unwrap(),
                Claim::Completed(stored),
                "{key}"
            );
        }
    }

    #[tokio::test]
    async fn each_outcome_weighs_what_it_takes_beside_its_json_so_the_bound_is_near_its_memory() {
        let store = MemoryStore::new(64 * 1024);
        let hold = Duration::from_secs(60);
        for i in 0..10_000 {
            let key = format!("k{i}");
            store.claim(&key, "f", hold).await.unwrap();
            store.complete(&key, "f", &outcome(), hold).await.unwrap();
        }
        // An outcome of a few bytes still takes its entry: weighed by its JSON and 64 bytes, a
        // 64 KiB store kept 660 of them, more than three times what fits.
        let most = 64 * 1024 / ENTRY_OVERHEAD;
        assert!(
            (store.completed.len() as u64) <= most,
            "{} outcomes kept",
            store.completed.len()
        );
    }

    #[test]
    fn a_repeat_while_the_outcome_is_stored_finds_the_claim_or_the_outcome_never_a_free_key() {
        use futures_util::FutureExt;
        const HOLD: Duration = Duration::from_secs(60);
        fn claim(store: &MemoryStore, key: &str) -> Claim {
            let answer = store.claim(key, "f", HOLD).now_or_never();
            answer
                .expect("ready when made")
                .expect("the memory store answers")
        }
        let store = Arc::new(MemoryStore::new(1 << 24));
        for round in 0..500 {
            let key = format!("k{round}");
            assert_eq!(claim(&store, &key), Claim::Acquired);
            let repeats = {
                let (store, key) = (store.clone(), key.clone());
                std::thread::spawn(move || {
                    (0..200)
                        .map(|_| claim(&store, &key))
                        .filter(|c| !matches!(c, Claim::InProgress | Claim::Completed(_)))
                        .count()
                })
            };
            let stored = store.complete(&key, "f", &outcome(), HOLD).now_or_never();
            stored.expect("ready when made").unwrap();
            assert_eq!(
                repeats.join().unwrap(),
                0,
                "a repeat of {key} found it free"
            );
        }
    }

    #[tokio::test]
    async fn records_expire_and_released_keys_are_free() {
        let store = MemoryStore::new(1 << 20);
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
        store
            .complete("k", "other", &outcome(), Duration::from_millis(20))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            store.claim("k", "f", Duration::from_secs(5)).await.unwrap(),
            Claim::Acquired,
            "an outcome kept past its time is gone"
        );
    }

    #[tokio::test]
    async fn stored_outcomes_are_bounded_by_bytes_and_claims_in_progress_are_never_evicted() {
        let store = MemoryStore::new(64 * 1024);
        let hold = Duration::from_secs(60);
        assert_eq!(
            store.claim("running", "f", hold).await.unwrap(),
            Claim::Acquired
        );
        let big = StoredOutcome::new(&Ok(json!("x".repeat(4096)).into()), Duration::ZERO);
        for i in 0..200 {
            let key = format!("k{i}");
            store.claim(&key, "f", hold).await.unwrap();
            store.complete(&key, "f", &big, hold).await.unwrap();
        }
        assert!(
            store.completed.weight() <= 64 * 1024,
            "{} bytes stored",
            store.completed.weight()
        );
        assert!(store.completed.len() < 200, "outcomes were evicted");
        assert_eq!(
            store.claim("running", "f", hold).await.unwrap(),
            Claim::InProgress,
            "the claim in progress is still held"
        );
    }
}
