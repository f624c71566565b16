//! Each caller's share of an idempotency store (`OXP_IDEMPOTENCY_MAX_BYTES_PER_CALLER`): the one
//! book both stores that keep outcomes in this process's memory or on its disk keep.
//!
//! A store's bound alone let one caller who sends many calls evict every other caller's outcomes
//! (or fill the disk), so another caller's retry of a call that had finished ran its tool again.
//! With a share, a caller's outcomes weigh at most that much: its next outcome past it lets go of
//! the caller's own oldest, never another caller's.
//!
//! A caller is its keys' caller tag ([`caller_tag`]). Its outcomes are listed by the number each
//! was stored under (numbers only grow: a B-tree, its oldest found at once, one the store let go
//! taken off by number), each with what its store needs to delete it. A caller whose list
//! empties is forgotten, so the book is bounded by what its store holds.

use super::caller_tag;
use std::collections::{BTreeMap, HashMap};

/// The outcomes of one caller, by number: each one's weight and its store's item.
struct Share<T> {
    bytes: u64,
    by_age: BTreeMap<u64, (u64, T)>,
}

/// Every caller's outcomes, each caller's bounded by its share. Not synchronized: its store
/// keeps it under the lock its own bookkeeping takes.
pub struct Shares<T> {
    per_caller: u64,
    by_caller: HashMap<Box<str>, Share<T>, foldhash::quality::RandomState>,
}

impl<T> std::fmt::Debug for Shares<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shares")
            .field("per_caller", &self.per_caller)
            .field("callers", &self.by_caller.len())
            .finish()
    }
}

impl<T> Shares<T> {
    /// Shares of `per_caller` bytes a caller.
    pub fn new(per_caller: u64) -> Self {
        Self {
            per_caller,
            by_caller: HashMap::default(),
        }
    }

    /// Each caller's share in bytes.
    pub fn per_caller(&self) -> u64 {
        self.per_caller
    }

    /// Counts `item`, the outcome stored under `key` as `number` (greater than any number before)
    /// weighing `weight`, in its caller's share: the caller's oldest outcomes that no longer fit
    /// beside it, their numbers and items, for the store to let go (the new one itself last,
    /// where it alone is over the share).
    pub fn add(&mut self, key: &str, number: u64, weight: u64, item: T) -> Vec<(u64, T)> {
        let tag = caller_tag(key);
        let share = match self.by_caller.get_mut(tag) {
            Some(share) => share,
            None => self.by_caller.entry(tag.into()).or_insert(Share {
                bytes: 0,
                by_age: BTreeMap::new(),
            }),
        };
        share.bytes += weight;
        share.by_age.insert(number, (weight, item));
        let mut over = Vec::new();
        while share.bytes > self.per_caller {
            let Some((number, (weight, item))) = share.by_age.pop_first() else {
                break;
            };
            share.bytes -= weight;
            over.push((number, item));
        }
        if share.by_age.is_empty() {
            self.by_caller.remove(tag);
        }
        over
    }

    /// Takes outcome `number` of `key`'s caller off its share (its store let it go): its item.
    pub fn forget(&mut self, key: &str, number: u64) -> Option<T> {
        let tag = caller_tag(key);
        let share = self.by_caller.get_mut(tag)?;
        let gone = share.by_age.remove(&number).map(|(weight, item)| {
            share.bytes -= weight;
            item
        });
        if share.by_age.is_empty() {
            self.by_caller.remove(tag);
        }
        gone
    }

    /// Takes `key`'s caller's oldest outcomes off its share while `gone` says their store lets
    /// them go on its own (their time has passed).
    pub fn forget_oldest_while(&mut self, key: &str, gone: impl FnMut(&T) -> bool) {
        let tag = caller_tag(key);
        if let Some(share) = self.by_caller.get_mut(tag)
            && Self::forget_in(share, gone)
        {
            self.by_caller.remove(tag);
        }
    }

    /// [`Shares::forget_oldest_while`] for every caller.
    pub fn forget_all_oldest_while(&mut self, mut gone: impl FnMut(&T) -> bool) {
        self.by_caller
            .retain(|_, share| !Self::forget_in(share, &mut gone));
    }

    /// Takes a share's oldest off while `gone`: whether it is empty.
    fn forget_in(share: &mut Share<T>, mut gone: impl FnMut(&T) -> bool) -> bool {
        while let Some(entry) = share.by_age.first_entry() {
            if !gone(&entry.get().1) {
                break;
            }
            share.bytes -= entry.remove().0;
        }
        share.by_age.is_empty()
    }

    /// The bytes `key`'s caller holds, and how many outcomes.
    pub fn held(&self, key: &str) -> (u64, usize) {
        self.by_caller
            .get(caller_tag(key))
            .map_or((0, 0), |s| (s.bytes, s.by_age.len()))
    }

    /// How many callers hold outcomes, how many outcomes they hold in all, their bytes in all
    /// and the most bytes one holds.
    pub fn totals(&self) -> (usize, usize, u64, u64) {
        let (mut outcomes, mut bytes, mut most) = (0, 0, 0);
        for share in self.by_caller.values() {
            outcomes += share.by_age.len();
            bytes += share.bytes;
            most = most.max(share.bytes);
        }
        (self.by_caller.len(), outcomes, bytes, most)
    }
}

#[cfg(test)]
mod tests {
    use super::Shares;

    #[test]
    fn a_caller_past_its_share_lets_go_of_its_own_oldest_and_one_alone_over_it_of_itself() {
        let mut shares = Shares::new(100);
        let key = |caller: &str, n: u64| format!("oxp:{caller}:s:{n}");
        assert!(shares.add(&key("bob", 0), 1, 60, "b1").is_empty());
        assert!(shares.add(&key("alice", 0), 2, 60, "a1").is_empty());
        assert_eq!(shares.add(&key("alice", 1), 3, 60, "a2"), [(2, "a1")]);
        assert_eq!(shares.held(&key("bob", 9)), (60, 1), "bob's is untouched");
        assert_eq!(shares.add(&key("carol", 0), 4, 101, "c1"), [(4, "c1")]);
        assert_eq!(shares.totals(), (2, 2, 120, 60), "carol holds nothing");
        assert_eq!(shares.forget(&key("bob", 0), 1), Some("b1"));
        shares.forget_all_oldest_while(|item| *item == "a2");
        assert_eq!(shares.totals(), (0, 0, 0, 0), "every caller forgotten");
    }
}
