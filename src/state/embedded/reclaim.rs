//! Reclaiming expired rows of the embedded store, as DynamoDB's TTL does for the table.
//!
//! A row past its expiry is already invisible (every read skips it), but its pages stay taken
//! until something deletes it: a file that serves expiring work for months would only grow.
//! The writer thread, the store's only writer, deletes them itself between groups of writes:
//! at most once a [`EVERY`], at most [`BATCH`] rows a pass, read in expiry order from the
//! expiry index (`index.rs`), so a pass reads the rows it deletes and nothing else: the writes
//! waiting behind it are delayed by one bounded transaction, never by a scan of the file,
//! however many live rows it holds. redb reuses the freed pages for later writes, so a store
//! whose rows expire at the rate they come keeps its size. A store nobody writes to does not
//! grow and is left alone.

use super::index::{EXPIRING, Indexes};
use super::{TABLE, failed};
use oxp_lambda_core::durable::StateError;
use redb::{Database, ReadableTable};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often the writer looks for expired rows.
pub(super) const EVERY: Duration = Duration::from_secs(60);

/// The most rows one pass deletes (a pass that finds more runs again at the next write).
pub(super) const BATCH: usize = 1024;

/// When the writer last reclaimed, and how often it does.
pub(super) struct Schedule {
    every: Duration,
    last: Option<Instant>,
    /// Whether the last pass stopped at [`BATCH`]: the next write reclaims again at once.
    more: bool,
}

impl Schedule {
    pub(super) fn new(every: Duration) -> Self {
        Self {
            every,
            last: None,
            more: false,
        }
    }

    /// Reclaims if it is time, after a group of writes. A failure is left for the next pass:
    /// reclaiming is housekeeping, and the writes it follows were already answered. Whether
    /// it did not fail.
    pub(super) fn after_writes(&mut self, db: &Database) -> bool {
        let due = self.more || self.last.is_none_or(|last| last.elapsed() >= self.every);
        if !due {
            return true;
        }
        self.last = Some(Instant::now());
        match reclaim(db, SystemTime::now(), BATCH) {
            Ok(deleted) => {
                self.more = deleted == BATCH;
                true
            }
            Err(e) => {
                self.more = false;
                tracing::warn!(error = %e.0, "state store: reclaiming expired rows failed");
                false
            }
        }
    }
}

/// Deletes up to `limit` rows expired at `now`, oldest expiry first, in one transaction; how
/// many.
pub(super) fn reclaim(db: &Database, now: SystemTime, limit: usize) -> Result<usize, StateError> {
    let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let txn = db.begin_write().map_err(|e| failed("reclaim", e))?;
    let mut deleted = 0;
    {
        let mut table = txn.open_table(TABLE).map_err(|e| failed("reclaim", e))?;
        let expiring = txn.open_table(EXPIRING).map_err(|e| failed("reclaim", e))?;
        // Every entry of an expiry at or before `now`: its digits, then `\0` and the row.
        let end = format!("{now:020}\u{1}");
        let entries: Vec<String> = expiring
            .range(..end.as_str())
            .map_err(|e| failed("reclaim", e))?
            .take(limit)
            .map(|entry| {
                Ok(entry
                    .map_err(|e| failed("reclaim", e))?
                    .0
                    .value()
                    .to_owned())
            })
            .collect::<Result<_, StateError>>()?;
        drop(expiring);
        let mut indexes = Indexes::open(&txn)?;
        for entry in entries {
            let row = entry.split_once('\0').map_or("", |(_, row)| row);
            let old = table
                .remove(row)
                .map_err(|e| failed("reclaim", e))?
                .map(|v| v.value().to_vec());
            indexes.changed(row, old.as_deref(), None, None)?;
            indexes.forget_expiring(&entry)?;
            deleted += 1;
        }
    }
    txn.commit().map_err(|e| failed("reclaim", e))?;
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::super::Embedded;
    use super::*;
    use oxp_lambda_core::durable::{Item, StateStore};
    use redb::{ReadableDatabase, ReadableTableMetadata};

    /// A store whose writer reclaims after every group of writes (or, `None`, only once).
    fn store(path: Option<std::path::PathBuf>, every: Option<Duration>) -> Embedded {
        let mut store = Embedded::new(path);
        store.reclaim_every = every.unwrap_or(Duration::MAX);
        store
    }

    /// Every row of the file, expired or not, as the disk holds them.
    async fn rows(store: &Embedded) -> u64 {
        store
            .with(|db| {
                let txn = db.begin_read().map_err(|e| failed("count", e))?;
                let table = txn.open_table(TABLE).map_err(|e| failed("count", e))?;
                table.len().map_err(|e| failed("count", e))
            })
            .await
            .unwrap()
    }

    fn past() -> Option<SystemTime> {
        Some(UNIX_EPOCH + Duration::from_secs(10))
    }

    #[tokio::test]
    async fn expired_rows_are_deleted_and_the_rest_kept() {
        let store = store(None, Some(Duration::ZERO));
        let later = Some(SystemTime::now() + Duration::from_secs(3600));
        for (key, expires) in [("a", past()), ("b", past()), ("c", None), ("d", later)] {
            store
                .put_as_is("p", key, Item::new(b"v".to_vec(), expires))
                .await
                .unwrap();
        }
        // The writer reclaims after the group before this one; this write waits behind it.
        store
            .put("p", "e", Item::new(b"v".to_vec(), None))
            .await
            .unwrap();
        assert_eq!(rows(&store).await, 3, "c, d and e are left");
        assert!(store.get("p", "d").await.unwrap().is_some());
    }

    #[test]
    fn one_pass_deletes_at_most_its_batch() {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(TABLE).unwrap();
            let expired = 10u64.to_be_bytes();
            for i in 0..5 {
                table
                    .insert(format!("p\0{i}").as_str(), expired.as_slice())
                    .unwrap();
            }
        }
        // Rows an earlier version wrote: indexed when the file is opened.
        super::super::index::cover(&txn).unwrap();
        txn.commit().unwrap();
        assert_eq!(reclaim(&db, SystemTime::now(), 3).unwrap(), 3);
        assert_eq!(reclaim(&db, SystemTime::now(), 3).unwrap(), 2);
        assert_eq!(reclaim(&db, SystemTime::now(), 3).unwrap(), 0);
    }

    /// 30 rounds of 200 expiring rows of 8 KiB (48 MB written in all) into a file: reclaimed,
    /// the file stays within a few rounds' size; left alone, it holds every round.
    #[tokio::test]
    async fn a_file_whose_rows_expire_as_they_come_keeps_its_size() {
        async fn grown(reclaiming: bool) -> u64 {
            let path =
                std::env::temp_dir().join(format!("oxp-reclaim-{}.redb", uuid::Uuid::new_v4()));
            let every = reclaiming.then_some(Duration::ZERO);
            let store = store(Some(path.clone()), every);
            for round in 0..30 {
                // At once, as a fan-out writes: committed in groups.
                let keys: Vec<String> = (0..200).map(|i| format!("{round}-{i}")).collect();
                let puts = keys
                    .iter()
                    .map(|key| store.put_as_is("p", key, Item::new(vec![7; 8 * 1024], past())));
                for put in futures_util::future::join_all(puts).await {
                    put.unwrap();
                }
            }
            drop(store);
            let size = std::fs::metadata(&path).unwrap().len();
            let _ = std::fs::remove_file(&path);
            size
        }
        let written = 30 * 200 * 8 * 1024;
        let kept = grown(true).await;
        let left = grown(false).await;
        assert!(
            left > written,
            "without reclaiming the file holds it all: {left}"
        );
        assert!(
            kept < written / 6,
            "reclaimed, the file stays small: {kept} of {written}"
        );
    }
}
