//! State that outlives a call and a process: subscriptions, questions waiting for the user,
//! cancellation marks, acknowledged jobs. One small [`StateStore`] trait, a partitioned
//! key-value store with expiry and compare-and-swap, that an embedded database implements
//! locally and DynamoDB in Lambda (both in `oxp-lambda`), so any execution environment can
//! answer for a call another one started.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

/// A boxed future borrowing the store.
pub type StateFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StateError>> + Send + 'a>>;

/// What [`StateStore::put_if_decided`] tells of its condition: whether it held; it answers
/// whether a write it leads to follows (that the write's flush may wait for).
pub type Decided = Box<dyn FnOnce(bool) -> bool + Send>;

/// Why the store did not answer. Never holds a value or a key (they may name a user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateError(pub String);

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StateError {}

/// One stored value, when the store may forget it, and when it is due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The value (opaque bytes; the callers store JSON).
    pub value: Vec<u8>,
    /// After this the item reads as absent and may be dropped (`None`: kept).
    pub expires: Option<SystemTime>,
    /// When the item is due: from then on [`StateStore::due`] answers it (`None`: never). A
    /// write's own; reads need not give it back.
    pub due: Option<SystemTime>,
}

impl Item {
    /// An item holding `value` until `expires`, due never.
    pub fn new(value: Vec<u8>, expires: Option<SystemTime>) -> Self {
        Self {
            value,
            expires,
            due: None,
        }
    }

    /// The item, due at `at` (`None`: never).
    #[must_use]
    pub fn due_at(mut self, at: Option<SystemTime>) -> Self {
        self.due = at;
        self
    }

    /// Whether it expired at `now`.
    pub fn expired(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|at| at <= now)
    }
}

/// The largest value a store must take (DynamoDB's item limit is 400 KB).
pub const MAX_VALUE_BYTES: usize = 256 * 1024;

/// A partitioned key-value store with expiry: what outlives a call. Partitions and keys are
/// non-empty opaque strings the callers make (hashing what names a user; an empty one is an
/// error, as DynamoDB has it); an expired item reads as absent everywhere, and an item written
/// already expired (its expiry at or before the write) removes what was there, under the same
/// condition as any write: a record that ends leaves nothing for a listing to read.
pub trait StateStore: Send + Sync + fmt::Debug {
    /// The item at `key` of `partition`, if there is one that has not expired.
    fn get<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, Option<Item>>;

    /// Writes `item` at `key` of `partition` if the value there now is `expected` (`None`:
    /// there is none, or it expired); whether it was written. What makes an answer count once
    /// and a counter move one step at a time, whichever process writes.
    fn put_if<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
    ) -> StateFuture<'a, bool>;

    /// [`StateStore::put_if`] of a write no caller is answered on (a record's end, a slot of
    /// a share given back): as durable once it completes, but a store that flushes writes in
    /// groups may hold it for the next flush that someone waits on rather than flush it alone
    /// (the embedded store holds it briefly). Other stores write it at once.
    fn put_if_later<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
    ) -> StateFuture<'a, bool> {
        self.put_if(partition, key, item, expected)
    }

    /// [`StateStore::put_if`] whose writer acts on its outcome before it is durable: `decided`
    /// is told whether the condition held as soon as the store has decided it, and the future
    /// completes once the write is durable (an error then: what was decided was not kept). A
    /// store that flushes writes in groups may tell at once and, when `decided` answers that a
    /// write follows, hold the flush like [`StateStore::put_if_later`]'s for the next write
    /// somebody waits on, so that the write the decision leads to (the outcome of the call an
    /// answer wakes) shares it; readers see the write once durable (the embedded store). Other
    /// stores tell once it is written.
    fn put_if_decided<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
        decided: Decided,
    ) -> StateFuture<'a, bool> {
        Box::pin(async move {
            let held = self.put_if(partition, key, item, expected).await?;
            let _follows = decided(held);
            Ok(held)
        })
    }

    /// Writes `item` at `key` of `partition`, replacing what was there.
    fn put<'a>(&'a self, partition: &'a str, key: &'a str, item: Item) -> StateFuture<'a, ()>;

    /// Removes the item at `key` of `partition` (nothing if none).
    fn delete<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, ()>;

    /// The items of `partition` that have not expired, in key order, at most `limit` of them,
    /// starting after key `after` (to read on from the last page's last key).
    fn list<'a>(
        &'a self,
        partition: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>>;

    /// Items of `partition` due at or before `until` (written with a [`Item::due`]), soonest
    /// first, at most `limit`: what a sweep for work come due reads, never the whole partition
    /// when the store indexes due times (both stores of `oxp-lambda` do). A store that does not
    /// may answer any items of the partition (this default: its first `limit`); the caller
    /// checks each.
    fn due<'a>(
        &'a self,
        partition: &'a str,
        until: SystemTime,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        let _ = until;
        self.list(partition, None, limit)
    }
}
