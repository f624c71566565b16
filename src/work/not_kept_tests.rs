//! When the store is out of reach. A result it did not keep (as the run ended): the run does not
//! deliver it, its handler hears so with the result (and lets go of what it holds for the
//! delivery: a RAP answer's delivery mark, which the next run would otherwise find held by a
//! copy that never delivers, and wait out), and the run tried again delivers its own result.
//! And work whose share refused it but whose record could not be taken back is accepted.

use super::*;
use crate::server::BoxFuture;
use crate::state::counting::CountingReads;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A handler whose first run makes the store fail its next write of a work record (the one
/// that keeps the result), recording what it was told was not kept and what it delivered.
struct Forgotten {
    store: Arc<CountingReads>,
    runs: AtomicUsize,
    not_kept: Mutex<Vec<Vec<u8>>>,
    delivered: Mutex<Vec<Vec<u8>>>,
}

impl Handler for Forgotten {
    fn run<'a>(&'a self, _: &'a str, _: &'a Work, _: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let n = self.runs.fetch_add(1, Ordering::SeqCst);
            if n == 0 {
                self.store.fail_next_writes(1);
            }
            Outcome::Result(format!("\"run {n}\"").into_bytes())
        })
    }

    fn not_kept<'a>(&'a self, _: &'a str, _: &'a Work, result: &'a [u8]) -> BoxFuture<'a, ()> {
        self.not_kept.lock().unwrap().push(result.to_vec());
        Box::pin(async {})
    }

    fn deliver<'a>(
        &'a self,
        _: &'a str,
        _: &'a Work,
        result: &'a [u8],
        _: Run,
    ) -> BoxFuture<'a, Outcome> {
        self.delivered.lock().unwrap().push(result.to_vec());
        Box::pin(async { Outcome::Done })
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

    fn retries(&self) -> Option<Retries> {
        Some(Retries {
            max_attempts: 5,
            base: Duration::from_millis(50),
            max_delay: Duration::from_millis(50),
            total: None,
        })
    }
}

/// A runner over `store` (leases of 300 ms, a sweep every 50 ms) whose work of kind `test`
/// is run by a [`Forgotten`] handler over `failing`.
fn rig(store: Arc<CountingReads>, failing: Arc<CountingReads>) -> (Arc<Runner>, Arc<Forgotten>) {
    let handler = Arc::new(Forgotten {
        store: failing,
        runs: AtomicUsize::new(0),
        not_kept: Mutex::default(),
        delivered: Mutex::default(),
    });
    let settings = Settings {
        lease: Duration::from_millis(300),
        tick: Duration::from_millis(50),
        ..Settings::default()
    };
    let runner = Runner::new(store, settings);
    runner.register("test", handler.clone());
    runner.sweep_every_tick(true);
    (runner, handler)
}

/// Once `handler` delivered something (10 s at most).
async fn until_delivered(handler: &Forgotten) {
    let started = Instant::now();
    while handler.delivered.lock().unwrap().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "delivered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_the_store_did_not_keep_is_let_go_by_its_handler_and_the_run_tried_again_delivers()
{
    let store = CountingReads::of(crate::state::embedded::store(None).unwrap(), WORK);
    let (runner, handler) = rig(store.clone(), store);
    runner
        .submit("test", "w-1", Some("alice"), serde_json::json!({}))
        .await
        .unwrap();
    until_delivered(&handler).await;
    assert_eq!(*handler.not_kept.lock().unwrap(), [b"\"run 0\"".to_vec()]);
    assert_eq!(*handler.delivered.lock().unwrap(), [b"\"run 1\"".to_vec()]);
    assert_eq!(handler.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_its_share_refused_whose_record_cannot_be_taken_back_is_told_accepted_and_runs() {
    // The share's slot not taken (the store out of reach for it), and the record, written
    // beside it, not deleted either: it runs once its lease lapses. Its caller was told 503
    // and then sent its result anyway; now it is told what is true.
    let work = CountingReads::of(crate::state::embedded::store(None).unwrap(), WORK);
    let store = CountingReads::of(work.clone(), "work-of#alice");
    let (runner, handler) = rig(store.clone(), CountingReads::of(work.clone(), "none"));
    store.fail_next_writes(1);
    work.fail_next_deletes(1);
    let told = runner
        .submit("test", "w-2", Some("alice"), serde_json::json!({}))
        .await;
    assert_eq!(told, Ok(true), "accepted: its record stays and it runs");
    until_delivered(&handler).await;
    // Its end (its slot given back: a write of the share) done, or the write failed below
    // would be that one, not the next work's share.
    let started = Instant::now();
    while runner.in_hand() > 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "ended");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Taken back, refused work stays refused and never runs.
    store.fail_next_writes(1);
    let refused = runner
        .submit("test", "w-3", Some("alice"), serde_json::json!({}))
        .await;
    assert!(
        matches!(refused, Err(Refused::Unavailable(_))),
        "{refused:?}"
    );
    assert!(!runner.alive("w-3").await.unwrap());
}
