//! The [`StateStore`] contract, checked the same way against every store (the embedded one in
//! memory and on disk, DynamoDB on moto).

use oxp_lambda_core::durable::{Item, StateStore};
use std::time::{Duration, SystemTime};

/// Checks `store` keeps the contract; partitions are fresh per run.
pub(crate) async fn check(store: &dyn StateStore) {
    let p = format!("conformance-{}", uuid::Uuid::new_v4().simple());
    swaps_expiry_and_listing(store, &p).await;
    ended(store, &p).await;
    decided(store, &p).await;
    due(store).await;
}

fn item(value: &[u8]) -> Item {
    Item::new(value.to_vec(), None)
}

fn keys(items: Vec<(String, Item)>) -> Vec<String> {
    items.into_iter().map(|(k, _)| k).collect()
}

/// Compare-and-swap writes, expired items, listing, partitions, deletes, refused names, and the
/// expiry a live item was written with.
async fn swaps_expiry_and_listing(store: &dyn StateStore, p: &str) {
    // Absent, then written once by a compare-and-swap on absence; a second such write fails.
    assert_eq!(store.get(p, "a").await.unwrap(), None);
    assert!(store.put_if(p, "a", item(b"1"), None).await.unwrap());
    assert!(!store.put_if(p, "a", item(b"x"), None).await.unwrap());
    // A swap from the value that is there passes, from another fails.
    assert!(!store.put_if(p, "a", item(b"3"), Some(b"2")).await.unwrap());
    assert!(store.put_if(p, "a", item(b"2"), Some(b"1")).await.unwrap());
    assert_eq!(store.get(p, "a").await.unwrap().unwrap().value, b"2");
    // An expired item reads as absent, and may be claimed again as absent.
    let past = SystemTime::now() - Duration::from_secs(60);
    store
        .put(p, "old", Item::new(b"o".to_vec(), Some(past)))
        .await
        .unwrap();
    assert_eq!(store.get(p, "old").await.unwrap(), None);
    assert!(store.put_if(p, "old", item(b"n"), None).await.unwrap());
    // Listing: key order, only live items, paged.
    for k in ["c", "b", "d"] {
        store.put(p, k, item(k.as_bytes())).await.unwrap();
    }
    store
        .put(p, "e", Item::new(b"e".to_vec(), Some(past)))
        .await
        .unwrap();
    assert_eq!(
        keys(store.list(p, None, 10).await.unwrap()),
        ["a", "b", "c", "d", "old"]
    );
    assert_eq!(keys(store.list(p, None, 2).await.unwrap()), ["a", "b"]);
    assert_eq!(keys(store.list(p, Some("b"), 2).await.unwrap()), ["c", "d"]);
    // Another partition is another namespace, even with a shared prefix.
    store
        .put(&format!("{p}x"), "a", item(b"other"))
        .await
        .unwrap();
    assert_eq!(store.list(p, None, 10).await.unwrap().len(), 5);
    // Deleting.
    store.delete(p, "a").await.unwrap();
    store.delete(p, "never-there").await.unwrap();
    assert_eq!(store.get(p, "a").await.unwrap(), None);
    // An empty partition or key is refused, by every store alike.
    assert!(store.put(p, "", item(b"x")).await.is_err());
    assert!(store.get("", "k").await.is_err());
    // The expiry a live item was written with comes back.
    let later = SystemTime::now() + Duration::from_secs(3600);
    store
        .put(p, "ttl", Item::new(b"t".to_vec(), Some(later)))
        .await
        .unwrap();
    let read = store.get(p, "ttl").await.unwrap().unwrap();
    let back = read.expires.unwrap();
    let apart = back.duration_since(later).unwrap_or_else(|e| e.duration());
    assert!(apart < Duration::from_secs(2), "{apart:?}");
}

/// An item written already expired removes what was there, under the write's condition, as does
/// a write nobody waits on.
async fn ended(store: &dyn StateStore, p: &str) {
    store.put(p, "end", item(b"live")).await.unwrap();
    let ended = || Item::new(b"ended".to_vec(), Some(SystemTime::now()));
    assert!(
        !store
            .put_if(p, "end", ended(), Some(b"other"))
            .await
            .unwrap()
    );
    assert_eq!(store.get(p, "end").await.unwrap().unwrap().value, b"live");
    assert!(
        store
            .put_if(p, "end", ended(), Some(b"live"))
            .await
            .unwrap()
    );
    assert_eq!(store.get(p, "end").await.unwrap(), None);
    assert!(!keys(store.list(p, None, 10).await.unwrap()).contains(&"end".to_owned()));
    store.put(p, "end", item(b"live")).await.unwrap();
    store.put(p, "end", ended()).await.unwrap();
    assert_eq!(store.get(p, "end").await.unwrap(), None);
    assert!(store.put_if(p, "end", item(b"again"), None).await.unwrap());
    // A write nobody waits on keeps the same condition, and is there once answered.
    assert!(
        !store
            .put_if_later(p, "end", ended(), Some(b"other"))
            .await
            .unwrap()
    );
    assert!(
        store
            .put_if_later(p, "end", ended(), Some(b"again"))
            .await
            .unwrap()
    );
    assert_eq!(store.get(p, "end").await.unwrap(), None);
}

/// A write told its decision keeps the same condition, tells what it answers, and is there
/// once answered.
async fn decided(store: &dyn StateStore, p: &str) {
    for (expected, holds) in [(Some(b"other".as_slice()), false), (None, true)] {
        let (tell, told) = std::sync::mpsc::channel();
        let decided = Box::new(move |held| tell.send(held).is_ok() && held);
        let item = Item::new(b"answer".to_vec(), None);
        let written = store.put_if_decided(p, "decided", item, expected, decided);
        assert_eq!(written.await.unwrap(), holds);
        assert_eq!(told.try_recv(), Ok(holds), "told what it answers, once");
    }
    let stored = store.get(p, "decided").await.unwrap().map(|i| i.value);
    assert_eq!(stored.as_deref(), Some(b"answer".as_slice()));
}

/// Items due by a time come back soonest first, and only those: the due time moves with each
/// write, goes with an item deleted or written without one, and is another partition's alone.
async fn due(store: &dyn StateStore) {
    let p = &format!("due-{}", uuid::Uuid::new_v4().simple());
    let now = SystemTime::now();
    let at = |secs: i64| {
        Some(if secs < 0 {
            now - Duration::from_secs(secs.unsigned_abs())
        } else {
            now + Duration::from_secs(secs.unsigned_abs())
        })
    };
    let item = |v: &str, due| Item::new(v.as_bytes().to_vec(), None).due_at(due);
    for (key, due) in [("late", at(-10)), ("later", at(-5)), ("soon", at(60))] {
        store.put(p, key, item(key, due)).await.unwrap();
    }
    store.put(p, "never", item("never", None)).await.unwrap();
    store
        .put(&format!("{p}x"), "other", item("other", at(-20)))
        .await
        .unwrap();
    // An index may be read a moment behind (DynamoDB's global secondary index): asked again.
    let due_now = || async { keys(store.due(p, SystemTime::now(), 10).await.unwrap()) };
    let settled = |want: &'static [&'static str]| async move {
        for _ in 0..50 {
            if due_now().await == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(due_now().await, want);
    };
    settled(&["late", "later"]).await;
    assert_eq!(
        keys(store.due(p, SystemTime::now(), 1).await.unwrap()),
        ["late"]
    );
    // Due later now: it moves; the item written without a due time leaves the index.
    let later = Item::new(b"late2".to_vec(), None).due_at(at(120));
    assert!(store.put_if(p, "late", later, Some(b"late")).await.unwrap());
    store.put(p, "later", item("later", None)).await.unwrap();
    store.put(p, "never", item("never", at(-1))).await.unwrap();
    settled(&["never"]).await;
    store.delete(p, "never").await.unwrap();
    settled(&[]).await;
    assert_eq!(
        keys(
            store
                .due(p, now + Duration::from_secs(3600), 10)
                .await
                .unwrap()
        ),
        ["soon", "late"]
    );
}
