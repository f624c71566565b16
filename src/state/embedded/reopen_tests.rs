//! The embedded store after a write to its file failed (a full disk): it serves again once the
//! disk does, without a restart, and keeps what was committed.

use super::*;
use redb::StorageBackend;
use redb::backends::FileBackend;
use std::sync::atomic::{AtomicBool, Ordering};

/// A file whose writes fail while `full` is set, as a full disk's do.
#[derive(Debug)]
pub(super) struct Faulty {
    file: FileBackend,
    full: Arc<AtomicBool>,
}

impl Faulty {
    /// The database file at `path`, its writes failing while `full` is set.
    pub(super) fn open(path: &Path, full: Option<Arc<AtomicBool>>) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(Self {
            file: FileBackend::new(file),
            full: full.unwrap_or_default(),
        })
    }

    fn check(&self) -> Result<(), redb::BackendError> {
        match self.full.load(Ordering::SeqCst) {
            true => Err(std::io::Error::from(std::io::ErrorKind::StorageFull).into()),
            false => Ok(()),
        }
    }
}

impl StorageBackend for Faulty {
    fn len(&self) -> Result<u64, redb::BackendError> {
        self.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), redb::BackendError> {
        self.file.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), redb::BackendError> {
        self.check()?;
        self.file.set_len(len)
    }

    fn sync_data(&self) -> Result<(), redb::BackendError> {
        self.check()?;
        self.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), redb::BackendError> {
        self.check()?;
        self.file.write(offset, data)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_whose_disk_filled_serves_again_once_it_has_room_and_keeps_what_was_committed() {
    let path = std::env::temp_dir().join(format!("oxp-state-{}.redb", uuid::Uuid::new_v4()));
    let full = Arc::new(AtomicBool::new(false));
    let mut store = Embedded::new(Some(path.clone()));
    store.opener.faults = Some(full.clone());
    let item = |v: &[u8]| Item::new(v.to_vec(), None);
    store.put("p", "before", item(b"1")).await.unwrap();

    full.store(true, Ordering::SeqCst);
    assert!(store.put("p", "while-full", item(b"2")).await.is_err());
    // redb refuses every transaction after the failed one until it is opened again.
    assert!(store.put("p", "still-full", item(b"3")).await.is_err());

    full.store(false, Ordering::SeqCst);
    // Once the disk has room the file is opened again within a second (the writer tries once
    // a second), whether or not anything is written: a read alone (a sweep's) finds it open.
    // Before, every write failed until the process restarted ("Previous I/O error occurred").
    let roomy = std::time::Instant::now();
    while store.get("p", "before").await.is_err() {
        assert!(
            roomy.elapsed() < Duration::from_secs(3),
            "never opened again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        roomy.elapsed() < Duration::from_millis(1500),
        "{:?}",
        roomy.elapsed()
    );
    store.put("p", "after", item(b"4")).await.unwrap();
    let read = |key: &'static str| {
        let store = &store;
        async move { store.get("p", key).await.unwrap().map(|i| i.value) }
    };
    assert_eq!(read("before").await.as_deref(), Some(&b"1"[..]));
    assert_eq!(read("after").await.as_deref(), Some(&b"4"[..]));
    assert_eq!(read("while-full").await, None);
    assert_eq!(read("still-full").await, None);
    // A compare-and-swap works on what is there, and reads of a whole partition do too.
    let swapped = store.put_if("p", "before", item(b"5"), Some(b"1")).await;
    assert!(swapped.unwrap());
    assert_eq!(store.list("p", None, 10).await.unwrap().len(), 2);
    drop(store);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(lock_path(&path));
}

#[tokio::test]
async fn a_store_in_memory_is_never_opened_again() {
    // Opened again, a database in memory would be empty: what a failure leaves, it keeps.
    let store = Embedded::new(None);
    store
        .put("p", "k", Item::new(b"v".to_vec(), None))
        .await
        .unwrap();
    assert!(store.get("p", "k").await.unwrap().is_some());
}
