//! The embedded state store (feature `embedded-state`): one redb database file, maintained,
//! crash-safe (a committed write survives `kill -9`), needing no set-up. Opened by the first
//! request that needs it, never at start; every operation runs off the async runtime's threads.
//! Without a path (a configuration built in code) it lives in memory.

use oxp_lambda_core::durable::{Item, MAX_VALUE_BYTES, StateError, StateFuture, StateStore};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::OnceCell;

/// One table: `partition \0 key` -> expiry (Unix seconds, 0: none) then the value.
const TABLE: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("state");

/// The store of `path` (`None`: in memory).
pub(crate) fn store(path: Option<PathBuf>) -> Result<Arc<dyn StateStore>, String> {
    Ok(Arc::new(Embedded::new(path)))
}

/// The embedded store.
pub(crate) struct Embedded {
    path: Option<PathBuf>,
    db: OnceCell<Arc<Database>>,
}

impl fmt::Debug for Embedded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedded")
            .field("path", &self.path)
            .field("open", &self.db.initialized())
            .finish()
    }
}

impl Embedded {
    pub(crate) fn new(path: Option<PathBuf>) -> Self {
        Self {
            path,
            db: OnceCell::new(),
        }
    }

    /// The database, opened (or created) now if this is the first use.
    async fn db(&self) -> Result<Arc<Database>, StateError> {
        self.db
            .get_or_try_init(|| {
                let path = self.path.clone();
                blocking(move || {
                    let db = match &path {
                        Some(path) => Database::create(path),
                        None => Database::builder()
                            .create_with_backend(redb::backends::InMemoryBackend::new()),
                    }
                    .map_err(|e| failed("open", e))?;
                    // The table exists from the start, so a read never finds it missing.
                    let txn = db.begin_write().map_err(|e| failed("open", e))?;
                    txn.open_table(TABLE).map_err(|e| failed("open", e))?;
                    txn.commit().map_err(|e| failed("open", e))?;
                    Ok(Arc::new(db))
                })
            })
            .await
            .cloned()
    }

    /// Runs `f` on the database, off the runtime's threads.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        let db = self.db().await?;
        blocking(move || f(&db)).await
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

fn row(partition: &str, key: &str) -> Result<String, StateError> {
    if partition.is_empty() || key.is_empty() {
        return Err(StateError("state store: an empty partition or key".into()));
    }
    Ok(format!("{partition}\0{key}"))
}

fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs().max(1))
}

fn encode(item: &Item) -> Result<Vec<u8>, StateError> {
    if item.value.len() > MAX_VALUE_BYTES {
        return Err(StateError("state store: the value is too large".into()));
    }
    let mut bytes = Vec::with_capacity(8 + item.value.len());
    bytes.extend_from_slice(&item.expires.map_or(0, secs).to_be_bytes());
    bytes.extend_from_slice(&item.value);
    Ok(bytes)
}

/// The item a row holds, `None` once expired.
fn decode(bytes: &[u8], now: SystemTime) -> Option<Item> {
    let (expiry, value) = bytes.split_at_checked(8)?;
    let at = u64::from_be_bytes(expiry.try_into().ok()?);
    let item = Item {
        value: value.to_vec(),
        expires: (at > 0).then(|| UNIX_EPOCH + Duration::from_secs(at)),
    };
    (!item.expired(now)).then_some(item)
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
        let row = row(partition, key);
        let expected = expected.map(<[u8]>::to_vec);
        Box::pin(async move {
            let row = row?;
            let bytes = encode(&item)?;
            self.with(move |db| {
                let txn = db.begin_write().map_err(|e| failed("write", e))?;
                let written = {
                    let mut table = txn.open_table(TABLE).map_err(|e| failed("write", e))?;
                    let now = table
                        .get(row.as_str())
                        .map_err(|e| failed("write", e))?
                        .and_then(|v| decode(v.value(), SystemTime::now()));
                    let matches = match (&now, &expected) {
                        (None, None) => true,
                        (Some(now), Some(expected)) => now.value == *expected,
                        _ => false,
                    };
                    if matches {
                        table
                            .insert(row.as_str(), bytes.as_slice())
                            .map_err(|e| failed("write", e))?;
                    }
                    matches
                };
                txn.commit().map_err(|e| failed("write", e))?;
                Ok(written)
            })
            .await
        })
    }

    fn put<'a>(&'a self, partition: &'a str, key: &'a str, item: Item) -> StateFuture<'a, ()> {
        let row = row(partition, key);
        Box::pin(async move {
            let row = row?;
            let bytes = encode(&item)?;
            self.with(move |db| {
                let txn = db.begin_write().map_err(|e| failed("write", e))?;
                txn.open_table(TABLE)
                    .map_err(|e| failed("write", e))?
                    .insert(row.as_str(), bytes.as_slice())
                    .map_err(|e| failed("write", e))?;
                txn.commit().map_err(|e| failed("write", e))
            })
            .await
        })
    }

    fn delete<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, ()> {
        let row = row(partition, key);
        Box::pin(self.with(move |db| {
            let row = row?;
            let txn = db.begin_write().map_err(|e| failed("delete", e))?;
            txn.open_table(TABLE)
                .map_err(|e| failed("delete", e))?
                .remove(row.as_str())
                .map_err(|e| failed("delete", e))?;
            txn.commit().map_err(|e| failed("delete", e))
        }))
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_embedded_store_keeps_the_contract_in_memory() {
        crate::state::conformance::check(&Embedded::new(None)).await;
    }

    #[tokio::test]
    async fn what_was_written_survives_closing_and_opening_the_file_again() {
        let path = std::env::temp_dir().join(format!("oxp-state-{}.redb", uuid::Uuid::new_v4()));
        let first = Embedded::new(Some(path.clone()));
        crate::state::conformance::check(&first).await;
        first
            .put("p", "kept", Item::new(b"v".to_vec(), None))
            .await
            .unwrap();
        drop(first);
        let again = Embedded::new(Some(path.clone()));
        let kept = again.get("p", "kept").await.unwrap().unwrap();
        assert_eq!(kept.value, b"v");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn nothing_is_opened_before_the_first_use() {
        let path = std::env::temp_dir().join(format!("oxp-state-{}.redb", uuid::Uuid::new_v4()));
        let store = Embedded::new(Some(path.clone()));
        assert!(!store.db.initialized());
        assert!(!path.exists(), "no file until a request needs the store");
    }
}
