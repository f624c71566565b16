//! The one concurrency pool (`OXP_MAX_CONCURRENT_CALLS`) and each caller's share of it
//! (`OXP_MAX_CONCURRENT_CALLS_PER_CALLER`).
//!
//! Without a share one caller's slow calls (a tool waiting on a slow API, a user, a lock) could
//! hold every slot, and every other caller's call waited for one until its time ran out. With a
//! share, a caller's calls past it wait for one of the caller's own to end (within the call's
//! deadline, then the same retryable "busy"), holding no slot of the pool meanwhile, so the rest
//! of the pool stays for everyone else.
//!
//! A caller is its principal's subject (every call without one is the one anonymous caller). Its
//! share is a semaphore of its own, kept while the caller has a call waiting or running and
//! dropped with its last, so the table holds no more callers than calls in flight.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};

/// The longest a call without a deadline waits for a free slot.
const MAX_SLOT_WAIT: Duration = Duration::from_secs(30);

/// Each caller's own slots, by caller.
type Table = HashMap<Box<str>, Arc<Semaphore>, foldhash::quality::RandomState>;

/// Each caller's share of the pool: its own slots, while it has calls waiting or running.
#[derive(Debug)]
struct Shares {
    per_caller: usize,
    by_caller: Mutex<Table>,
}

impl Shares {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.by_caller.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The pool, and each caller's share of it when callers are told apart.
#[derive(Debug)]
pub(super) struct Slots {
    pool: Semaphore,
    shares: Option<Shares>,
}

/// A slot held: the pool's, and the caller's own where shares are kept.
pub(super) struct Slot<'a> {
    _pool: SemaphorePermit<'a>,
    _own: Option<Own<'a>>,
}

/// One of a caller's own slots, or the wait for one; its caller is forgotten with its last.
struct Own<'a> {
    shares: &'a Shares,
    caller: Box<str>,
    semaphore: Option<Arc<Semaphore>>,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for Own<'_> {
    fn drop(&mut self) {
        drop(self.permit.take());
        drop(self.semaphore.take());
        let mut table = self.shares.table();
        // Only the table holds it now: no call of this caller waits or runs.
        if table
            .get(&self.caller)
            .is_some_and(|own| Arc::strong_count(own) == 1)
        {
            table.remove(&self.caller);
        }
    }
}

impl Slots {
    /// A pool of `max` slots, shared by every caller.
    pub(super) fn new(max: usize) -> Self {
        Self {
            pool: Semaphore::new(max),
            shares: None,
        }
    }

    /// The pool with at most `per_caller` slots a caller (none kept at or above the pool's size).
    pub(super) fn with_share(self, per_caller: usize) -> Self {
        let shares = (per_caller < self.pool.available_permits()).then(|| Shares {
            per_caller: per_caller.max(1),
            by_caller: Mutex::default(),
        });
        Self { shares, ..self }
    }

    /// A slot for a call of `caller`: at once when one is free, else until `deadline` (or
    /// [`MAX_SLOT_WAIT`] at most). The caller's own slot first, so a caller past its share
    /// waits holding none of the pool's. `None`: none came free in time.
    pub(super) async fn take(
        &self,
        caller: Option<&str>,
        deadline: Option<Instant>,
    ) -> Option<Slot<'_>> {
        let longest = || {
            let longest = Instant::now() + MAX_SLOT_WAIT;
            deadline.map_or(longest, |d| d.min(longest))
        };
        let own = match &self.shares {
            None => None,
            Some(shares) => Some(own_slot(shares, caller.unwrap_or_default(), longest).await?),
        };
        let pool = match self.pool.try_acquire() {
            Ok(slot) => slot,
            Err(_) => tokio::time::timeout_at(longest().into(), self.pool.acquire())
                .await
                .ok()?
                .ok()?,
        };
        Some(Slot {
            _pool: pool,
            _own: own,
        })
    }
}

/// One of `caller`'s own slots, waiting until `until` at most.
async fn own_slot<'a>(
    shares: &'a Shares,
    caller: &str,
    until: impl Fn() -> Instant,
) -> Option<Own<'a>> {
    let semaphore = shares
        .table()
        .entry(caller.into())
        .or_insert_with(|| Arc::new(Semaphore::new(shares.per_caller)))
        .clone();
    // From here on the caller is forgotten on every way out, a slot taken or not.
    let mut own = Own {
        shares,
        caller: caller.into(),
        semaphore: Some(semaphore.clone()),
        permit: None,
    };
    own.permit = Some(match semaphore.clone().try_acquire_owned() {
        Ok(permit) => permit,
        Err(_) => tokio::time::timeout_at(until().into(), semaphore.acquire_owned())
            .await
            .ok()?
            .ok()?,
    });
    Some(own)
}

/// How many callers hold or wait for slots of their own.
#[cfg(test)]
pub(super) fn callers(slots: &Slots) -> usize {
    slots.shares.as_ref().map_or(0, |s| s.table().len())
}

#[cfg(test)]
mod tests {
    use super::{Slots, callers};
    use std::time::{Duration, Instant};

    fn soon() -> Option<Instant> {
        Some(Instant::now() + Duration::from_millis(50))
    }

    #[tokio::test]
    async fn a_caller_past_its_share_waits_holding_no_slot_while_another_caller_takes_one() {
        let slots = Slots::new(4).with_share(2);
        let alice = [
            slots.take(Some("alice"), soon()).await.expect("her first"),
            slots.take(Some("alice"), soon()).await.expect("her second"),
        ];
        assert!(
            slots.take(Some("alice"), soon()).await.is_none(),
            "her third waits for one of her own, then is busy"
        );
        let started = Instant::now();
        let bob = slots
            .take(Some("bob"), soon())
            .await
            .expect("bob's at once");
        assert!(started.elapsed() < Duration::from_millis(20));
        let anonymous = slots
            .take(None, soon())
            .await
            .expect("two of four were free");
        assert_eq!(callers(&slots), 3);
        drop((alice, bob, anonymous));
        assert_eq!(
            callers(&slots),
            0,
            "each caller forgotten with its last slot"
        );
    }

    #[tokio::test]
    async fn a_callers_waiting_call_takes_its_slot_when_one_of_its_own_ends() {
        let slots = Slots::new(8).with_share(1);
        let first = slots.take(Some("alice"), soon()).await.unwrap();
        let later = Some(Instant::now() + Duration::from_secs(5));
        let (second, ()) = tokio::join!(slots.take(Some("alice"), later), async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            drop(first);
        });
        assert!(second.is_some());
        drop(second);
        assert_eq!(callers(&slots), 0);
    }

    #[tokio::test]
    async fn without_a_share_the_pool_alone_bounds_a_caller() {
        let slots = Slots::new(2).with_share(2);
        let both = [
            slots.take(Some("alice"), soon()).await.unwrap(),
            slots.take(Some("alice"), soon()).await.unwrap(),
        ];
        assert_eq!(callers(&slots), 0, "no share kept at the pool's size");
        assert!(slots.take(Some("bob"), soon()).await.is_none());
        drop(both);
    }
}
