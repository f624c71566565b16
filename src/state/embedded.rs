//! The embedded state store (feature `embedded-state`): one redb database file, maintained,
//! crash-safe (a committed write survives `kill -9`), needing no set-up. The file is taken for
//! this process at start (a lock beside it, `<file>.lock`: a second server on the same file is
//! refused at its start, naming the file), opened by the first request that needs it, and
//! readable by its owner only (0600); every operation runs off the async runtime's threads.
//! Without a path (a configuration built in code) it lives in memory.
//!
//! Writes are committed in groups: one writer thread takes every write waiting when it is free
//! and applies them, in order, in one transaction with one flush to disk, then answers each.
//! A write is answered only once it is durable, as before; what changes is that 32 writers at
//! once (a fan-out) share one flush rather than queueing for 32 (docs/performance.md). A write
//! nobody is answered on (`put_if_later`: a record's end, a slot given back) waits up to
//! 25 ms for one somebody is, to share its flush rather than take one the next call's writes
//! would queue behind; it too is answered once durable. So does an answer to a question
//! (`put_if_decided`), once its condition is decided and told: the call it wakes writes its
//! outcome into the same flush.

mod index;
mod open;
mod readers;
mod reclaim;
mod rows;
mod writer;

use super::private_file;
use oxp_lambda_core::durable::{Decided, Item, StateError, StateFuture, StateStore};
use redb::{Database, ReadableDatabase, ReadableTable};
use rows::{TABLE, decode, encode, row, split};
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{OnceCell, mpsc, oneshot};
use writer::{GROUP, Pending, Waits, Write, write_groups};

/// The store of `path` (`None`: in memory), the file taken for this process now, with the
/// default page cache.
#[cfg(test)]
pub(crate) fn store(path: Option<PathBuf>) -> Result<Arc<dyn StateStore>, String> {
    store_cached(path, super::DEFAULT_CACHE_BYTES)
}

/// The store of `path` (`None`: in memory), the file taken for this process now, with a page
/// cache of at most `cache_bytes` (`OXP_STATE_CACHE_BYTES`).
pub(crate) fn store_cached(
    path: Option<PathBuf>,
    cache_bytes: usize,
) -> Result<Arc<dyn StateStore>, String> {
    let lock = path.as_deref().map(take).transpose()?;
    let mut store = Embedded::new(path);
    store.lock = lock;
    store.opener.cache_bytes = cache_bytes;
    Ok(Arc::new(store))
}

/// The lock file of the database file `path`.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes `path` for this process: an exclusive lock on `<path>.lock`, held until the store is
/// dropped (and by the system until the process ends, however it ends).
fn take(path: &Path) -> Result<File, String> {
    let lock = lock_path(path);
    let file = private_file(&lock).map_err(|e| {
        let (path, lock) = (path.display(), lock.display());
        format!("OXP_STATE_PATH {path}: its lock file {lock} cannot be created: {e}")
    })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "the state file {} is in use by another process (a server on the same OXP_STATE_PATH): stop it, or give this server a file of its own with OXP_STATE_PATH",
            path.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(format!(
            "OXP_STATE_PATH {}: its lock file {} cannot be locked: {e}",
            path.display(),
            lock.display()
        )),
    }
}

/// The embedded store.
pub(crate) struct Embedded {
    /// Its file (or memory) and page cache.
    opener: open::Opener,
    db: OnceCell<Opened>,
    /// The lock that takes the file for this process (see [`store_cached`]).
    lock: Option<File>,
    /// How often the writer deletes expired rows (`reclaim`).
    reclaim_every: Duration,
}

/// The open database's writer and readers (each holds the database).
struct Opened {
    writes: mpsc::Sender<Pending>,
    writer: Option<std::thread::JoinHandle<()>>,
    readers: Option<readers::Readers>,
}

impl Drop for Embedded {
    fn drop(&mut self) {
        // The writer ends once its queue closes, and releases the file: the same path may be
        // opened again right after (a restart in a test, a second app in a process).
        if let Some(Opened {
            writes,
            writer,
            readers,
            ..
        }) = self.db.take()
        {
            if let Some(readers) = readers {
                readers.stop();
            }
            drop(writes);
            if let Some(writer) = writer {
                let _ = writer.join();
            }
        }
        // Then the file is free for the next store (a restart in a test, a second app).
        drop(self.lock.take());
    }
}

impl fmt::Debug for Embedded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedded")
            .field("path", &self.opener.path)
            .field("open", &self.db.initialized())
            .finish()
    }
}

impl Embedded {
    pub(crate) fn new(path: Option<PathBuf>) -> Self {
        let opener = open::Opener {
            path,
            cache_bytes: super::DEFAULT_CACHE_BYTES,
            #[cfg(test)]
            faults: None,
        };
        Self {
            opener,
            db: OnceCell::new(),
            lock: None,
            reclaim_every: reclaim::EVERY,
        }
    }

    /// The database, opened (or created) now if this is the first use, with its writer and
    /// readers.
    async fn opened(&self) -> Result<&Opened, StateError> {
        self.db
            .get_or_try_init(|| {
                let (opener, reclaim_every) = (self.opener.clone(), self.reclaim_every);
                blocking(move || {
                    let slot: open::Slot = Arc::new(Mutex::new(Some(Arc::new(opener.open()?))));
                    let (writes, queue) = mpsc::channel(GROUP * 4);
                    let writer = {
                        let current = open::Current::new(slot.clone(), opener);
                        let schedule = reclaim::Schedule::new(reclaim_every);
                        // The writer's own clock: how long it holds writes nobody waits on.
                        let clock = tokio::runtime::Builder::new_current_thread()
                            .enable_time()
                            .build()
                            .map_err(|e| StateError(format!("state store: writer: {e}")))?;
                        std::thread::Builder::new()
                            .name("oxp-state-writer".into())
                            .spawn(move || write_groups(current, queue, schedule, &clock))
                            .map_err(|e| StateError(format!("state store: writer: {e}")))?
                    };
                    let readers = readers::Readers::start(&slot)?;
                    Ok(Opened {
                        writes,
                        writer: Some(writer),
                        readers: Some(readers),
                    })
                })
            })
            .await
    }

    /// Queues `write` of `row` (due at `due`) for the next group commit (or, as `waits` says,
    /// the next one somebody waits on); what it answered once durable.
    async fn write(
        &self,
        row: String,
        write: Write,
        due: Option<SystemTime>,
        waits: Waits,
    ) -> Result<bool, StateError> {
        let opened = self.opened().await?;
        let (done, answer) = oneshot::channel();
        let gone = || StateError("state store: the writer stopped".into());
        let due_ms = due.map(|t| {
            t.duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
        });
        opened
            .writes
            .send(Pending {
                row,
                write,
                due_ms,
                done,
                waits,
            })
            .await
            .map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    /// [`StateStore::put_if`], its flush waited on as `waits` says.
    async fn put_if_with(
        &self,
        partition: &str,
        key: &str,
        item: Item,
        expected: Option<&[u8]>,
        waits: Waits,
    ) -> Result<bool, StateError> {
        let (row, bytes) = (row(partition, key)?, encode(&item)?);
        let bytes = (!item.expired(SystemTime::now())).then_some(bytes);
        let expected = expected.map(<[u8]>::to_vec);
        let write = Write::PutIf { bytes, expected };
        self.write(row, write, item.due, waits).await
    }

    /// Runs `f` on the database, on one of the store's reader threads.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        let opened = self.opened().await?;
        match &opened.readers {
            Some(readers) => readers.read(f).await,
            None => Err(StateError("state store: closed".into())),
        }
    }
}

/// `f` on a thread that may block.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StateError> + Send + 'static,
) -> Result<T, StateError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| StateError("state store: the operation did not finish".into()))?
}

fn failed(what: &str, e: impl Into<redb::Error>) -> StateError {
    StateError(format!("state store: {what}: {}", e.into()))
}

impl StateStore for Embedded {
    fn get<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, Option<Item>> {
        let row = row(partition, key);
        Box::pin(self.with(move |db| {
            let row = row?;
            let txn = db.begin_read().map_err(|e| failed("read", e))?;
            let table = txn.open_table(TABLE).map_err(|e| failed("read", e))?;
            let got = table.get(row.as_str()).map_err(|e| failed("read", e))?;
            Ok(got.and_then(|v| decode(v.value(), SystemTime::now())))
        }))
    }

    fn put_if<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
    ) -> StateFuture<'a, bool> {
        Box::pin(self.put_if_with(partition, key, item, expected, Waits::Flush))
    }

    fn put_if_later<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
    ) -> StateFuture<'a, bool> {
        Box::pin(self.put_if_with(partition, key, item, expected, Waits::Later))
    }

    fn put_if_decided<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
        decided: Decided,
    ) -> StateFuture<'a, bool> {
        let waits = Waits::Decided(decided);
        Box::pin(self.put_if_with(partition, key, item, expected, waits))
    }

    fn put<'a>(&'a self, partition: &'a str, key: &'a str, item: Item) -> StateFuture<'a, ()> {
        let row = row(partition, key);
        Box::pin(async move {
            let (row, bytes) = (row?, encode(&item)?);
            let write = if item.expired(SystemTime::now()) {
                Write::Delete
            } else {
                Write::Put(bytes)
            };
            self.write(row, write, item.due, Waits::Flush)
                .await
                .map(drop)
        })
    }

    fn delete<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, ()> {
        let row = row(partition, key);
        Box::pin(async move {
            self.write(row?, Write::Delete, None, Waits::Flush)
                .await
                .map(drop)
        })
    }

    fn list<'a>(
        &'a self,
        partition: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        let prefix = format!("{partition}\0");
        let start = match after {
            Some(key) => format!("{prefix}{key}\0"),
            None => prefix.clone(),
        };
        let end = format!("{partition}\u{1}");
        Box::pin(self.with(move |db| {
            let txn = db.begin_read().map_err(|e| failed("list", e))?;
            let table = txn.open_table(TABLE).map_err(|e| failed("list", e))?;
            let now = SystemTime::now();
            let mut items = Vec::new();
            for row in table
                .range(start.as_str()..end.as_str())
                .map_err(|e| failed("list", e))?
            {
                if items.len() >= limit {
                    break;
                }
                let (k, v) = row.map_err(|e| failed("list", e))?;
                if let (Some(key), Some(item)) =
                    (k.value().strip_prefix(&prefix), decode(v.value(), now))
                {
                    items.push((key.to_owned(), item));
                }
            }
            Ok(items)
        }))
    }

    fn due<'a>(
        &'a self,
        partition: &'a str,
        until: SystemTime,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        let until_ms = until
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let start = format!("{partition}\0");
        // Every key due at `until_ms` or before: its digits, then `\0` and the key.
        let end = format!("{partition}\0{until_ms:020}\u{1}");
        Box::pin(self.with(move |db| {
            let txn = db.begin_read().map_err(|e| failed("due", e))?;
            let (table, due) = (
                txn.open_table(TABLE).map_err(|e| failed("due", e))?,
                txn.open_table(index::DUE).map_err(|e| failed("due", e))?,
            );
            let now = SystemTime::now();
            let mut items = Vec::new();
            for entry in due
                .range(start.as_str()..end.as_str())
                .map_err(|e| failed("due", e))?
            {
                if items.len() >= limit {
                    break;
                }
                let (entry, _) = entry.map_err(|e| failed("due", e))?;
                let Some((_, key)) = entry.value()[start.len()..].split_once('\0') else {
                    continue;
                };
                let row = format!("{start}{key}");
                let stored = table.get(row.as_str()).map_err(|e| failed("due", e))?;
                if let Some(item) = stored.and_then(|v| decode(v.value(), now)) {
                    items.push((key.to_owned(), item));
                }
            }
            Ok(items)
        }))
    }
}

#[cfg(test)]
mod reopen_tests;
#[cfg(test)]
mod tests;
