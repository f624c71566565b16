//! The one concurrency pool (`OXP_MAX_CONCURRENT_CALLS`) and each caller's share of it
//! (`OXP_MAX_CONCURRENT_CALLS_PER_CALLER`).
//!
//! Without a share one caller's slow calls (a tool waiting on a slow API, a user, a lock) could
//! hold every slot, and every other caller's call waited for one until its time ran out. With a
//! share, a caller's calls past it wait for one of the caller's own to end (within the call's
//! deadline, then the same retryable "busy"), holding no slot of the pool meanwhile, so the rest
//! of the pool stays for everyone else; as many as its share wait at most, the next is busy at
//! once (each holds its request in memory: their number was bounded only by the connections
//! the caller could open).
//!
//! A caller is its principal's subject. A call without one has no share: where callers are not
//! told apart (`OXP_AUTH=none`) no shares are kept at all, and where they are, only the roles
//! Lambda invokes directly (for one gateway or agent) call without a subject. A caller's share is
//! a semaphore of its own, kept in a table while the caller has calls in flight and after, so
//! that a caller's next call finds it (no allocation); callers with none in flight leave the
//! table when it reaches [`SWEEP_AT`], so it holds at most that many idle ones.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};

/// The longest a call without a deadline waits for a free slot.
const MAX_SLOT_WAIT: Duration = Duration::from_secs(30);
/// Callers the table holds before those with no call in flight are let go.
const SWEEP_AT: usize = 1024;

/// Each caller's own slots, by caller. A caller's semaphore is held beside the table's by each
/// of its calls in flight (a permit holds it, and so does a wait for one).
type Table = HashMap<Box<str>, Arc<Semaphore>, foldhash::quality::RandomState>;

/// Each caller's share of the pool.
#[derive(Debug)]
struct Shares {
    per_caller: usize,
    by_caller: Mutex<Table>,
}

impl Shares {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.by_caller.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `caller`'s semaphore, made at its first call.
    fn of(&self, caller: &str) -> Arc<Semaphore> {
        let mut table = self.table();
        if let Some(own) = table.get(caller) {
            return own.clone();
        }
        if table.len() >= SWEEP_AT {
            table.retain(|_, own| Arc::strong_count(own) > 1);
        }
        let own = Arc::new(Semaphore::new(self.per_caller));
        table.insert(caller.into(), own.clone());
        own
    }

    /// Whether as many of a caller's calls wait for one of its own slots as it has slots
    /// (`own`, this call's copy of its semaphore): another is busy at once, so that a caller's
    /// calls in flight, each holding its request, are at most twice its share.
    fn queue_full(&self, own: &Arc<Semaphore>) -> bool {
        let running = self.per_caller - own.available_permits();
        // Beside a copy for each call in flight: the table's and this call's.
        let waiting = Arc::strong_count(own).saturating_sub(2 + running);
        waiting >= self.per_caller
    }
}

/// The pool, and each caller's share of it when callers are told apart.
#[derive(Debug)]
pub(super) struct Slots {
    pool: Semaphore,
    shares: Option<Shares>,
}

/// Which slots stayed full: the caller's own share, or the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    Own,
    Pool,
}

impl Full {
    /// The refusal of call `call_id`, which waited in vain.
    pub(super) fn busy(self, call_id: String) -> crate::refusal::Rejection {
        let own_share = self == Self::Own;
        crate::refusal::Rejection::Busy { call_id, own_share }
    }
}

/// A slot held: the pool's, and the caller's own where it has a share.
pub(super) struct Slot<'a> {
    _pool: SemaphorePermit<'a>,
    _own: Option<OwnedSemaphorePermit>,
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

    /// A slot for a call of `caller` when one is free now (the caller's own too): no waiting,
    /// and no future to keep, on the common path.
    pub(super) fn try_take(&self, caller: Option<&str>) -> Result<Slot<'_>, Full> {
        let own = match (&self.shares, caller) {
            (Some(shares), Some(caller)) => Some(
                shares
                    .of(caller)
                    .try_acquire_owned()
                    .map_err(|_| Full::Own)?,
            ),
            _ => None,
        };
        Ok(Slot {
            _pool: self.pool.try_acquire().map_err(|_| Full::Pool)?,
            _own: own,
        })
    }

    /// A slot for a call of `caller`: [`Slots::try_take`]'s, else [`Slots::take`]'s wait,
    /// boxed where it is awaited (the call's future keeps no room for a wait it rarely has).
    pub(super) async fn take_or_wait(
        &self,
        caller: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Slot<'_>, Full> {
        match self.try_take(caller) {
            Ok(slot) => Ok(slot),
            Err(_) => Box::pin(self.take(caller, deadline)).await,
        }
    }

    /// A slot for a call of `caller`: at once when one is free, else until `deadline` (or
    /// [`MAX_SLOT_WAIT`] at most). The caller's own slot first, so a caller past its share
    /// waits holding none of the pool's. `Err`: which stayed full.
    pub(super) async fn take(
        &self,
        caller: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Slot<'_>, Full> {
        // One wait in all, the caller's and the pool's together (read from the clock only when
        // a wait is needed).
        let mut waits_until = None;
        let mut until = || -> tokio::time::Instant {
            let longest = *waits_until.get_or_insert_with(|| Instant::now() + MAX_SLOT_WAIT);
            deadline.map_or(longest, |d| d.min(longest)).into()
        };
        let own = match (&self.shares, caller) {
            (Some(shares), Some(caller)) => {
                let own = shares.of(caller);
                Some(match own.clone().try_acquire_owned() {
                    Ok(slot) => slot,
                    Err(_) if shares.queue_full(&own) => return Err(Full::Own),
                    Err(_) => tokio::time::timeout_at(until(), own.acquire_owned())
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .ok_or(Full::Own)?,
                })
            }
            _ => None,
        };
        let (pool, pool_waited) = match self.pool.try_acquire() {
            Ok(slot) => (slot, false),
            Err(_) => match tokio::time::timeout_at(until(), self.pool.acquire()).await {
                Ok(Ok(slot)) => (slot, true),
                _ => return Err(Full::Pool),
            },
        };
        // A slot come free only at the deadline leaves the call no time to run: it was busy
        // (a tool started then would be stopped at once, a timeout "after running 0 ms"), for
        // the last of the two it waited for.
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let own_last = own.is_some() && !pool_waited;
            return Err(if own_last { Full::Own } else { Full::Pool });
        }
        Ok(Slot {
            _pool: pool,
            _own: own,
        })
    }
}

/// How many callers the table holds, and how many of them have calls in flight.
#[cfg(test)]
pub(super) fn callers(slots: &Slots) -> (usize, usize) {
    let table = slots.shares.as_ref().map(Shares::table);
    table.map_or((0, 0), |t| {
        let busy = t.values().filter(|own| Arc::strong_count(own) > 1).count();
        (t.len(), busy)
    })
}

#[cfg(test)]
mod tests {
    use super::{Full, Slots, callers};
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
        assert_eq!(
            slots.take(Some("alice"), soon()).await.err(),
            Some(Full::Own),
            "her third waits for one of her own, then is busy, her share full"
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
        assert_eq!(
            callers(&slots),
            (2, 2),
            "a call without a subject has no share"
        );
        drop((alice, bob, anonymous));
        assert_eq!(
            callers(&slots),
            (2, 0),
            "alice's timed-out wait holds nothing"
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
        assert!(second.is_ok());
        drop(second);
        assert_eq!(callers(&slots), (1, 0));
    }

    #[tokio::test]
    async fn a_caller_with_as_many_calls_waiting_as_its_share_is_busy_at_once() {
        let slots = Slots::new(8).with_share(1);
        let held = slots.take(Some("alice"), soon()).await.unwrap();
        let later = Some(Instant::now() + Duration::from_secs(5));
        let (waited, (refused, took)) = tokio::join!(slots.take(Some("alice"), later), async {
            // The first call's wait begun.
            tokio::task::yield_now().await;
            let started = Instant::now();
            let refused = slots.take(Some("alice"), later).await.err();
            let took = started.elapsed();
            drop(held);
            (refused, took)
        });
        assert_eq!(refused, Some(Full::Own), "her share's one wait taken");
        assert!(took < Duration::from_millis(20), "at once: {took:?}");
        assert!(waited.is_ok(), "the waiting call took the slot come free");
        drop(waited);
        let bob = slots.take(Some("bob"), soon()).await;
        assert!(bob.is_ok(), "another caller's share is its own");
    }

    #[tokio::test]
    async fn a_slot_come_free_only_at_the_deadline_is_busy_not_a_run_with_no_time() {
        let slots = Slots::new(2).with_share(1);
        let past = Some(Instant::now());
        assert_eq!(slots.take(Some("alice"), past).await.err(), Some(Full::Own));
        assert_eq!(slots.take(None, past).await.err(), Some(Full::Pool));
        assert_eq!(callers(&slots).1, 0, "nothing held");
        assert!(slots.take(Some("alice"), soon()).await.is_ok());
    }

    #[tokio::test]
    async fn without_a_share_the_pool_alone_bounds_a_caller() {
        let slots = Slots::new(2).with_share(2);
        let both = [
            slots.take(Some("alice"), soon()).await.unwrap(),
            slots.take(Some("alice"), soon()).await.unwrap(),
        ];
        assert_eq!(callers(&slots), (0, 0), "no share kept at the pool's size");
        let bob = slots.take(Some("bob"), soon()).await.err();
        assert_eq!(bob, Some(Full::Pool), "the pool full, not his share");
        drop(both);
    }

    #[tokio::test]
    async fn callers_with_no_call_in_flight_leave_the_table_once_it_is_full() {
        let slots = Slots::new(8).with_share(2);
        let held = slots.take(Some("alice"), soon()).await.unwrap();
        for n in 0..3 * super::SWEEP_AT {
            drop(
                slots
                    .take(Some(&format!("caller-{n}")), soon())
                    .await
                    .unwrap(),
            );
        }
        let (kept, busy) = callers(&slots);
        assert!(kept <= super::SWEEP_AT, "{kept} callers kept");
        assert_eq!(busy, 1, "alice, whose call runs, stays");
        drop(held);
    }
}
