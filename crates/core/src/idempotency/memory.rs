//! The in-memory idempotency store: the local default, and per execution environment in Lambda.
//!
//! Completed outcomes live in a `quick_cache` cache bounded by bytes
//! (`OXP_IDEMPOTENCY_MAX_BYTES`): a caller who sends many large calls evicts stored outcomes,
//! never memory, and with a share per caller ([`MemoryStore::with_share`], [`Shares`]) only
//! its own. An entry weighs its key, its fingerprint and its outcome's JSON and what it takes
//! beside them (`ENTRY_OVERHEAD`), so the bound is near the memory the store holds.
//! Each outcome carries when it was stored and for how long; one read past that is dropped.
//! In-progress claims live apart, so eviction never takes one (a duplicate would then run the
//! tool again); they are few, since a call claims its key only once it holds an execution slot.
//!
//! Not `moka`: under load every call with a new `call_id` inserts an outcome, and `moka`'s
//! bookkeeping (its per-entry timers, its frequency sketch, its write log) cost more per call
//! than the rest of the store (docs/performance.md has the figures).

mod evictions;

use super::{Claim, IdempotencyStore, Shares, StoreFuture, StoredOutcome};
use evictions::{Evicted, Evictions, SHARE_OVERHEAD};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A stored outcome, what it answers, when it was stored and for how long, what it weighs, and
/// the number its caller's share lists it under (0 without shares).
#[derive(Debug)]
struct Completed {
    fingerprint: String,
    outcome: StoredOutcome,
    at: Instant,
    keep: Duration,
    bytes: u64,
    number: u64,
}

/// What an entry costs: its key, fingerprint and outcome as stored (weighed once, at insert).
#[derive(Clone)]
struct ByBytes;

impl quick_cache::Weighter<Arc<str>, Arc<Completed>> for ByBytes {
    fn weight(&self, key: &Arc<str>, value: &Arc<Completed>) -> u64 {
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
type Claims = HashMap<Arc<str>, Claimed, foldhash::quality::RandomState>;

/// What the store's one lock guards: the claims in progress and, with shares, each caller's
/// outcomes by the number each was stored under (the last given out in `stored`).
struct Books {
    claims: Claims,
    shares: Option<Shares<Arc<str>>>,
    stored: u64,
}

/// The stored outcomes, by key.
type Outcomes = quick_cache::sync::Cache<
    Arc<str>,
    Arc<Completed>,
    ByBytes,
    quick_cache::DefaultHashBuilder,
    Evictions,
>;

/// In-memory store: completed outcomes bounded by bytes (and, with shares, each caller's by its
/// share), in-progress claims apart.
pub struct MemoryStore {
    /// The claims, hashed as the cache hashes its keys, with foldhash's seeded quality hasher,
    /// where SipHash (std's default) cost a call with a call id about 800 instructions over its
    /// three lookups. The keys are callers' call ids, and foldhash claims no resistance to a
    /// caller who learns its hashes; the table holds only the calls in flight (each an open
    /// request or a running job, both bounded: `OXP_MAX_CONNECTIONS`, `OXP_WORK_RUNNING_MAX`)
    /// and claims lapsed since, swept at 1,024, so colliding ids slow a lookup by that many at
    /// most. The shares' table holds one entry per caller with outcomes stored.
    books: Mutex<Books>,
    completed: Outcomes,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

impl MemoryStore {
    /// A store whose completed outcomes take at most about `max_bytes`, shared by every caller.
    pub fn new(max_bytes: u64) -> Self {
        Self::with_share(max_bytes, max_bytes)
    }

    /// A store whose completed outcomes take at most about `max_bytes`, of which one caller's
    /// (its keys' [`caller_tag`](super::caller_tag)) at most `per_caller`: a caller past its
    /// share loses its own oldest outcomes, not other callers'.
    pub fn with_share(max_bytes: u64, per_caller: u64) -> Self {
        // The item estimate only sizes the cache's memory of recently evicted keys; its table
        // grows as outcomes come. A small outcome weighs about 450 bytes.
        let items = usize::try_from(max_bytes / 450)
            .unwrap_or(usize::MAX)
            .max(16);
        // One shard: every read and write of the cache is made under the books' lock anyway,
        // and a caller's room made in one shard is room for its next outcome in any.
        let options = quick_cache::OptionsBuilder::new()
            .shards(1)
            .estimated_items_capacity(items)
            .weight_capacity(max_bytes.max(1))
            .build()
            .expect("both capacities are set");
        let hasher = quick_cache::DefaultHashBuilder::default();
        Self {
            books: Mutex::new(Books {
                claims: Claims::default(),
                shares: (per_caller < max_bytes).then(|| Shares::new(per_caller)),
                stored: 0,
            }),
            completed: Outcomes::with_options(options, ByBytes, hasher, Evictions),
        }
    }

    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The outcome stored under `key`, unless its time has passed (then it is dropped).
    fn completed(&self, books: &mut Books, key: &str, now: Instant) -> Option<Arc<Completed>> {
        let done = self.completed.get(key)?;
        if now.saturating_duration_since(done.at) < done.keep {
            return Some(done);
        }
        // This one only: a fresh outcome stored meanwhile under the same key stays.
        let gone = self
            .completed
            .remove_if(key, |now_stored| Arc::ptr_eq(now_stored, &done));
        if let (Some(_), Some(shares)) = (gone, &mut books.shares) {
            shares.forget(key, done.number);
        }
        None
    }

    fn claim_now(&self, key: &str, fingerprint: &str, hold: Duration) -> Claim {
        let now = Instant::now();
        let mut books = self.books();
        if let Some(done) = self.completed(&mut books, key, now) {
            return if done.fingerprint == fingerprint {
                Claim::Completed(done.outcome.clone())
            } else {
                Claim::Conflict
            };
        }
        let claims = &mut books.claims;
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
        claims.insert(key.into(), (fingerprint.to_owned(), now + hold));
        Claim::Acquired
    }

    /// Stores `done` under `key` and counts it in its caller's share, under the books' lock.
    fn store(&self, books: &mut Books, key: Arc<str>, mut done: Completed) {
        let Some(shares) = &mut books.shares else {
            self.completed.insert(key, Arc::new(done));
            return;
        };
        done.bytes += SHARE_OVERHEAD;
        let weight = key.len() as u64 + done.bytes;
        if weight > shares.per_caller() {
            return; // More than a share: not kept, as the cache keeps nothing over its bound.
        }
        books.stored += 1;
        done.number = books.stored;
        // The caller's own oldest go first, so a caller at its share makes its own room and
        // the cache evicts nobody else's to take its new outcome.
        for (number, key) in shares.add(&key, done.number, weight, key.clone()) {
            self.completed
                .remove_if(&*key, |stored| stored.number == number);
        }
        // What the insert lets go: outcomes evicted, and one it replaces under the same key
        // (one past its time, never read since), which quick_cache reports alike.
        let mut evicted = Evicted::default();
        self.completed
            .insert_with_lifecycle(key, Arc::new(done), &mut evicted);
        for (key, number) in evicted.each() {
            shares.forget(key, number);
        }
    }
}

/// Takes `key`'s claim out of `claims` if `fingerprint` holds it: its key and fingerprint.
fn take_claim(claims: &mut Claims, key: &str, fingerprint: &str) -> Option<(Arc<str>, String)> {
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
        let mut books = self.books();
        // The claim's own key and fingerprint become the outcome's, not copied again; swapped
        // under the books' lock, so a repeat finds the claim or the outcome, never neither.
        let (key, fingerprint) = take_claim(&mut books.claims, key, fingerprint)
            .unwrap_or_else(|| (key.into(), fingerprint.to_owned()));
        let done = Completed {
            bytes,
            fingerprint,
            outcome,
            at: Instant::now(),
            keep,
            number: 0,
        };
        self.store(&mut books, key, done);
        drop(books);
        Box::pin(std::future::ready(Ok(())))
    }

    fn release<'a>(&'a self, key: &'a str, fingerprint: &'a str) -> StoreFuture<'a, ()> {
        take_claim(&mut self.books().claims, key, fingerprint);
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
#[path = "memory_tests.rs"]
mod tests;
