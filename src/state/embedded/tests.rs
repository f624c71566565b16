//! The embedded store: its contract in memory and on disk, group commits, the file's lock.

use super::rows::secs;
use super::*;

impl Embedded {
    /// Writes `item` as it is, kept even when it expired already (a row that expired while
    /// stored, which the reclaim deletes): for the tests of what happens to such rows.
    pub(crate) async fn put_as_is(
        &self,
        partition: &str,
        key: &str,
        item: Item,
    ) -> Result<(), StateError> {
        let (row, bytes) = (row(partition, key)?, encode(&item)?);
        self.write(row, Write::Put(bytes), item.due, writer::Waits::Flush)
            .await
            .map(drop)
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_committed_together_keep_their_order_and_compare_and_swap() {
    let store = Arc::new(Embedded::new(None));
    // 64 writers race to create one row: one group or several, exactly one wins.
    let racers: Vec<_> = (0..64u8)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .put_if("p", "once", Item::new(vec![i], None), None)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut won = 0;
    for racer in racers {
        won += usize::from(racer.await.unwrap());
    }
    assert_eq!(won, 1);
    // Each writer's own rows, written at once, are all there.
    let writers: Vec<_> = (0..64)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let key = format!("k{i:02}");
                store
                    .put("many", &key, Item::new(key.clone().into_bytes(), None))
                    .await
                    .unwrap();
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let listed = store.list("many", None, 100).await.unwrap();
    assert_eq!(listed.len(), 64);
    assert!(listed.iter().all(|(k, item)| item.value == k.as_bytes()));
}

#[tokio::test]
async fn a_second_store_on_the_same_file_is_refused_naming_it_and_the_file_is_its_owners() {
    let path = std::env::temp_dir().join(format!("oxp-state-{}.redb", uuid::Uuid::new_v4()));
    let first = store(Some(path.clone())).unwrap();
    let second = store(Some(path.clone())).unwrap_err();
    assert!(
        second.contains(&path.display().to_string()) && second.contains("OXP_STATE_PATH"),
        "{second}"
    );
    first
        .put("p", "k", Item::new(b"v".to_vec(), None))
        .await
        .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for file in [path.clone(), lock_path(&path)] {
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", file.display());
        }
    }
    drop(first);
    // Once the first is gone, the file is free again.
    let again = store(Some(path.clone())).unwrap();
    assert!(again.get("p", "k").await.unwrap().is_some());
    drop(again);
    let _ = std::fs::remove_file(lock_path(&path));
    let _ = std::fs::remove_file(path);
}

#[cfg(unix)]
#[tokio::test]
async fn a_file_left_open_to_others_is_made_its_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::temp_dir().join(format!("oxp-state-{}.redb", uuid::Uuid::new_v4()));
    std::fs::write(&path, b"").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let opened = store(Some(path.clone())).unwrap();
    opened.get("p", "k").await.unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    drop(opened);
    let _ = std::fs::remove_file(lock_path(&path));
    let _ = std::fs::remove_file(path);
}

#[test]
fn nothing_is_opened_before_the_first_use() {
    let path = std::env::temp_dir().join(format!("oxp-state-{}.redb", uuid::Uuid::new_v4()));
    let store = Embedded::new(Some(path.clone()));
    assert!(!store.db.initialized());
    assert!(!path.exists(), "no file until a request needs the store");
}

#[test]
fn an_expiry_is_kept_in_whole_seconds_rounded_up_so_an_item_never_expires_early() {
    let at = |ms| UNIX_EPOCH + Duration::from_millis(ms);
    assert_eq!(secs(at(1_500)), 2);
    assert_eq!(secs(at(2_000)), 2);
    assert_eq!(secs(at(2_001)), 3);
    let item = Item::new(b"v".to_vec(), Some(at(1_500)));
    let stored = decode(&encode(&item).unwrap(), at(1_999)).expect("live until its time");
    assert!(stored.expires.unwrap() >= at(1_500));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_nobody_waits_on_shares_the_next_flush_and_is_durable_when_answered() {
    use std::time::Instant;
    let path = std::env::temp_dir().join(format!("oxp-state-{}.redb", uuid::Uuid::new_v4()));
    let store = Arc::new(Embedded::new(Some(path.clone())));
    // The file opened by a first write, so the times below are the writer's alone.
    store
        .put("p", "open", Item::new(b"o".to_vec(), None))
        .await
        .unwrap();
    // Alone, it waits for company, then has a flush of its own.
    let alone = Instant::now();
    let alone_item = Item::new(b"a".to_vec(), None);
    assert!(
        store
            .put_if_later("p", "alone", alone_item, None)
            .await
            .unwrap()
    );
    assert!(alone.elapsed() >= writer::LATER, "flushed alone at once");
    // Beside a write somebody waits on, made a moment later: both in its flush, long before
    // the wait is over.
    let beside = Instant::now();
    let later = store.put_if_later("p", "beside", Item::new(b"b".to_vec(), None), None);
    let waited = async {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        store
            .put("p", "waited", Item::new(b"w".to_vec(), None))
            .await
    };
    let (later, waited) = tokio::join!(later, waited);
    assert!(later.unwrap());
    waited.unwrap();
    assert!(beside.elapsed() < writer::LATER, "it waited out its time");
    // Answered means on disk: the file opened again has every one.
    drop(store);
    let again = Embedded::new(Some(path.clone()));
    for key in ["alone", "beside", "waited"] {
        assert!(again.get("p", key).await.unwrap().is_some(), "{key} lost");
    }
    drop(again);
    let _ = std::fs::remove_file(path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decided_write_is_told_before_its_flush_which_the_write_that_follows_shares() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let item = |v: &[u8]| Item::new(v.to_vec(), None);
    // Told, with nothing to follow: committed at once, not held (timed in memory, where a
    // commit takes no flush whose time a loaded disk may stretch).
    let memory = Embedded::new(None);
    memory.put("p", "open", item(b"o")).await.unwrap();
    let alone = Instant::now();
    let told_alone = Box::new(|held: bool| {
        assert!(held);
        false
    });
    let written = memory.put_if_decided("p", "alone", item(b"a"), None, told_alone);
    assert!(written.await.unwrap());
    assert!(
        alone.elapsed() < writer::LATER,
        "held with nothing to follow"
    );
    let path = std::env::temp_dir().join(format!("oxp-state-{}.redb", uuid::Uuid::new_v4()));
    let store = Arc::new(Embedded::new(Some(path.clone())));
    // Told, with a write to follow (made 10 ms after the decision, some flushes' time): the
    // decided write is answered in that write's flush, not in one of its own before it.
    let (told, decision) = tokio::sync::oneshot::channel();
    let tell = Box::new(move |held: bool| {
        let _ = told.send(held);
        true
    });
    let followed = AtomicBool::new(false);
    let decided = async {
        let held = store
            .put_if_decided("p", "answer", item(b"first"), None, tell)
            .await;
        (held, followed.load(Ordering::SeqCst))
    };
    let follow = async {
        assert!(decision.await.unwrap(), "told before it was durable");
        tokio::time::sleep(Duration::from_millis(10)).await;
        followed.store(true, Ordering::SeqCst);
        store.put("p", "outcome", item(b"out")).await
    };
    let ((held, after_the_follow), follow) = tokio::join!(decided, follow);
    assert!(held.unwrap());
    follow.unwrap();
    assert!(
        after_the_follow,
        "flushed alone before the write that followed"
    );
    // Its condition failing: told so, nothing written.
    let refused = Box::new(|held: bool| {
        assert!(!held);
        false
    });
    let second = store.put_if_decided("p", "answer", item(b"second"), None, refused);
    assert!(!second.await.unwrap());
    // Answered means on disk: the file opened again has each as written.
    drop(store);
    let again = Embedded::new(Some(path.clone()));
    for (key, value) in [("answer", b"first".as_slice()), ("outcome", b"out")] {
        let got = again.get("p", key).await.unwrap();
        assert_eq!(got.map(|i| i.value).as_deref(), Some(value), "{key}");
    }
    drop(again);
    let _ = std::fs::remove_file(path);
}
