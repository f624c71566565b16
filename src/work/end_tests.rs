//! What stays of ended work: nothing (its record goes at its end, so a sweep reads live work
//! only, and its id coming again is new work: a RAP invocation's repeat is answered by its
//! call's idempotency record, `rap::the_same_invocation_sent_twice_*`); and work that more came
//! for while it ran is kept as live work, not ended; a shutdown waits for a run that ended until
//! its end is written (its slot given back).

use super::*;
use crate::server::BoxFuture;
use oxp_lambda_core::durable::StateFuture;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A handler whose runs take `takes` and end done.
struct Ends {
    takes: Duration,
    runs: AtomicUsize,
}

impl Ends {
    fn new(takes: Duration) -> Arc<Self> {
        Arc::new(Self {
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

    fn give_up<'a>(
        &'a self,
        _: &'a str,
        _: &'a Work,
        _: &'a str,
        _: Option<&'a [u8]>,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async { false })
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

async fn until_gone(store: &dyn StateStore, id: &str) {
    let started = Instant::now();
    while stored(store, id).await.is_some() {
        assert!(started.elapsed() < Duration::from_secs(10), "{id} gone");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn ended_work_leaves_no_record_for_a_sweep_to_read_and_its_id_coming_again_is_new_work() {
    let (store, runner) = runner();
    let ends = Ends::new(Duration::ZERO);
    runner.register("ends", ends.clone());
    let body = serde_json::json!({"arguments": "x".repeat(1000)});
    assert!(
        runner
            .submit("ends", "e", Some("alice"), body.clone())
            .await
            .unwrap()
    );
    until_gone(&*store, "e").await;
    assert_eq!(ends.runs(), 1, "removed by its end, not before");
    assert!(
        store.list(WORK, None, 10).await.unwrap().is_empty(),
        "a sweep reads no ended work"
    );
    // Its slot is given back just after its record goes (never before: the caller's share
    // counts it as long as it lives).
    let started = Instant::now();
    while !store
        .list("work-of#alice", None, 10)
        .await
        .unwrap()
        .is_empty()
    {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "nothing of it counts in its caller's share"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        runner
            .submit("ends", "e", Some("alice"), body)
            .await
            .unwrap(),
        "its id coming again is new work"
    );
    until_gone(&*store, "e").await;
    assert_eq!(ends.runs(), 2);
}

#[tokio::test]
async fn work_that_more_came_for_while_it_ran_is_kept_as_live_work_not_ended() {
    let (store, runner) = runner();
    let handler = Ends::new(Duration::from_millis(300));
    runner.register("fresh", handler.clone());
    let more = || vec![("d".to_owned(), serde_json::json!({}), None)];
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
    assert!(
        matches!(work.state, record::State::Running(_)),
        "running again"
    );
    let left = item
        .expires
        .unwrap()
        .duration_since(SystemTime::now())
        .unwrap();
    assert!(
        left > Duration::from_secs(24 * 3600),
        "kept as live work is ({left:?}), not as ended work that lapses mid-run"
    );
    until_gone(&*store, "d").await;
    assert_eq!(handler.runs(), 2);
}

/// A store that meddles with writes: with `ended_first` armed with a key, a run's end lands
/// between another write's read and its write (the next conditional write of that key finds
/// the record gone: its runner ended it first); with `slow` set, writes to callers' shares
/// take `share_delay`.
#[derive(Debug)]
struct Meddling {
    store: Arc<dyn StateStore>,
    ended_first: std::sync::Mutex<Option<String>>,
    share_delay: Duration,
    slow: std::sync::atomic::AtomicBool,
}

impl Meddling {
    fn over(store: Arc<dyn StateStore>) -> Self {
        Self {
            store,
            ended_first: std::sync::Mutex::new(None),
            share_delay: Duration::ZERO,
            slow: Default::default(),
        }
    }

    async fn share_write(&self, partition: &str) {
        if partition.starts_with("work-of#") && self.slow.load(Ordering::SeqCst) {
            tokio::time::sleep(self.share_delay).await;
        }
    }
}

impl StateStore for Meddling {
    fn get<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, Option<Item>> {
        self.store.get(partition, key)
    }

    fn put_if<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
    ) -> StateFuture<'a, bool> {
        Box::pin(async move {
            self.share_write(partition).await;
            let ends = partition == WORK && {
                let mut armed = self.ended_first.lock().unwrap();
                armed.take_if(|k| k == key).is_some()
            };
            if ends {
                self.store.delete(partition, key).await?;
            }
            self.store.put_if(partition, key, item, expected).await
        })
    }

    fn put<'a>(&'a self, partition: &'a str, key: &'a str, item: Item) -> StateFuture<'a, ()> {
        Box::pin(async move {
            self.share_write(partition).await;
            self.store.put(partition, key, item).await
        })
    }

    fn delete<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, ()> {
        Box::pin(async move {
            self.share_write(partition).await;
            self.store.delete(partition, key).await
        })
    }

    fn list<'a>(
        &'a self,
        partition: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        self.store.list(partition, after, limit)
    }

    fn due<'a>(
        &'a self,
        partition: &'a str,
        until: SystemTime,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        self.store.due(partition, until, limit)
    }
}

#[tokio::test]
async fn more_that_comes_as_the_run_holding_the_work_ends_is_run_at_once_not_left_to_a_lease() {
    let inner = crate::state::embedded::store(None).unwrap();
    let store = Arc::new(Meddling::over(inner));
    let settings = Settings {
        lease: Duration::from_secs(60),
        ..Settings::default()
    };
    let runner = Runner::new(store.clone(), settings);
    let handler = Ends::new(Duration::ZERO);
    runner.register("fresh", handler.clone());
    // Another runner holds it (a subscription's delivery, sending what it read)...
    let mut held = Work::new("fresh", None, serde_json::json!({}));
    held.claim("other", Duration::from_secs(60), now_ms());
    let kept = Some(SystemTime::now() + Duration::from_secs(60));
    assert!(
        runner
            .records()
            .write("f", &held, None, kept)
            .await
            .unwrap()
            .is_some()
    );
    // ...and ends it between this write's read (it ran: "again") and its write.
    *store.ended_first.lock().unwrap() = Some("f".into());
    let more = vec![("f".to_owned(), serde_json::json!({}), None)];
    assert_eq!(runner.due_all("fresh", more).await, 0);
    let started = Instant::now();
    while handler.runs() < 1 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "accepted anew, it runs now, not when the lease it was given lapses"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    until_gone(&*store, "f").await;
}

#[tokio::test]
async fn a_shutdown_waits_for_a_run_that_ended_until_its_slot_is_given_back() {
    let store = crate::state::embedded::store(None).unwrap();
    let slow = Arc::new(Meddling {
        share_delay: Duration::from_millis(300),
        ..Meddling::over(store.clone())
    });
    let runner = Runner::new(slow.clone(), Settings::default());
    // A store that outlives the process: what a shutdown waits for is the work in hand.
    runner.store_is(true, true);
    runner.register("ends", Ends::new(Duration::from_millis(50)));
    let body = serde_json::json!({});
    let accepted = runner.submit("ends", "e", Some("alice"), body).await;
    assert!(accepted.unwrap());
    // The run ends while the drain waits; giving its slot back takes 300 ms.
    slow.slow.store(true, Ordering::SeqCst);
    assert_eq!(
        runner.drain(Duration::from_secs(5)).await,
        0,
        "nothing let go"
    );
    let slots = store.list("work-of#alice", None, 10).await.unwrap();
    assert!(slots.is_empty(), "its slot given back: {slots:?}");
    assert!(
        stored(&*store, "e").await.is_none(),
        "ended, its record gone"
    );
}
