//! A sweep reads what is due, by the store's index of due work, never every record: among
//! 10,000 live records not yet due, a sweep reads the few that are (a process's first sweep
//! alone reads them all, for what a dead holder or an earlier version left). A queued message
//! whose work could not be claimed is delivered again. A retry is run when it comes due, not at
//! the next tick, whichever sweep came before it.

use super::queue::queued_work;
use super::*;
use crate::server::{BoxFuture, CallContext, Handled, RecordHandler};
use crate::state::counting::CountingReads;

/// A handler whose runs end done at once, counted.
#[derive(Default)]
struct Ends(AtomicUsize);

impl Handler for Ends {
    fn run<'a>(&'a self, _: &'a str, _: &'a Work, _: Run) -> BoxFuture<'a, Outcome> {
        self.0.fetch_add(1, Relaxed);
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
}

/// `count` works due at `due_ms`, written as a runner writes them.
async fn works(store: &dyn StateStore, prefix: &str, count: usize, due_ms: u64) {
    let records = Records::new(store, WORK, "a work record");
    stream::iter(0..count)
        .for_each_concurrent(64, |n| async move {
            let mut work = Work::new("test", Some("alice"), serde_json::json!({}));
            work.go_on(due_ms);
            let id = format!("{prefix}{n:05}");
            records.write(&id, &work, None, None).await.unwrap();
        })
        .await;
}

async fn a_sweep_reads_only_what_is_due(store: Arc<dyn StateStore>, live: usize) {
    let counting = CountingReads::of(store.clone(), WORK);
    let later = now_ms() + 3_600_000;
    works(&*store, "later-", live, later).await;
    let runner = Runner::new(counting.clone(), Settings::default());
    runner.register("test", Arc::new(Ends::default()));
    // The first sweep of a process reads every record.
    assert_eq!(runner.sweep(None).await, 0);
    assert!(counting.listed() >= live, "{}", counting.listed());
    works(&*store, "now-", 3, now_ms()).await;
    let before = counting.listed();
    // An index may be read a moment behind (DynamoDB's global secondary index).
    let mut taken = 0;
    for _ in 0..50 {
        taken += runner.sweep(None).await;
        if taken == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(taken, 3, "the three due are taken");
    let read = counting.listed() - before;
    assert!(
        read <= 3 * 50,
        "a sweep read {read} records of {live} live ones"
    );
}

#[tokio::test]
async fn a_sweep_among_10_000_live_records_reads_only_those_due_on_the_embedded_store() {
    a_sweep_reads_only_what_is_due(crate::state::embedded::store(None).unwrap(), 10_000).await;
}

#[cfg(feature = "dynamodb")]
#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_sweep_among_live_records_reads_only_those_due_on_dynamodb() {
    let (client, table) = crate::moto::state_table().await;
    let store = crate::state::dynamodb::DynamoState::new(client, table);
    a_sweep_reads_only_what_is_due(Arc::new(store), 1_000).await;
}

#[tokio::test]
async fn a_queued_message_whose_work_the_store_could_not_claim_is_delivered_again() {
    let store = crate::state::embedded::store(None).unwrap();
    let counting = CountingReads::of(store.clone(), WORK);
    works(&*store, "queued-", 1, now_ms()).await;
    let runner = Runner::new(counting.clone(), Settings::default());
    let runs = Arc::new(Ends::default());
    runner.register("test", runs.clone());
    let records = WorkRecords(runner);
    let message = queued_work(vec!["queued-00000".into()]);
    counting.fail_next(1);
    let first = records.handle(&message, CallContext::default()).await;
    assert!(matches!(first, Handled::Retry(_)), "{first:?}");
    assert_eq!(runs.0.load(Relaxed), 0);
    // Delivered again, with the store back: it runs, once.
    let again = records.handle(&message, CallContext::default()).await;
    assert!(matches!(again, Handled::Done), "{again:?}");
    assert_eq!(runs.0.load(Relaxed), 1);
}

/// A handler whose first run of each piece of work fails (to be retried) and whose next ends
/// it, each run's time kept.
#[derive(Default)]
struct FailsOnce(Mutex<Vec<(String, Instant)>>);

impl Handler for FailsOnce {
    fn run<'a>(&'a self, id: &'a str, work: &'a Work, _: Run) -> BoxFuture<'a, Outcome> {
        self.0.lock().unwrap().push((id.to_owned(), Instant::now()));
        let first = work.attempts == 1;
        Box::pin(async move {
            match first {
                true => Outcome::Retry("refused".into()),
                false => Outcome::Done,
            }
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

#[tokio::test]
async fn a_retry_due_just_after_a_processs_first_sweep_runs_when_due_not_at_the_next_tick() {
    let settings = Settings {
        tick: Duration::from_secs(30),
        retries: Retries {
            base: Duration::from_millis(300),
            ..Settings::default().retries
        },
        ..Settings::default()
    };
    let runner = Runner::new(crate::state::embedded::store(None).unwrap(), settings);
    let runs = Arc::new(FailsOnce::default());
    runner.register("test", runs.clone());
    runner.sweep_every_tick(false);
    // Two retries due a moment apart: the sweeper wakes for the first, which is this
    // process's first sweep, and must wake again for the second.
    let started = Instant::now();
    for id in ["first", "second"] {
        let body = serde_json::json!({});
        assert!(
            runner
                .submit("test", id, Some("alice"), body)
                .await
                .unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let end = started + Duration::from_secs(5);
    while runs.0.lock().unwrap().len() < 4 {
        assert!(Instant::now() < end, "{:?}", runs.0.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for id in ["first", "second"] {
        let at: Vec<Instant> = (runs.0.lock().unwrap().iter())
            .filter(|(i, _)| i == id)
            .map(|(_, at)| *at)
            .collect();
        let waited = at[1] - at[0];
        assert!(
            waited >= Duration::from_millis(230) && waited < Duration::from_secs(1),
            "{id}: retried {waited:?} after its failure (its backoff 240-300 ms)"
        );
    }
}
