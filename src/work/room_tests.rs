//! A caller's kept results count in its room (`OXP_WORK_MAX_BYTES_PER_CALLER`) by the part
//! for as long as they are kept: a result that does not fit is replaced by what its handler
//! answers instead, other callers' rooms are their own, and a result delivered gives its room
//! back.

use super::result_tests::Delivering;
use super::*;
use crate::state::large::PART;

/// Slots held in `caller`'s room.
async fn held(store: &dyn StateStore, caller: &str) -> usize {
    let room = format!("parts-of#{caller}");
    store.list(&room, None, 100).await.unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_without_room_in_its_callers_share_is_replaced_and_other_callers_are_unaffected() {
    let store = crate::state::embedded::store(None).unwrap();
    // Room for one result of five parts (1 MiB) per caller.
    let settings = Settings {
        bytes_per_caller: 5 * PART,
        tick: Duration::from_millis(100),
        ..Settings::default()
    };
    let big: Vec<u8> = serde_json::to_vec(&"r".repeat((1 << 20) - 2)).unwrap();
    let handler = Delivering::new(big.clone(), Some("w-held"));
    let runner = Runner::new(store.clone(), settings);
    runner.register("test", handler.clone());
    let submit = |id: &'static str, caller: &'static str| {
        let runner = runner.clone();
        async move {
            let input = serde_json::json!({});
            runner
                .submit("test", id, Some(caller), input)
                .await
                .unwrap()
        }
    };
    // Alice's first result is kept while its delivery goes on: her room is full.
    submit("w-held", "alice").await;
    assert!(handler.delivered("w-held").await == big);
    assert_eq!(held(&*store, "alice").await, 5);
    // Her next result has no room: what the handler answers instead is kept and delivered.
    submit("w-next", "alice").await;
    assert_eq!(handler.delivered("w-next").await, b"\"no room\"");
    // Bob's room is his own: his result is kept whole, and given back once delivered.
    submit("w-bob", "bob").await;
    assert!(handler.delivered("w-bob").await == big);
    let started = Instant::now();
    while runner.alive("w-bob").await.unwrap() || held(&*store, "bob").await > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "bob's room given back"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        held(&*store, "alice").await,
        5,
        "alice's held result still counts"
    );
}
