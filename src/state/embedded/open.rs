//! Opening the embedded database, and opening it again after a write failed. After an I/O
//! error in a commit (a full disk, a disk that failed for a moment) redb refuses every later
//! transaction (`PreviousIo`) until the database is closed and opened again: without that a
//! disk that filled once, then had room again, left the server refusing every invocation,
//! answer and subscription until it was restarted. The writer, the store's one writer, closes
//! it once its readers are done with it, and opens it again a second later, and once a second
//! while that fails, whether or not anything is written (redb repairs the file then, as after
//! a crash: what was committed is kept); meanwhile writes and reads fail as the store's errors
//! do (retryable).

use super::{TABLE, failed, index};
use crate::state::private_file;
use oxp_lambda_core::durable::StateError;
use redb::Database;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The open database, where the readers take it for each read: `None` while it is opened again.
pub(super) type Slot = Arc<Mutex<Option<Arc<Database>>>>;

/// How long the writer waits between tries to open the database again.
pub(super) const RETRY: Duration = Duration::from_secs(1);

/// The slot's database, as it is now.
pub(super) fn current(slot: &Slot) -> Option<Arc<Database>> {
    lock(slot).clone()
}

fn lock(slot: &Slot) -> MutexGuard<'_, Option<Arc<Database>>> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a read or write meets while the database is opened again.
pub(super) fn reopening() -> StateError {
    StateError("state store: the state file is being opened again after a failed write".into())
}

/// How the database is opened: its file (`None`: in memory) and the page cache's size.
#[derive(Clone)]
pub(super) struct Opener {
    pub(super) path: Option<PathBuf>,
    pub(super) cache_bytes: usize,
    /// A test's switch that makes the file's writes fail (`reopen_tests::Faulty`).
    #[cfg(test)]
    pub(super) faults: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl Opener {
    /// Opens (or creates) the database, its tables and indexes in place.
    pub(super) fn open(&self) -> Result<Database, StateError> {
        if let Some(path) = &self.path {
            private_file(path)
                .map_err(|e| StateError(format!("state store: open {}: {e}", path.display())))?;
        }
        let mut builder = Database::builder();
        builder.set_cache_size(self.cache_bytes);
        let db = match &self.path {
            #[cfg(test)]
            Some(path) if self.faults.is_some() => {
                let faulty = super::reopen_tests::Faulty::open(path, self.faults.clone());
                builder.create_with_backend(faulty.map_err(|e| failed("open", e))?)
            }
            Some(path) => builder.create(path),
            None => builder.create_with_backend(redb::backends::InMemoryBackend::new()),
        }
        .map_err(|e| failed("open", e))?;
        // The tables exist from the start, so a read never finds one missing; a file of an
        // earlier version gets its indexes now.
        let txn = db.begin_write().map_err(|e| failed("open", e))?;
        txn.open_table(TABLE).map_err(|e| failed("open", e))?;
        index::cover(&txn)?;
        txn.commit().map_err(|e| failed("open", e))?;
        Ok(db)
    }
}

/// The writer's database: the slot's, closed when a failed write stopped it and opened again.
pub(super) struct Current {
    slot: Slot,
    opener: Opener,
    db: Option<Arc<Database>>,
    next_try: Instant,
}

impl Current {
    pub(super) fn new(slot: Slot, opener: Opener) -> Self {
        let db = current(&slot);
        Self {
            slot,
            opener,
            db,
            next_try: Instant::now(),
        }
    }

    /// The database to write to: opened again first if it was closed (and a try is due).
    pub(super) fn get(&mut self) -> Option<&Database> {
        if self.db.is_none() && Instant::now() >= self.next_try {
            match self.opener.open() {
                Ok(db) => {
                    let db = Arc::new(db);
                    *lock(&self.slot) = Some(db.clone());
                    self.db = Some(db);
                    tracing::warn!(target: "oxp::state", "state store: the state file is open again; writes go on");
                }
                Err(e) => {
                    self.next_try = Instant::now() + RETRY;
                    tracing::error!(target: "oxp::state", error = %e.0, "state store: the state file could not be opened again; trying again in a second");
                }
            }
        }
        self.db.as_deref()
    }

    /// The database as it is, not opened again.
    pub(super) fn open_now(&self) -> Option<&Database> {
        self.db.as_deref()
    }

    /// After a write failed: a file's database that stopped at it is taken from the readers,
    /// closed once the reads under way end, and opened again a second later. (One in
    /// memory is kept: opened again, it would be empty.)
    pub(super) fn after_failure(&mut self) {
        if self.opener.path.is_none() || !self.db.as_deref().is_some_and(stopped) {
            return;
        }
        tracing::error!(target: "oxp::state", "state store: a write to the state file failed and stopped the database (a full disk?): closing it to open it again");
        lock(&self.slot).take();
        let Some(mut db) = self.db.take() else {
            return;
        };
        // A read under way holds the database for as long as the read takes; no new one
        // starts (the slot is empty).
        loop {
            match Arc::try_unwrap(db) {
                Ok(alone) => break drop(alone),
                Err(shared) => {
                    db = shared;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        // Opened again after a second: on a disk still full, every write would otherwise
        // open it and fail again.
        self.next_try = Instant::now() + RETRY;
    }
}

/// Whether `db` refuses every transaction after an earlier I/O error, until it is opened again.
fn stopped(db: &Database) -> bool {
    matches!(
        db.begin_write(),
        Err(redb::TransactionError::Storage(
            redb::StorageError::PreviousIo
        ))
    )
}
