//! A result the store did not keep (it was out of reach as the run ended): the run does not
//! deliver it, its handler hears so with the result (and lets go of what it holds for the
//! delivery: a RAP answer's delivery mark, which the next run would otherwise find held by a
//! copy that never delivers, and wait out), and the run tried again delivers its own result.

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_the_store_did_not_keep_is_let_go_by_its_handler_and_the_run_tried_again_delivers()
{
    let store = CountingReads::of(crate::state::embedded::store(None).unwrap(), WORK);
    let handler = Arc::new(Forgotten {
        store: store.clone(),
        runs: AtomicUsize::new(0),
        not_kept: Mutex::default(),
        delivered: Mutex::default(),
    });
    let settings = Settings {
        lease: Duration::from_millis(600),
        tick: Duration::from_millis(100),
        ..Settings::default()
    };
    let runner = Runner::new(store.clone(), settings);
    runner.register("test", handler.clone());
    runner.sweep_every_tick(true);
    runner
        .submit("test", "w-1", Some("alice"), serde_json::json!({}))
        .await
        .unwrap();
    let started = Instant::now();
    while handler.delivered.lock().unwrap().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "delivered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*handler.not_kept.lock().unwrap(), [b"\"run 0\"".to_vec()]);
    assert_eq!(*handler.delivered.lock().unwrap(), [b"\"run 1\"".to_vec()]);
    assert_eq!(handler.runs.load(Ordering::SeqCst), 2);
}
