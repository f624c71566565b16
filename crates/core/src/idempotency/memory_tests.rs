use super::*;
use serde_json::json;

fn outcome() -> StoredOutcome {
    StoredOutcome::new(&Ok(json!(15).into()), Duration::from_millis(2))
}

#[tokio::test]
async fn a_key_is_claimed_once_then_replayed_or_refused() {
    let store = MemoryStore::new(1 << 20);
    let hold = Duration::from_secs(5);
    assert_eq!(store.claim("k", "f1", hold).await.unwrap(), Claim::Acquired);
    assert_eq!(
        store.claim("k", "f1", hold).await.unwrap(),
        Claim::InProgress
    );
    assert_eq!(store.claim("k", "f2", hold).await.unwrap(), Claim::Conflict);
    store
        .complete("k", "f1", &outcome(), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        store.claim("k", "f1", hold).await.unwrap(),
        Claim::Completed(outcome())
    );
    assert_eq!(store.claim("k", "f2", hold).await.unwrap(), Claim::Conflict);
}

#[tokio::test]
async fn a_repeat_gets_the_stored_outcome_whole_content_and_errors_included() {
    use crate::content::{Content, ToolOutput};
    use crate::tool::ToolError;
    let store = MemoryStore::new(1 << 20);
    let hold = Duration::from_secs(60);
    let output = ToolOutput::new(json!({"sum": 0.1 + 0.2, "note": "\u{2603} \"quoted\""}))
        .content(Content::text("a line"))
        .content(Content::image(vec![0, 255, 7], "image/png"));
    let failed = ToolError::new("no").developer_message("why not");
    for (key, result) in [("ok", Ok(output)), ("failed", Err(failed))] {
        let stored = StoredOutcome::new(&result, Duration::from_micros(1_234));
        store.claim(key, "f", hold).await.unwrap();
        store.complete(key, "f", &stored, hold).await.unwrap();
        assert_eq!(
            store.claim(key, "f", hold).await.unwrap(),
            Claim::Completed(stored),
            "{key}"
        );
    }
}

#[tokio::test]
async fn each_outcome_weighs_what_it_takes_beside_its_json_so_the_bound_is_near_its_memory() {
    let store = MemoryStore::new(64 * 1024);
    let hold = Duration::from_secs(60);
    for i in 0..10_000 {
        let key = format!("k{i}");
        store.claim(&key, "f", hold).await.unwrap();
        store.complete(&key, "f", &outcome(), hold).await.unwrap();
    }
    // An outcome of a few bytes still takes its entry: weighed by its JSON and 64 bytes, a
    // 64 KiB store kept 660 of them, more than three times what fits.
    let most = 64 * 1024 / ENTRY_OVERHEAD;
    assert!(
        (store.completed.len() as u64) <= most,
        "{} outcomes kept",
        store.completed.len()
    );
}

#[test]
fn a_repeat_while_the_outcome_is_stored_finds_the_claim_or_the_outcome_never_a_free_key() {
    use futures_util::FutureExt;
    const HOLD: Duration = Duration::from_secs(60);
    fn claim(store: &MemoryStore, key: &str) -> Claim {
        let answer = store.claim(key, "f", HOLD).now_or_never();
        answer
            .expect("ready when made")
            .expect("the memory store answers")
    }
    let store = Arc::new(MemoryStore::new(1 << 24));
    for round in 0..500 {
        let key = format!("k{round}");
        assert_eq!(claim(&store, &key), Claim::Acquired);
        let repeats = {
            let (store, key) = (store.clone(), key.clone());
            std::thread::spawn(move || {
                (0..200)
                    .map(|_| claim(&store, &key))
                    .filter(|c| !matches!(c, Claim::InProgress | Claim::Completed(_)))
                    .count()
            })
        };
        let stored = store.complete(&key, "f", &outcome(), HOLD).now_or_never();
        stored.expect("ready when made").unwrap();
        assert_eq!(
            repeats.join().unwrap(),
            0,
            "a repeat of {key} found it free"
        );
    }
}

#[tokio::test]
async fn records_expire_and_released_keys_are_free() {
    let store = MemoryStore::new(1 << 20);
    assert_eq!(
        store
            .claim("k", "f", Duration::from_millis(20))
            .await
            .unwrap(),
        Claim::Acquired
    );
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(
        store.claim("k", "f", Duration::from_secs(5)).await.unwrap(),
        Claim::Acquired,
        "an expired claim is free"
    );
    store.release("k", "f").await.unwrap();
    assert_eq!(
        store
            .claim("k", "other", Duration::from_secs(5))
            .await
            .unwrap(),
        Claim::Acquired
    );
    store
        .complete("k", "other", &outcome(), Duration::from_millis(20))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(
        store.claim("k", "f", Duration::from_secs(5)).await.unwrap(),
        Claim::Acquired,
        "an outcome kept past its time is gone"
    );
}

#[tokio::test]
async fn stored_outcomes_are_bounded_by_bytes_and_claims_in_progress_are_never_evicted() {
    let store = MemoryStore::new(64 * 1024);
    let hold = Duration::from_secs(60);
    assert_eq!(
        store.claim("running", "f", hold).await.unwrap(),
        Claim::Acquired
    );
    let big = StoredOutcome::new(&Ok(json!("x".repeat(4096)).into()), Duration::ZERO);
    for i in 0..200 {
        let key = format!("k{i}");
        store.claim(&key, "f", hold).await.unwrap();
        store.complete(&key, "f", &big, hold).await.unwrap();
    }
    assert!(
        store.completed.weight() <= 64 * 1024,
        "{} bytes stored",
        store.completed.weight()
    );
    assert!(store.completed.len() < 200, "outcomes were evicted");
    assert_eq!(
        store.claim("running", "f", hold).await.unwrap(),
        Claim::InProgress,
        "the claim in progress is still held"
    );
}

fn keyed(caller: &str, call: usize) -> String {
    crate::idempotency::scoped_key("oxp", Some(caller), None, &format!("c{call}"))
}

async fn call(store: &MemoryStore, key: &str) -> Claim {
    let hold = Duration::from_secs(60);
    let claim = store.claim(key, "f", hold).await.unwrap();
    if claim == Claim::Acquired {
        store.complete(key, "f", &outcome(), hold).await.unwrap();
    }
    claim
}

#[tokio::test]
async fn a_caller_past_its_share_evicts_its_own_oldest_outcomes_never_another_callers() {
    // The store holds about 2,400 small outcomes; one caller, at most about 150.
    let store = MemoryStore::with_share(1 << 20, 64 * 1024);
    // Bob's calls come between alice's, each time far past her share.
    for i in 0..10_000 {
        if i == 5_000 {
            for i in 0..10 {
                assert_eq!(call(&store, &keyed("bob", i)).await, Claim::Acquired);
            }
        }
        assert_eq!(call(&store, &keyed("alice", i)).await, Claim::Acquired);
    }
    // Without shares (`MemoryStore::new`), alice's calls evicted all ten of bob's.
    for i in 0..10 {
        let replay = call(&store, &keyed("bob", i)).await;
        assert!(
            matches!(replay, Claim::Completed(_)),
            "bob's call {i} ran again"
        );
    }
    let (bytes, kept) = store
        .books()
        .shares
        .as_ref()
        .unwrap()
        .held(&keyed("alice", 0));
    assert!(
        bytes <= 64 * 1024 && kept > 100,
        "alice holds {kept} in {bytes} bytes"
    );
    let newest = call(&store, &keyed("alice", 9_999)).await;
    assert!(matches!(newest, Claim::Completed(_)));
    assert_eq!(call(&store, &keyed("alice", 0)).await, Claim::Acquired);
}

#[tokio::test]
async fn the_shares_list_what_the_cache_holds_and_forget_a_caller_with_nothing_stored() {
    let store = MemoryStore::with_share(64 * 1024, 16 * 1024);
    let hold = Duration::from_secs(60);
    // 300 callers of 4 outcomes each, far past the store: the cache evicts across callers.
    for caller in 0..300 {
        for i in 0..4 {
            call(&store, &keyed(&format!("u{caller}"), i)).await;
        }
    }
    // An outcome stored again under its key (its claim lapsed and was taken again) replaces it.
    for _ in 0..3 {
        let again = keyed("u299", 3);
        store.complete(&again, "f", &outcome(), hold).await.unwrap();
    }
    let (callers, listed, _, _) = store.books().shares.as_ref().unwrap().totals();
    assert_eq!(listed, store.completed.len(), "listed as the cache holds");
    assert!(
        callers < 300 && callers <= listed,
        "{callers} callers listed"
    );
    // Outcomes read past their time leave the cache and their callers' lists.
    let brief = Duration::from_millis(20);
    let store = MemoryStore::with_share(1 << 20, 64 * 1024);
    let key = keyed("carol", 1);
    store.claim(&key, "f", hold).await.unwrap();
    store.complete(&key, "f", &outcome(), brief).await.unwrap();
    assert_eq!(callers_and_outcomes(&store), (1, 1));
    tokio::time::sleep(brief * 2).await;
    assert_eq!(store.claim(&key, "f", hold).await.unwrap(), Claim::Acquired);
    assert_eq!(callers_and_outcomes(&store), (0, 0), "carol is forgotten");
}

#[tokio::test]
async fn an_outcome_larger_than_a_share_is_not_kept_and_its_key_is_free() {
    let store = MemoryStore::with_share(1 << 20, 4 * 1024);
    let hold = Duration::from_secs(60);
    let big = StoredOutcome::new(&Ok(json!("x".repeat(8 * 1024)).into()), Duration::ZERO);
    let key = keyed("dave", 1);
    store.claim(&key, "f", hold).await.unwrap();
    store.complete(&key, "f", &big, hold).await.unwrap();
    assert_eq!(store.claim(&key, "f", hold).await.unwrap(), Claim::Acquired);
    assert_eq!(callers_and_outcomes(&store), (0, 0));
}

#[tokio::test]
async fn whatever_callers_do_the_shares_weigh_exactly_what_the_cache_holds() {
    // Claims, outcomes small and large, releases, outcomes past their time read again, an
    // outcome stored twice: after each step the shares list the cache's entries and weigh its
    // weight, and no caller holds more than its share.
    let (per_caller, hold) = (8 * 1024, Duration::from_secs(60));
    let store = MemoryStore::with_share(24 * 1024, per_caller);
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let big = StoredOutcome::new(&Ok(json!("x".repeat(2048)).into()), Duration::ZERO);
    for step in 0..20_000 {
        let key = keyed(&format!("u{}", next(8)), next(120) as usize);
        let (stored, keep) = match next(10) {
            0 => (&big, hold),
            1 => (&big, Duration::ZERO),
            _ => (&outcome(), hold),
        };
        match next(6) {
            0 => store.release(&key, "f").await.unwrap(),
            1 => store.complete(&key, "f", stored, keep).await.unwrap(),
            _ => {
                if store.claim(&key, "f", hold).await.unwrap() == Claim::Acquired {
                    store.complete(&key, "f", stored, keep).await.unwrap();
                }
            }
        }
        let books = store.books();
        let (_, listed, bytes, most) = books.shares.as_ref().unwrap().totals();
        assert_eq!(listed, store.completed.len(), "step {step}");
        assert_eq!(bytes, store.completed.weight(), "step {step}");
        assert!(
            most <= per_caller,
            "step {step}: {most} bytes of one caller"
        );
    }
}

/// How many callers the store's shares list, and how many outcomes in all.
fn callers_and_outcomes(store: &MemoryStore) -> (usize, usize) {
    let (callers, outcomes, _, _) = store.books().shares.as_ref().unwrap().totals();
    (callers, outcomes)
}
