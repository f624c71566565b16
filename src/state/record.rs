//! A JSON record of the state store, changed by compare-and-swap: the one read-change-write
//! loop every kind of durable record (work, subscriptions, MCP tasks) is changed through.

use oxp_lambda_core::durable::{Item, StateError, StateStore};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::time::SystemTime;

/// How often a change is tried again when another writer came first.
const TRIES: usize = 16;

/// A kind of record: what it is stored as, and when it is due (work records are, for the
/// sweep: `StateStore::due`).
pub(crate) trait Record: Serialize + DeserializeOwned {
    /// When the record is due (`None`: never).
    fn due(&self) -> Option<SystemTime> {
        None
    }
}

/// The records of one partition of a store.
#[derive(Clone, Copy)]
pub(crate) struct Records<'a> {
    store: &'a dyn StateStore,
    partition: &'a str,
    /// What a record is, for errors ("a work record").
    what: &'static str,
    /// Whether each change is followed by another write that its flush may wait for.
    followed: bool,
}

impl<'a> Records<'a> {
    /// The records of `partition` in `store`, each a `what` (for errors).
    pub(crate) fn new(store: &'a dyn StateStore, partition: &'a str, what: &'static str) -> Self {
        Self {
            store,
            partition,
            what,
            followed: false,
        }
    }

    /// These records, each change of which another write follows at once: on the embedded
    /// store its flush waits for that one, which shares it (`StateStore::put_if_decided`).
    /// Only a change written without a read first: after a read, what follows may have been
    /// written already, and nothing would come to share the flush.
    pub(crate) fn followed(self) -> Self {
        Self {
            followed: true,
            ..self
        }
    }

    /// Record `key` and the item it is stored as; one that does not read is an error (a
    /// record of another version, or not this kind).
    pub(crate) async fn read<T: Record>(&self, key: &str) -> Result<Option<(T, Item)>, StateError> {
        let Some(item) = self.store.get(self.partition, key).await? else {
            return Ok(None);
        };
        match serde_json::from_slice(&item.value) {
            Ok(value) => Ok(Some((value, item))),
            Err(_) => Err(StateError(format!("{} does not read", self.what))),
        }
    }

    /// Writes `value` as record `key` where `old` is stored (`None`: where none is), kept
    /// until `expires`; the item written, or `None` when another writer came first.
    pub(crate) async fn write<T: Record>(
        &self,
        key: &str,
        value: &T,
        old: Option<&Item>,
        expires: Option<SystemTime>,
    ) -> Result<Option<Item>, StateError> {
        self.write_as(key, value, old, expires, false).await
    }

    /// [`Records::write`]; `followed`: another write follows at once, whose flush this one's
    /// may wait to share.
    async fn write_as<T: Record>(
        &self,
        key: &str,
        value: &T,
        old: Option<&Item>,
        expires: Option<SystemTime>,
        followed: bool,
    ) -> Result<Option<Item>, StateError> {
        let next = Item::new(
            serde_json::to_vec(value).expect("records serialize"),
            expires,
        )
        .due_at(value.due());
        let (partition, old) = (self.partition, old.map(|o| o.value.as_slice()));
        // A record that ends (written expired) answers nobody: it shares the next flush.
        let written = if next.expired(SystemTime::now()) {
            self.store.put_if_later(partition, key, next.clone(), old)
        } else if followed {
            // Held for what follows only when its condition held (one that did not is read
            // and tried again).
            let decided = Box::new(|held| held);
            (self.store).put_if_decided(partition, key, next.clone(), old, decided)
        } else {
            self.store.put_if(partition, key, next.clone(), old)
        };
        Ok(written.await?.then_some(next))
    }

    /// `change` applied to record `key`, starting from `known` (the record as this process
    /// read or wrote it last: read again only when another writer came since), written kept
    /// until `expires` says (of the record changed and the item it replaces). A concurrent
    /// write makes it read and change again; `change` declining on the stored record ends it
    /// (a decline on `known` alone reads first: it may be out of date). The record and item
    /// as written, or `None` when there is none or `change` declines.
    pub(crate) async fn update<T: Record>(
        &self,
        key: &str,
        known: Option<(T, Item)>,
        change: impl FnMut(&mut T) -> bool,
        expires: impl Fn(&T, &Item) -> Option<SystemTime>,
    ) -> Result<Option<(T, Item)>, StateError> {
        self.upsert(
            key,
            known,
            || None,
            change,
            |value, old| old.and_then(|old| expires(value, old)),
        )
        .await
    }

    /// [`Records::upsert`] without `before`.
    pub(crate) async fn upsert<T: Record>(
        &self,
        key: &str,
        known: Option<(T, Item)>,
        create: impl FnMut() -> Option<T>,
        change: impl FnMut(&mut T) -> bool,
        expires: impl Fn(&T, Option<&Item>) -> Option<SystemTime>,
    ) -> Result<Option<(T, Item)>, StateError> {
        let ready = |_: &T| std::future::ready(Ok(true));
        self.upsert_after(key, known, create, change, ready, expires)
            .await
    }

    /// [`Records::update`], and where there is no record, `create`'s (if it gives one: written
    /// where none is, then not changed); `expires` is told the item replaced (`None`: new).
    /// `before` runs on each changed record before it is written (what the record will name
    /// must exist first: a subscription's next event); `false` from it reads and changes again
    /// (another writer took what it wanted).
    pub(crate) async fn upsert_after<T: Record, F: Future<Output = Result<bool, StateError>>>(
        &self,
        key: &str,
        mut known: Option<(T, Item)>,
        mut create: impl FnMut() -> Option<T>,
        mut change: impl FnMut(&mut T) -> bool,
        before: impl Fn(&T) -> F,
        expires: impl Fn(&T, Option<&Item>) -> Option<SystemTime>,
    ) -> Result<Option<(T, Item)>, StateError> {
        for _ in 0..TRIES {
            let (fresh, found) = match known.take() {
                Some(known) => (false, Some(known)),
                None => (true, self.read(key).await?),
            };
            let (value, old) = match found {
                Some((mut value, old)) => {
                    if !change(&mut value) {
                        if fresh {
                            return Ok(None);
                        }
                        continue;
                    }
                    (value, Some(old))
                }
                None => match create() {
                    Some(value) => (value, None),
                    None => return Ok(None),
                },
            };
            if !before(&value).await? {
                continue;
            }
            let until = expires(&value, old.as_ref());
            let followed = self.followed && !fresh;
            let written = self.write_as(key, &value, old.as_ref(), until, followed);
            if let Some(next) = written.await? {
                return Ok(Some((value, next)));
            }
        }
        Err(StateError(format!(
            "{} is updated too often at once",
            self.what
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Counter {
        n: u32,
    }

    impl Record for Counter {}

    fn store() -> Arc<dyn StateStore> {
        crate::state::embedded::store(None).unwrap()
    }

    async fn put(store: &dyn StateStore, n: u32) -> Item {
        let item = Item::new(serde_json::to_vec(&Counter { n }).unwrap(), None);
        store.put("p", "k", item.clone()).await.unwrap();
        item
    }

    fn kept(_: &Counter, old: &Item) -> Option<SystemTime> {
        old.expires
    }

    #[tokio::test]
    async fn a_change_is_written_over_the_record_and_returned_as_written() {
        let store = store();
        put(&*store, 1).await;
        let records = Records::new(&*store, "p", "a counter");
        let (value, item) = records
            .update(
                "k",
                None,
                |c: &mut Counter| {
                    c.n += 1;
                    true
                },
                kept,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(value, Counter { n: 2 });
        assert_eq!(
            store.get("p", "k").await.unwrap().unwrap().value,
            item.value
        );
    }

    #[tokio::test]
    async fn a_record_changed_by_another_writer_since_it_was_known_is_read_and_changed_again() {
        let store = store();
        let old = put(&*store, 1).await;
        put(&*store, 5).await;
        let records = Records::new(&*store, "p", "a counter");
        let runs = AtomicUsize::new(0);
        let (value, _) = records
            .update(
                "k",
                Some((Counter { n: 1 }, old)),
                |c: &mut Counter| {
                    runs.fetch_add(1, Ordering::Relaxed);
                    c.n += 1;
                    true
                },
                kept,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            value,
            Counter { n: 6 },
            "the change is made to what is stored"
        );
        assert_eq!(runs.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn a_decline_on_an_out_of_date_record_reads_first_and_only_a_decline_on_the_stored_one_ends_it()
     {
        let store = store();
        let old = put(&*store, 1).await;
        put(&*store, 2).await;
        let records = Records::new(&*store, "p", "a counter");
        // Declines on n = 1 (the known, out of date), accepts on n = 2 (stored).
        let written = records
            .update(
                "k",
                Some((Counter { n: 1 }, old)),
                |c: &mut Counter| {
                    let even = c.n.is_multiple_of(2);
                    c.n += 10;
                    even
                },
                kept,
            )
            .await
            .unwrap();
        assert_eq!(written.map(|(c, _)| c), Some(Counter { n: 12 }));
        let declined = records
            .update("k", None, |_: &mut Counter| false, kept)
            .await
            .unwrap();
        assert!(declined.is_none());
        let absent = records
            .update("none", None, |_: &mut Counter| true, kept)
            .await
            .unwrap();
        assert!(absent.is_none(), "no record, nothing written");
        assert!(store.get("p", "none").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_record_is_kept_as_long_as_expires_says_of_the_changed_record() {
        let store = store();
        put(&*store, 1).await;
        let records = Records::new(&*store, "p", "a counter");
        let until = SystemTime::now() + Duration::from_secs(3600);
        let (_, item) = records
            .update(
                "k",
                None,
                |c: &mut Counter| {
                    c.n = 7;
                    true
                },
                |c: &Counter, _| (c.n == 7).then_some(until),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(item.expires, Some(until));
    }

    #[tokio::test]
    async fn a_record_that_does_not_read_is_an_error_naming_what_it_is() {
        let store = store();
        store
            .put("p", "k", Item::new(b"not json".to_vec(), None))
            .await
            .unwrap();
        let records = Records::new(&*store, "p", "a counter");
        let e = records.read::<Counter>("k").await.unwrap_err();
        assert_eq!(e.0, "a counter does not read");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_followed_change_is_answered_in_the_commit_of_the_write_that_follows_it() {
        use std::sync::atomic::AtomicBool;
        let store = store();
        let old = put(&*store, 1).await;
        let records = Records::new(&*store, "p", "a counter").followed();
        let add = |c: &mut Counter| {
            c.n += 1;
            true
        };
        let followed = AtomicBool::new(false);
        let changed = async {
            let changed = records.update("k", Some((Counter { n: 1 }, old)), add, kept);
            (changed.await.unwrap(), followed.load(Ordering::SeqCst))
        };
        // The write that follows comes 5 ms later: a commit's time many times over, a fifth
        // of what the writer holds a flush for.
        let follow = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            followed.store(true, Ordering::SeqCst);
            let next = Item::new(b"next".to_vec(), None);
            store.put("p", "next", next).await.unwrap();
        };
        let ((changed, after_the_follow), ()) = tokio::join!(changed, follow);
        assert_eq!(changed.unwrap().0, Counter { n: 2 });
        assert!(
            after_the_follow,
            "committed alone before the write that followed"
        );
        // Read first (nothing known): what follows may be written already, so not held.
        let alone = std::time::Instant::now();
        let changed = records.update("k", None, add, kept).await.unwrap();
        assert_eq!(changed.unwrap().0, Counter { n: 3 });
        assert!(
            alone.elapsed() < Duration::from_millis(20),
            "held after a read"
        );
    }
}
