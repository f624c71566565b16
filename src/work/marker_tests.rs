//! What stays of ended work: a marker for as long as its kind says (a repeat of its id meanwhile
//! is no new work), none for a kind whose ids never repeat; and work that more came for while
//! it ran is kept as live work, not as an ended marker.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A handler whose runs take `takes` and end done, its kind's ended work kept `marker`.
struct Ends {
    marker: Duration,
    takes: Duration,
    runs: AtomicUsize,
}

impl Ends {
    fn new(marker: Duration, takes: Duration) -> Arc<Self> {
        Arc::new(Self {
            marker,
            takes,
            runs: AtomicUsize::new(0),
        })
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

impl Handler for Ends {
    fn run<'a>(&'a self, _: &'a str, _: &'a Work, _: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(self.takes).await;
            Outcome::Done
        })
    }

    fn give_up<'a>(&'a self, _: &'a str, _: &'a Work, _: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    fn ended_kept(&self) -> Duration {
        self.marker
    }
}

fn runner() -> (Arc<dyn StateStore>, Arc<Runner>) {
    let store = crate::state::embedded::store(None).unwrap();
    let settings = Settings {
        lease: Duration::from_millis(600),
        tick: Duration::from_millis(100),
        ..Settings::default()
    };
    (store.clone(), Runner::new(store, settings))
}

async fn stored(store: &dyn StateStore, id: &str) -> Option<(Work, Item)> {
    let item = store.get(WORK, id).await.unwrap()?;
    Some((serde_json::from_slice(&item.value).unwrap(), item))
}

async fn until_ended(store: &dyn StateStore, id: &str) -> (Work, Item) {
    let started = Instant::now();
    loop {
        if let Some((work, item)) = stored(store, id).await
            && work.done
        {
            return (work, item);
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{id} ended");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn until_gone(store: &dyn StateStore, id: &str) {
    let started = Instant::now();
    while stored(store, id).await.is_some() {
        assert!(started.elapsed() < Duration::from_secs(10), "{id} gone");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn ended_work_is_kept_as_a_marker_as_long_as_its_kind_says_and_not_at_all_where_ids_never_repeat()
 {
    let (store, runner) = runner();
    runner.register("marked", Ends::new(ENDED_KEPT, Duration::ZERO));
    let fresh = Ends::new(Duration::ZERO, Duration::ZERO);
    runner.register("fresh", fresh.clone());
    let body = serde_json::json!({"arguments": "x".repeat(1000)});
    for (kind, id) in [("marked", "m"), ("fresh", "f")] {
        assert!(runner.submit(kind, id, None, body.clone()).await.unwrap());
    }

    let (marker, item) = until_ended(&*store, "m").await;
    let left = item
        .expires
        .unwrap()
        .duration_since(SystemTime::now())
        .unwrap();
    assert!(left > ENDED_KEPT - Duration::from_secs(5), "kept {left:?}");
    assert_eq!(
        marker.body,
        Value::Null,
        "a marker carries nothing of the work"
    );
    assert!(
        !runner
            .submit("marked", "m", None, body.clone())
            .await
            .unwrap(),
        "a repeat while the marker is kept is no new work"
    );

    // The other kind's record is removed by its end: no row left for a sweep to read.
    until_gone(&*store, "f").await;
    assert_eq!(fresh.runs(), 1, "removed by its end, not before");
    let listed = store.list(WORK, None, 10).await.unwrap();
    assert_eq!(
        listed.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        ["m"],
        "a sweep reads only the marker"
    );
    assert!(
        runner.submit("fresh", "f", None, body).await.unwrap(),
        "its id coming again is new work"
    );
}

#[tokio::test]
async fn work_that_more_came_for_while_it_ran_is_kept_as_live_work_not_as_an_ended_marker() {
    let (store, runner) = runner();
    let handler = Ends::new(Duration::ZERO, Duration::from_millis(300));
    runner.register("fresh", handler.clone());
    let more = || vec![("d".to_owned(), serde_json::json!({}))];
    assert_eq!(runner.due_all("fresh", more()).await, 0);
    while handler.runs() < 1 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // More while it runs: its end makes it due again, not ended.
    assert_eq!(runner.due_all("fresh", more()).await, 0);
    while handler.runs() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (work, item) = stored(&*store, "d")
        .await
        .expect("kept while it runs again");
    assert!(!work.done);
    let left = item
        .expires
        .unwrap()
        .duration_since(SystemTime::now())
        .unwrap();
    assert!(
        left > Duration::from_secs(24 * 3600),
        "kept as live work is ({left:?}), not as a marker that lapses mid-run"
    );
    until_gone(&*store, "d").await;
    assert_eq!(handler.runs(), 2);
}
