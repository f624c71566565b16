//! What a subscription takes of a source's events: a copy of one it took is not taken again,
//! remembered in its own record (no row per event outlives the delivery), for its last
//! [`records::RECENT`] events.

use super::fan_out::Accepted;
use super::*;

fn limits() -> Limits {
    Limits {
        per_minute: 6000,
        max_backlog: 100,
        keep: Duration::from_secs(3600),
        per_caller: 10,
        marks_per_source: 1000,
    }
}

/// The subscriptions over a store of their own, and two open, active subscriptions of topic
/// `t` of source `s`.
async fn two_subscriptions() -> (Arc<dyn StateStore>, Subscriptions, [String; 2]) {
    let store = crate::state::embedded::store(None).unwrap();
    let runner = Runner::new(store.clone(), crate::work::Settings::default());
    let subscriptions = Subscriptions::new(store.clone(), runner, &limits());
    let subscribe = Subscribe {
        source: "s".into(),
        topic: "t".into(),
        max_events: None,
    };
    let mut ids = Vec::new();
    for call in ["c1", "c2"] {
        let owner = Owner {
            caller: None,
            group_id: "g".into(),
            tool_call_id: call.into(),
            callback_url: "http://127.0.0.1:9/".into(),
            traceparent: None,
        };
        let opened = subscriptions.open(&owner, &subscribe, 0).await.unwrap();
        subscriptions
            .activate(vec![opened.id.clone()])
            .await
            .unwrap();
        ids.push(opened.id);
    }
    (store, subscriptions, ids.try_into().unwrap())
}

async fn accepted(subscriptions: &Subscriptions, id: &str) -> u32 {
    subscriptions.read(id).await.unwrap().unwrap().0.accepted
}

#[tokio::test]
async fn a_fan_out_cut_short_and_sent_again_is_taken_once_by_each_subscription() {
    let (_store, subscriptions, [first, second]) = two_subscriptions().await;
    // The first fan-out reached one subscription before its process stopped.
    assert_eq!(
        subscriptions.accept(&first, "e1", "one").await.unwrap(),
        Accepted::Yes(crate::state::caller_key(None))
    );
    // The source sends it again: the other takes it, the first does not take it twice.
    let published = subscriptions.publish("s", "t", "e1", "one").await.unwrap();
    assert_eq!(published.accepted, 2, "both count as having it");
    assert_eq!(accepted(&subscriptions, &first).await, 1);
    assert_eq!(accepted(&subscriptions, &second).await, 1);
    // Copies racing each other to one subscription: one is taken.
    let copies =
        futures_util::future::join_all((0..4).map(|_| subscriptions.accept(&first, "e2", "two")))
            .await;
    let taken = copies
        .iter()
        .filter(|c| matches!(c, Ok(Accepted::Yes(_))))
        .count();
    assert_eq!(taken, 1, "{copies:?}");
    assert_eq!(accepted(&subscriptions, &first).await, 2);
}

#[tokio::test]
async fn a_subscription_remembers_the_marks_of_its_last_sixteen_events_and_no_row_per_event() {
    let (store, subscriptions, [first, _]) = two_subscriptions().await;
    for n in 0..=records::RECENT {
        subscriptions
            .accept(&first, &format!("e{n}"), "x")
            .await
            .unwrap();
    }
    let (sub, _) = subscriptions.read(&first).await.unwrap().unwrap();
    assert_eq!(sub.recent.len(), records::RECENT);
    // The newest are remembered; the oldest, sixteen events back, is forgotten.
    let last = format!("e{}", records::RECENT);
    assert_eq!(
        subscriptions.accept(&first, &last, "x").await.unwrap(),
        Accepted::Already
    );
    assert_eq!(
        subscriptions.accept(&first, "e0", "x").await.unwrap(),
        Accepted::Yes(crate::state::caller_key(None))
    );
    // What the events left in the store: the subscription's own events to deliver, nothing
    // per event id.
    let events = store.list(&Keys::events(&first), None, 100).await.unwrap();
    assert_eq!(events.len(), records::RECENT + 2);
}

#[tokio::test]
async fn a_subscription_that_ended_leaves_its_callers_share_and_its_calls_index() {
    let store = crate::state::embedded::store(None).unwrap();
    let runner = Runner::new(store.clone(), crate::work::Settings::default());
    let one_each = Limits {
        per_caller: 1,
        ..limits()
    };
    let subscriptions = Subscriptions::new(store.clone(), runner, &one_each);
    let owner = |call: &str| Owner {
        caller: Some("alice".into()),
        group_id: "g".into(),
        tool_call_id: call.into(),
        callback_url: "http://127.0.0.1:9/".into(),
        traceparent: None,
    };
    let once = Subscribe {
        source: "s".into(),
        topic: "t".into(),
        max_events: Some(1),
    };
    let first = subscriptions.open(&owner("c1"), &once, 0).await.unwrap();
    subscriptions
        .activate(vec![first.id.clone()])
        .await
        .unwrap();
    // The caller's share is full while it lives.
    assert!(matches!(
        subscriptions.open(&owner("c2"), &once, 0).await,
        Err(NotOpened::CallerFull)
    ));
    // Its one event delivered, it is done: the share is free again, its call has none left.
    subscriptions.publish("s", "t", "e1", "one").await.unwrap();
    let sent = std::sync::atomic::AtomicUsize::new(0);
    subscriptions
        .drain(&first.id, None, |_| {
            sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { super::Sent::Done }
        })
        .await
        .unwrap();
    assert_eq!(sent.into_inner(), 1);
    assert!(
        subscriptions
            .of_call(&owner("c1"))
            .await
            .unwrap()
            .is_empty()
    );
    let second = subscriptions.open(&owner("c2"), &once, 0).await.unwrap();
    subscriptions
        .activate(vec![second.id.clone()])
        .await
        .unwrap();
    // Cancelled: the same, and a second cancellation finds nothing to cancel.
    assert!(subscriptions.cancel_call(&owner("c2")).await.unwrap());
    assert!(!subscriptions.cancel_call(&owner("c2")).await.unwrap());
    assert!(subscriptions.open(&owner("c3"), &once, 0).await.is_ok());
    // The ended record stays for a redelivered job to find, not for the whole lifetime.
    let ended = store.get(Keys::SUB, &second.id).await.unwrap().unwrap();
    let left = ended
        .expires
        .unwrap()
        .duration_since(SystemTime::now())
        .unwrap();
    // (Stores keep expiries in whole seconds, rounded up.)
    let most = GRACE.min(limits().keep) + Duration::from_secs(1);
    assert!(left <= most, "{left:?}");
}
