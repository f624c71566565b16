//! Each caller's share of the outcomes `OXP_IDEMPOTENCY=state` writes to the state store
//! (`OXP_IDEMPOTENCY_MAX_BYTES_PER_CALLER`). Locally that store is one file on one disk, which
//! every caller's outcomes fill for `OXP_IDEMPOTENCY_TTL_SECS` each: a caller past its share has
//! its own oldest outcomes deleted, never another caller's.
//!
//! The books are this process's: the outcomes it wrote, per caller in the order written (with
//! the store's one time to keep, also the order they expire), each with the stamp written into
//! its record, so that a deletion takes that outcome and never a later one under the same key.
//! Outcomes an earlier run wrote are not counted: they expire on their own within the time kept.
//! The books hold what is live: a caller's expired outcomes leave them when it writes again, and
//! every caller's at every 1,024th write.

use oxp_lambda_core::idempotency::caller_tag;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

/// What a record costs the store beside its key and value, as an outcome's weight counts it:
/// its expiry's index entry, the B-tree's pages (part free), the pages a write copies before the
/// last are freed. Measured (2026-12-04, 20,000 small outcomes of 50 callers into a fresh file,
/// each claimed, then stored): the file grew by 556 bytes an outcome, which this weighs 561.
pub(super) const ROW_OVERHEAD: u64 = 448;

/// Writes between two sweeps of every caller's expired outcomes.
const SWEEP_EVERY: u32 = 1024;

/// One outcome written: its key, stamp, weight and end.
struct Written {
    key: Box<str>,
    stamp: u64,
    bytes: u64,
    until: Instant,
}

/// One caller's outcomes, oldest first.
#[derive(Default)]
struct Fifo {
    bytes: u64,
    written: VecDeque<Written>,
}

impl Fifo {
    /// Lets go of the outcomes whose time has passed (the store deletes them itself).
    fn expire(&mut self, now: Instant) {
        while let Some(first) = self.written.front().filter(|w| w.until <= now) {
            self.bytes -= first.bytes;
            self.written.pop_front();
        }
    }
}

#[derive(Default)]
struct Inner {
    next: u64,
    writes: u32,
    by_caller: HashMap<Box<str>, Fifo>,
}

/// Every caller's outcomes this process wrote, each caller's bounded by its share.
pub(super) struct Books {
    per_caller: u64,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Books {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Books")
            .field("per_caller", &self.per_caller)
            .finish_non_exhaustive()
    }
}

impl Books {
    /// Books of `per_caller` bytes a caller.
    pub(super) fn new(per_caller: u64) -> Self {
        // Stamps start at random: a record an earlier run stamped is never taken for this one's.
        let next = uuid::Uuid::new_v4().as_u64_pair().0 >> 1;
        Self {
            per_caller,
            inner: Mutex::new(Inner {
                next,
                ..Inner::default()
            }),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stamp of the next outcome written.
    pub(super) fn stamp(&self) -> u64 {
        let mut inner = self.inner();
        inner.next = inner.next.wrapping_add(1);
        inner.next
    }

    /// Counts the outcome written under `key` with `stamp`, `bytes` long, kept until `until`:
    /// the caller's oldest outcomes that no longer fit beside it (the new one itself, where it
    /// alone is over the share), their keys and stamps, to delete.
    pub(super) fn wrote(
        &self,
        key: &str,
        stamp: u64,
        bytes: u64,
        until: Instant,
    ) -> Vec<(Box<str>, u64)> {
        let now = Instant::now();
        let mut inner = self.inner();
        inner.writes += 1;
        if inner.writes >= SWEEP_EVERY {
            inner.writes = 0;
            inner.by_caller.retain(|_, fifo| {
                fifo.expire(now);
                !fifo.written.is_empty()
            });
        }
        let tag = caller_tag(key);
        let fifo = match inner.by_caller.get_mut(tag) {
            Some(fifo) => fifo,
            None => inner.by_caller.entry(tag.into()).or_default(),
        };
        fifo.expire(now);
        fifo.bytes += bytes;
        let key = key.into();
        fifo.written.push_back(Written {
            key,
            stamp,
            bytes,
            until,
        });
        let mut over = Vec::new();
        while fifo.bytes > self.per_caller {
            let Some(oldest) = fifo.written.pop_front() else {
                break;
            };
            fifo.bytes -= oldest.bytes;
            over.push((oldest.key, oldest.stamp));
        }
        if fifo.written.is_empty() {
            inner.by_caller.remove(tag);
        }
        over
    }

    /// The bytes and outcomes `key`'s caller holds, and how many callers the books hold.
    #[cfg(test)]
    pub(super) fn held(&self, key: &str) -> (u64, usize, usize) {
        let inner = self.inner();
        let fifo = inner.by_caller.get(caller_tag(key));
        let (bytes, count) = fifo.map_or((0, 0), |f| (f.bytes, f.written.len()));
        (bytes, count, inner.by_caller.len())
    }
}
