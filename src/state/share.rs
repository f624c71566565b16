//! A caller's share of something every caller draws on (accepted work: `OXP_WORK_MAX_PER_CALLER`;
//! its kept results' parts: `OXP_WORK_MAX_BYTES_PER_CALLER`; live subscriptions:
//! `OXP_SUBSCRIPTION_MAX_PER_CALLER`): that many numbered slots in a partition of the caller's own,
//! each taken by one holder with a conditional write (the holder's id its value, the slot's number
//! in the holder's record), renewed with the holder's lifetime and given back by its end. The bound
//! holds across every process sharing the store without anyone counting: two processes can never
//! take one slot. Taking one is a single conditional write on a slot picked at random; only when
//! that slot is taken is the share listed (to find a free one, or to see it full), so taking reads
//! no listing while the share has room (a listing is what costs on a store that walks a table to
//! answer a query, as moto does). A large share whose slots free as they expire may remember a
//! caller found at its bound for a moment ([`Share::remembering_full`]), so that a caller kept
//! there does not have every refusal list its whole share.

use futures_util::future::join_all;
use oxp_lambda_core::durable::{Item, StateError, StateStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Rounds of looking for a free slot (each one listing and one write) before the caller is
/// told to try again: only callers taking their last slots all at once need more than one.
const ROUNDS: usize = 8;

/// Why no slot was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Full {
    /// Every slot of the caller's share is held.
    Caller,
    /// The store did not answer (or the share was taken by many at once: retry).
    Unavailable(String),
}

/// Most callers a share remembers as full at once ([`Share::remembering_full`]).
const REMEMBERED: usize = 4096;

/// One kind of share: its partitions' prefix and how many slots a caller has.
#[derive(Debug, Clone)]
pub(crate) struct Share {
    prefix: &'static str,
    per_caller: usize,
    /// Callers this process found at their bound, and for how long it says so again without
    /// reading the store ([`Share::remembering_full`]).
    full: Option<(Arc<FullOnes>, Duration)>,
}

/// Callers found at their bound, each until when: at most [`REMEMBERED`] (past it, one more
/// is not remembered: its next refusal reads the store again).
#[derive(Debug, Default)]
struct FullOnes(Mutex<HashMap<String, Instant>>);

impl FullOnes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn holds(&self, caller: &str) -> bool {
        let now = Instant::now();
        self.lock().get(caller).is_some_and(|until| now < *until)
    }

    fn remember(&self, caller: &str, time: Duration) {
        let now = Instant::now();
        let mut full = self.lock();
        if full.len() >= REMEMBERED {
            full.retain(|_, until| now < *until);
        }
        if full.len() < REMEMBERED {
            full.insert(caller.to_owned(), now + time);
        }
    }

    fn forget(&self, caller: &str) {
        self.lock().remove(caller);
    }
}

impl Share {
    /// Shares of `per_caller` slots in partitions `<prefix>#<caller>`.
    pub(crate) fn new(prefix: &'static str, per_caller: usize) -> Self {
        Self {
            prefix,
            per_caller: per_caller.max(1),
            full: None,
        }
    }

    /// The same, a caller found at its bound told so again for `time` without reading the store
    /// (unless this process gives one of its slots back meanwhile): for a large share whose
    /// slots free as they expire, where a caller at its bound would otherwise have each refusal
    /// list its whole share. Another process, or a slot expiring, frees one unseen for `time`
    /// at most.
    pub(crate) fn remembering_full(mut self, time: Duration) -> Self {
        self.full = Some((Arc::default(), time));
        self
    }

    fn partition(&self, caller: &str) -> String {
        format!("{}#{caller}", self.prefix)
    }

    /// A slot to try first: any, at random (all are alike, and holders taken at once by one
    /// caller rarely try the same).
    pub(crate) fn guess(&self) -> String {
        (uuid::Uuid::new_v4().as_u128() % self.per_caller as u128).to_string()
    }

    /// Takes a slot of `caller`'s share for `holder` until `until`, slot `first` first: the
    /// slot now held.
    pub(crate) async fn take(
        &self,
        store: &dyn StateStore,
        caller: &str,
        holder: &str,
        first: &str,
        until: Option<SystemTime>,
    ) -> Result<String, Full> {
        if let Some((full, _)) = &self.full
            && full.holds(caller)
        {
            return Err(Full::Caller);
        }
        let partition = self.partition(caller);
        let unavailable = |e: StateError| Full::Unavailable(e.0);
        let mark = || Item::new(holder.as_bytes().to_vec(), until);
        let mut slot = first.to_owned();
        for _ in 0..ROUNDS {
            if store
                .put_if(&partition, &slot, mark(), None)
                .await
                .map_err(unavailable)?
            {
                return Ok(slot);
            }
            let held = store
                .list(&partition, None, self.per_caller.saturating_add(1))
                .await
                .map_err(unavailable)?;
            if held.len() >= self.per_caller {
                if let Some((full, time)) = &self.full {
                    full.remember(caller, *time);
                }
                return Err(Full::Caller);
            }
            // Of slots 0 to n, n held, one at least is free (any key listed counts as held).
            let taken: std::collections::HashSet<&str> =
                held.iter().map(|(key, _)| key.as_str()).collect();
            let free: Vec<usize> = (0..=held.len())
                .filter(|n| !taken.contains(n.to_string().as_str()))
                .collect();
            let pick = uuid::Uuid::new_v4().as_u128() % free.len().max(1) as u128;
            slot = free.get(pick as usize).copied().unwrap_or(0).to_string();
        }
        Err(Full::Unavailable(
            "a caller's share is being taken by many at once".into(),
        ))
    }

    /// Takes a slot of `caller`'s share for each of `holders` until `until`, all or none: the
    /// slots now held, in the holders' order (where one is refused, those taken are given back).
    /// The first is taken alone: a full share is found by one holder's listing, not by each's
    /// (a caller at its share would otherwise cost a listing per holder).
    pub(crate) async fn take_all(
        &self,
        store: &dyn StateStore,
        caller: &str,
        holders: &[String],
        until: Option<SystemTime>,
    ) -> Result<Vec<String>, Full> {
        let Some((first, rest)) = holders.split_first() else {
            return Ok(Vec::new());
        };
        let take = |holder| self.take_guessed(store, caller, holder, until);
        let mut taken = vec![take(first).await?];
        let others = join_all(rest.iter().map(|holder| take(holder))).await;
        let Some(refused) = others.iter().find_map(|t| t.as_ref().err().cloned()) else {
            taken.extend(others.into_iter().filter_map(Result::ok));
            return Ok(taken);
        };
        // Each slot with the holder it was taken for (a refused holder in between took none).
        let kept: Vec<_> = taken.into_iter().map(Ok).chain(others).collect();
        let held = holders.iter().zip(&kept);
        let held = held.filter_map(|(holder, t)| Some((t.as_deref().ok()?, holder.as_str())));
        self.give_back_all(store, caller, held).await;
        Err(refused)
    }

    /// Gives back each slot of `held` (with its holder), where that holder still holds it: all
    /// at once; a slot the store did not let go of expires with its holder.
    pub(crate) async fn give_back_all<'a>(
        &self,
        store: &dyn StateStore,
        caller: &str,
        held: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        let given = held.into_iter();
        let _ =
            join_all(given.map(|(slot, holder)| self.give_back(store, caller, slot, holder))).await;
    }

    /// [`Share::take`], first trying a slot picked at random.
    async fn take_guessed(
        &self,
        store: &dyn StateStore,
        caller: &str,
        holder: &str,
        until: Option<SystemTime>,
    ) -> Result<String, Full> {
        let first = self.guess();
        self.take(store, caller, holder, &first, until).await
    }

    /// Keeps `slot` of `caller`'s share for `holder` until `until` (`Some(now)` or earlier:
    /// gives it back), where `holder` still holds it: a slot another holder took since is left
    /// alone. Whether it was `holder`'s.
    pub(crate) async fn keep(
        &self,
        store: &dyn StateStore,
        caller: &str,
        slot: &str,
        holder: &str,
        until: Option<SystemTime>,
    ) -> Result<bool, StateError> {
        let item = Item::new(holder.as_bytes().to_vec(), until);
        let (partition, holder) = (self.partition(caller), Some(holder.as_bytes()));
        // A slot given back answers nobody: it shares the next flush (a new call's, which may
        // take it).
        if item.expired(SystemTime::now()) {
            if let Some((full, _)) = &self.full {
                full.forget(caller);
            }
            return store.put_if_later(&partition, slot, item, holder).await;
        }
        store.put_if(&partition, slot, item, holder).await
    }

    /// Gives `slot` of `caller`'s share back where `holder` still holds it.
    pub(crate) async fn give_back(
        &self,
        store: &dyn StateStore,
        caller: &str,
        slot: &str,
        holder: &str,
    ) -> Result<(), StateError> {
        self.keep(store, caller, slot, holder, Some(SystemTime::now()))
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn holders_taken_together_get_a_slot_each_or_none_at_all() {
        let store = crate::state::embedded::store(None).unwrap();
        let share = Share::new("test-of", 3);
        let holders = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let first = share
            .take_all(&*store, "ana", &holders(&["a", "b"]), None)
            .await;
        assert_eq!(first.map(|slots| slots.len()), Ok(2));
        // Two more do not fit beside them: the one slot left, taken by one of them, goes back.
        let refused = share
            .take_all(&*store, "ana", &holders(&["c", "d"]), None)
            .await;
        assert_eq!(refused, Err(Full::Caller));
        let held = store.list("test-of#ana", None, 10).await.unwrap();
        let values: Vec<&[u8]> = held.iter().map(|(_, item)| &item.value[..]).collect();
        assert_eq!(values.len(), 2, "{values:?}");
        assert!(values.iter().all(|v| *v == b"a" || *v == b"b"));
        let last = share.take_all(&*store, "ana", &holders(&["e"]), None).await;
        assert_eq!(last.map(|slots| slots.len()), Ok(1));
    }

    #[tokio::test]
    async fn holders_refused_in_between_others_leave_every_slot_taken_given_back() {
        let store = crate::state::embedded::store(None).unwrap();
        let share = Share::new("test-of", 3);
        let holders = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        share
            .take_all(&*store, "ana", &holders(&["a"]), None)
            .await
            .unwrap();
        // Four more for two slots, taken side by side: whichever took a slot gives it back.
        for _ in 0..8 {
            let refused = share
                .take_all(&*store, "ana", &holders(&["b", "c", "d", "e"]), None)
                .await;
            assert_eq!(refused, Err(Full::Caller));
            let held = store.list("test-of#ana", None, 10).await.unwrap();
            assert_eq!(held.len(), 1, "only a's slot is held");
        }
    }

    #[tokio::test]
    async fn a_full_share_is_found_by_one_listing_however_many_holders_ask() {
        let store = crate::state::embedded::store(None).unwrap();
        let counting = crate::state::counting::CountingReads::of(store, "test-of#ana");
        let share = Share::new("test-of", 2);
        let holders = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>();
        assert!(
            share
                .take_all(&*counting, "ana", &holders(2), None)
                .await
                .is_ok()
        );
        let before = counting.lists();
        let refused = share.take_all(&*counting, "ana", &holders(5), None).await;
        assert_eq!(refused, Err(Full::Caller));
        assert_eq!(
            counting.lists() - before,
            1,
            "one listing, not one per holder"
        );
    }

    #[tokio::test]
    async fn a_share_remembering_full_callers_lists_a_full_one_once_until_it_gives_a_slot_back() {
        let store = crate::state::embedded::store(None).unwrap();
        let counting = crate::state::counting::CountingReads::of(store, "test-of#ana");
        let share = Share::new("test-of", 1).remembering_full(Duration::from_secs(60));
        let slot = share.take(&*counting, "ana", "a", "0", None).await.unwrap();
        let before = counting.lists();
        for _ in 0..3 {
            let refused = share.take(&*counting, "ana", "b", "0", None).await;
            assert_eq!(refused, Err(Full::Caller));
        }
        assert_eq!(counting.lists() - before, 1, "listed once, then remembered");
        // Another caller's share is its own.
        assert!(share.take(&*counting, "bo", "c", "0", None).await.is_ok());
        // A slot given back here is seen at once.
        share
            .give_back(&*counting, "ana", &slot, "a")
            .await
            .unwrap();
        assert!(share.take(&*counting, "ana", "b", "0", None).await.is_ok());
    }

    #[tokio::test]
    async fn a_share_as_large_as_a_number_goes_finds_a_free_slot_when_its_first_pick_is_taken() {
        let store = crate::state::embedded::store(None).unwrap();
        let share = Share::new("test-of", usize::MAX);
        let first = share.take(&*store, "ana", "a", "0", None).await.unwrap();
        // Slot 0 is held: the share is listed (one more than its slots asked for) to find another.
        let next = share.take(&*store, "ana", "b", "0", None).await.unwrap();
        assert_eq!((first.as_str(), next.as_str()), ("0", "1"));
    }
}
