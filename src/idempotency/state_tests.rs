//! The records' contract, the same against the embedded store (in memory) and DynamoDB on moto
//! (started by the test command). Through the app: `tests/idempotency.rs`.

use super::{PARTITION, StateRecords};
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::idempotency::{Claim, IdempotencyStore, StoredOutcome};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn outcome(v: i64) -> StoredOutcome {
    StoredOutcome::new(&Ok(json!(v).into()), Duration::from_millis(3))
}

/// Keys are fresh per run: the DynamoDB table may be shared.
async fn contract(state: Arc<dyn StateStore>) {
    let store = StateRecords::new(state.clone());
    let run = uuid::Uuid::new_v4().simple().to_string();
    let key = |k: &str| format!("{run}-{k}");
    let (k, short) = (key("k"), Duration::from_secs(1));

    // A key is claimed once; the same call again is in progress, another call a conflict.
    assert_eq!(store.claim(&k, "f", short).await.unwrap(), Claim::Acquired);
    assert_eq!(
        store.claim(&k, "f", short).await.unwrap(),
        Claim::InProgress
    );
    assert_eq!(store.claim(&k, "g", short).await.unwrap(), Claim::Conflict);
    let held = state.get(PARTITION, &k).await.unwrap().expect("a record");
    assert!(held.expires.is_some(), "a claim expires");

    // A claim whose invocation died holds until its deadline, then is taken over.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let hold = Duration::from_secs(30);
    assert_eq!(store.claim(&k, "f", hold).await.unwrap(), Claim::Acquired);

    // Completed: replayed to the same call, refused to another, and a release leaves it.
    store
        .complete(&k, "f", &outcome(1), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        store.claim(&k, "f", hold).await.unwrap(),
        Claim::Completed(outcome(1))
    );
    assert_eq!(store.claim(&k, "g", hold).await.unwrap(), Claim::Conflict);
    store.release(&k, "f").await.unwrap();
    assert!(matches!(
        store.claim(&k, "f", hold).await.unwrap(),
        Claim::Completed(_)
    ));

    // Released (a retryable failure): free at once, for any call.
    let r = key("released");
    assert_eq!(store.claim(&r, "f", hold).await.unwrap(), Claim::Acquired);
    store.release(&r, "f").await.unwrap();
    assert_eq!(store.claim(&r, "g", hold).await.unwrap(), Claim::Acquired);
    // A late release or completion by the call whose claim was taken over changes nothing.
    store.release(&r, "f").await.unwrap();
    store
        .complete(&r, "f", &outcome(2), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(store.claim(&r, "g", hold).await.unwrap(), Claim::InProgress);
    store
        .complete(&r, "g", &outcome(3), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        store.claim(&r, "g", hold).await.unwrap(),
        Claim::Completed(outcome(3))
    );

    // An outcome kept past its time is gone.
    let e = key("expiring");
    assert_eq!(store.claim(&e, "f", hold).await.unwrap(), Claim::Acquired);
    store
        .complete(&e, "f", &outcome(4), Duration::from_secs(1))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(store.claim(&e, "g", hold).await.unwrap(), Claim::Acquired);
}

#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn records_on_the_embedded_store_are_claimed_once_replayed_released_and_expire() {
    contract(crate::state::embedded::store(None).unwrap()).await;
}

#[cfg(feature = "dynamodb")]
#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn records_on_dynamodb_are_claimed_once_replayed_released_and_expire() {
    let (client, table) = crate::moto::state_table().await;
    contract(Arc::new(crate::state::dynamodb::DynamoState::new(
        client, table,
    )))
    .await;
}

#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn a_new_key_is_claimed_completed_and_released_each_in_one_write_without_a_read() {
    let counting = crate::state::counting::CountingReads::of(
        crate::state::embedded::store(None).unwrap(),
        PARTITION,
    );
    let store = StateRecords::new(counting.clone());
    let hold = Duration::from_secs(30);
    assert_eq!(store.claim("k", "f", hold).await.unwrap(), Claim::Acquired);
    store
        .complete("k", "f", &outcome(1), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(store.claim("r", "f", hold).await.unwrap(), Claim::Acquired);
    store.release("r", "f").await.unwrap();
    assert_eq!(
        counting.reads(),
        0,
        "no read: each write starts from what the last one wrote"
    );
    assert_eq!(
        store.claim("k", "f", hold).await.unwrap(),
        Claim::Completed(outcome(1))
    );
    assert_eq!(store.claim("r", "g", hold).await.unwrap(), Claim::Acquired);
}

#[cfg(feature = "embedded-state")]
fn keyed(caller: &str, call: usize) -> String {
    oxp_lambda_core::idempotency::scoped_key("oxp", Some(caller), None, &format!("c{call}"))
}

#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn a_callers_outcomes_past_its_share_are_deleted_oldest_first_never_another_callers() {
    // About ten small outcomes a caller.
    let share = 6_000;
    let store = StateRecords::with_share(crate::state::embedded::store(None).unwrap(), share);
    let (hold, keep) = (Duration::from_secs(30), Duration::from_secs(60));
    let call = |key: String, n: i64| {
        let store = &store;
        async move {
            assert_eq!(store.claim(&key, "f", hold).await.unwrap(), Claim::Acquired);
            store.complete(&key, "f", &outcome(n), keep).await.unwrap();
        }
    };
    for i in 0..3 {
        call(keyed("bob", i), 1).await;
    }
    for i in 0..100 {
        call(keyed("alice", i), 2).await;
    }
    for i in 0..3 {
        let replay = store.claim(&keyed("bob", i), "f", hold).await.unwrap();
        assert_eq!(replay, Claim::Completed(outcome(1)), "bob's call {i}");
    }
    let books = store.books.as_ref().unwrap();
    let (bytes, kept, _) = books.held(&keyed("alice", 0));
    assert!(
        bytes <= share && kept >= 5,
        "alice holds {kept} in {bytes} bytes"
    );
    let newest = store.claim(&keyed("alice", 99), "f", hold).await.unwrap();
    assert_eq!(newest, Claim::Completed(outcome(2)));
    let oldest = store.claim(&keyed("alice", 0), "f", hold).await.unwrap();
    assert_eq!(oldest, Claim::Acquired, "deleted past alice's share");
}

#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn a_deletion_takes_the_outcome_it_counted_never_a_later_one_under_its_key() {
    let store = StateRecords::with_share(crate::state::embedded::store(None).unwrap(), 1 << 20);
    let (k, keep) = (keyed("carol", 1), Duration::from_secs(60));
    assert_eq!(store.claim(&k, "f", keep).await.unwrap(), Claim::Acquired);
    store.complete(&k, "f", &outcome(1), keep).await.unwrap();
    let stamp = || async {
        let item = store.store.get(PARTITION, &k).await.unwrap();
        let record = item.expect("stored").value;
        serde_json::from_slice::<super::Record>(&record)
            .unwrap()
            .stamp
    };
    let first = stamp().await.expect("stamped");
    // Stored again (its claim lapsed and was taken again by the same call): a new stamp.
    store.complete(&k, "f", &outcome(2), keep).await.unwrap();
    let second = stamp().await.expect("stamped");
    assert_ne!(first, second);
    store.delete(&k, first).await;
    let replay = store.claim(&k, "f", keep).await.unwrap();
    assert_eq!(
        replay,
        Claim::Completed(outcome(2)),
        "the later outcome stays"
    );
    store.delete(&k, second).await;
    assert_eq!(store.claim(&k, "f", keep).await.unwrap(), Claim::Acquired);
}

#[cfg(feature = "embedded-state")]
#[tokio::test]
async fn a_callers_outcomes_leave_the_books_when_their_time_has_passed() {
    let store = StateRecords::with_share(crate::state::embedded::store(None).unwrap(), 1 << 20);
    let brief = Duration::from_millis(300);
    for i in 0..3 {
        let k = keyed("dave", i);
        store.claim(&k, "f", brief).await.unwrap();
        store.complete(&k, "f", &outcome(1), brief).await.unwrap();
    }
    let books = store.books.as_ref().unwrap();
    assert_eq!(books.held(&keyed("dave", 0)).1, 3);
    tokio::time::sleep(brief * 2).await;
    let k = keyed("dave", 9);
    store.claim(&k, "f", brief).await.unwrap();
    store.complete(&k, "f", &outcome(1), brief).await.unwrap();
    assert_eq!(books.held(&k).1, 1, "the three expired left");
}
