//! Each caller's share of the outcomes `OXP_IDEMPOTENCY=state` keeps in the local state store
//! (`OXP_IDEMPOTENCY_MAX_BYTES_PER_CALLER`): that store is one file on one disk, which no caller
//! may fill for everyone. A caller past its share has its own oldest deleted ([`Books::wrote`]),
//! never another caller's.
//!
//! The books are this process's, which is every process of that file (its lock lets one in):
//! the outcomes it wrote, per caller in the order written (with one time to keep, also the order
//! they expire; the core's [`Shares`], as the in-memory idempotency store keeps them), each with a
//! stamp, so that a deletion takes that outcome and never a later one under the same key. Those
//! an earlier run wrote are not counted: they expire on their own within the time kept. The
//! books hold what is live: a caller's expired outcomes leave them when it writes again, and
//! every caller's at every 1,024th write. (Records that must be counted across processes, as on
//! a DynamoDB table, take slots of a [`crate::state::share::Share`] instead; evicting the oldest
//! needs the order these books keep.)

use oxp_lambda_core::idempotency::Shares;
use std::sync::Mutex;
use std::time::Instant;

/// What a record costs the store beside its key and value, as an outcome's weight counts it:
/// its expiry's index entry, the B-tree's pages (part free), the pages a write copies before the
/// last are freed. Measured (2026-12-04, 20,000 small outcomes of 50 callers into a fresh file,
/// each claimed, then stored): the file grew by 556 bytes an outcome, which this weighs 561.
pub(crate) const ROW_OVERHEAD: u64 = 448;

/// Writes between two sweeps of every caller's expired outcomes.
const SWEEP_EVERY: u32 = 1024;

/// What the books' lock guards: the last stamp given out, the writes since the last sweep, and
/// each caller's outcomes by stamp, each with its key and when its time passes.
struct Inner {
    stamp: u64,
    writes: u32,
    shares: Shares<(Box<str>, Instant)>,
}

impl Inner {
    /// Lets go of `key`'s caller's expired records, and every 1,024th time of every caller's.
    fn sweep(&mut self, key: &str, now: Instant) {
        let expired = |(_, until): &(Box<str>, Instant)| *until <= now;
        self.writes += 1;
        if self.writes >= SWEEP_EVERY {
            self.writes = 0;
            self.shares.forget_all_oldest_while(expired);
        } else {
            self.shares.forget_oldest_while(key, expired);
        }
    }
}

/// Every caller's records this process wrote, each caller's bounded by its share.
pub(crate) struct Books(Mutex<Inner>);

impl std::fmt::Debug for Books {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Books").field(&self.inner().shares).finish()
    }
}

impl Books {
    /// Books of `per_caller` a caller, in the unit its records are weighed in (bytes, marks).
    pub(crate) fn new(per_caller: u64) -> Self {
        // Stamps start at random: a record an earlier run stamped is never taken for this one's
        // (and, below 2^63, they only grow, as the shares' numbers must).
        let stamp = uuid::Uuid::new_v4().as_u64_pair().0 >> 1;
        Self(Mutex::new(Inner {
            stamp,
            writes: 0,
            shares: Shares::new(per_caller),
        }))
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stamp of the next outcome written.
    pub(crate) fn stamp(&self) -> u64 {
        let mut inner = self.inner();
        inner.stamp += 1;
        inner.stamp
    }

    /// Counts the outcome written under `key` with `stamp`, `bytes` long, kept until `until`:
    /// the caller's oldest outcomes that no longer fit beside it (the new one itself, where it
    /// alone is over the share), their keys and stamps, to delete.
    pub(crate) fn wrote(
        &self,
        key: &str,
        stamp: u64,
        bytes: u64,
        until: Instant,
    ) -> Vec<(Box<str>, u64)> {
        let mut inner = self.inner();
        inner.sweep(key, Instant::now());
        let over = inner.shares.add(key, stamp, bytes, (key.into(), until));
        over.into_iter()
            .map(|(stamp, (key, _))| (key, stamp))
            .collect()
    }

    /// The bytes and outcomes `key`'s caller holds, and how many callers the books hold.
    #[cfg(test)]
    pub(crate) fn held(&self, key: &str) -> (u64, usize, usize) {
        let inner = self.inner();
        let (bytes, count) = inner.shares.held(key);
        (bytes, count, inner.shares.totals().0)
    }
}
