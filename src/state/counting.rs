//! A store for tests that counts the reads of one partition's records, and its listings (every
//! call passes through to the store it wraps): what shows a path reads less. It can also fail
//! the next reads, conditional writes or deletes of that partition, as a store out of reach
//! does.

use oxp_lambda_core::durable::{Item, StateError, StateFuture, StateStore};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `store`, its reads of `partition` counted.
#[derive(Debug)]
pub(crate) struct CountingReads {
    store: Arc<dyn StateStore>,
    partition: String,
    reads: AtomicUsize,
    lists: AtomicUsize,
    /// How many of the next reads of the partition fail.
    failing: AtomicUsize,
    /// How many of the next conditional writes of the partition fail.
    failing_writes: AtomicUsize,
    /// How many of the next deletes of the partition fail.
    failing_deletes: AtomicUsize,
    /// Records the listings (and reads of what is due) handed back.
    listed: Arc<AtomicUsize>,
}

impl CountingReads {
    /// `store` with the reads of `partition` counted.
    pub(crate) fn of(store: Arc<dyn StateStore>, partition: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            store,
            partition: partition.into(),
            reads: AtomicUsize::new(0),
            lists: AtomicUsize::new(0),
            failing: AtomicUsize::new(0),
            failing_writes: AtomicUsize::new(0),
            failing_deletes: AtomicUsize::new(0),
            listed: Arc::default(),
        })
    }

    /// The listings of the partition so far.
    pub(crate) fn lists(&self) -> usize {
        self.lists.load(Ordering::SeqCst)
    }

    /// The records of the partition its listings and reads of what is due handed back so far.
    pub(crate) fn listed(&self) -> usize {
        self.listed.load(Ordering::SeqCst)
    }

    /// The reads so far.
    pub(crate) fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    /// Fails the next `reads` reads of the partition with a store error.
    pub(crate) fn fail_next(&self, reads: usize) {
        self.failing.store(reads, Ordering::SeqCst);
    }

    /// Fails the next `writes` conditional writes of the partition with a store error.
    pub(crate) fn fail_next_writes(&self, writes: usize) {
        self.failing_writes.store(writes, Ordering::SeqCst);
    }

    /// Fails the next `deletes` deletes of the partition with a store error.
    pub(crate) fn fail_next_deletes(&self, deletes: usize) {
        self.failing_deletes.store(deletes, Ordering::SeqCst);
    }

    /// Counts from zero again.
    pub(crate) fn reset(&self) {
        self.reads.store(0, Ordering::SeqCst);
    }
}

impl StateStore for CountingReads {
    fn get<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, Option<Item>> {
        if partition == self.partition {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let fails = self
                .failing
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
            if fails.is_ok() {
                return Box::pin(async { Err(StateError("the store is out of reach".into())) });
            }
        }
        self.store.get(partition, key)
    }

    fn put_if<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
    ) -> StateFuture<'a, bool> {
        let fails = (partition == self.partition).then(|| {
            self.failing_writes
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        });
        if let Some(Ok(_)) = fails {
            return Box::pin(async { Err(StateError("the store is out of reach".into())) });
        }
        self.store.put_if(partition, key, item, expected)
    }

    fn put<'a>(&'a self, partition: &'a str, key: &'a str, item: Item) -> StateFuture<'a, ()> {
        self.store.put(partition, key, item)
    }

    fn delete<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, ()> {
        let fails = (partition == self.partition).then(|| {
            self.failing_deletes
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        });
        if let Some(Ok(_)) = fails {
            return Box::pin(async { Err(StateError("the store is out of reach".into())) });
        }
        self.store.delete(partition, key)
    }

    fn list<'a>(
        &'a self,
        partition: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        if partition != self.partition {
            return self.store.list(partition, after, limit);
        }
        self.lists.fetch_add(1, Ordering::SeqCst);
        let listed = self.listed.clone();
        Box::pin(async move {
            let items = self.store.list(partition, after, limit).await?;
            listed.fetch_add(items.len(), Ordering::SeqCst);
            Ok(items)
        })
    }

    fn due<'a>(
        &'a self,
        partition: &'a str,
        until: std::time::SystemTime,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        let listed = (partition == self.partition).then(|| self.listed.clone());
        Box::pin(async move {
            let items = self.store.due(partition, until, limit).await?;
            if let Some(listed) = listed {
                listed.fetch_add(items.len(), Ordering::SeqCst);
            }
            Ok(items)
        })
    }
}
