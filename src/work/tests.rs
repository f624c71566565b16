//! The runner on one store shared by two runners (two processes): work runs once where it was
//! accepted, a lapsed lease is taken over within the lease and a tick, a shutdown lets work go
//! for the other to take at once, retries back off and end in a give-up, parked work runs again
//! only once woken, a caller's share is bounded.

use super::*;
use crate::server::BoxFuture;
use crate::state::counting::CountingReads;
use std::sync::atomic::{AtomicUsize, Ordering};

fn store() -> Arc<dyn StateStore> {
    crate::state::embedded::store(None).unwrap()
}

fn quick() -> Settings {
    Settings {
        lease: Duration::from_millis(600),
        tick: Duration::from_millis(100),
        retries: Retries {
            max_attempts: 3,
            ..Settings::default().retries
        },
        per_caller: 3,
        ..Settings::default()
    }
}

/// A handler that records its runs, and answers as `answer` says for each.
struct Recording {
    runs: Mutex<Vec<(String, u32, bool)>>,
    given_up: Mutex<Vec<String>>,
    answer: Box<dyn Fn(&Work) -> Outcome + Send + Sync>,
    /// How long a run takes (until stopped).
    takes: Duration,
}

impl Recording {
    fn new(
        takes: Duration,
        answer: impl Fn(&Work) -> Outcome + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            runs: Mutex::default(),
            given_up: Mutex::default(),
            answer: Box::new(answer),
            takes,
        })
    }

    fn runs(&self) -> Vec<(String, u32, bool)> {
        self.runs.lock().unwrap().clone()
    }
}

impl Handler for Recording {
    fn run<'a>(&'a self, id: &'a str, work: &'a Work, run: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            self.runs
                .lock()
                .unwrap()
                .push((id.to_owned(), work.attempts, work.interrupted));
            tokio::select! {
                () = tokio::time::sleep(self.takes) => (self.answer)(work),
                () = run.stop.cancelled() => Outcome::Retry("stopped".into()),
            }
        })
    }

    fn give_up<'a>(
        &'a self,
        id: &'a str,
        _: &'a Work,
        reason: &'a str,
        _: Option<&'a [u8]>,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            self.given_up
                .lock()
                .unwrap()
                .push(format!("{id}: {reason}"));
            false
        })
    }
}

async fn until(what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(10), "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

#[tokio::test]
async fn work_runs_once_where_it_was_accepted_and_is_forgotten_when_done() {
    let store = store();
    let handler = Recording::new(Duration::from_millis(50), |_| Outcome::Done);
    let (a, b) = (
        Runner::new(store.clone(), quick()),
        Runner::new(store.clone(), quick()),
    );
    for runner in [&a, &b] {
        runner.register("test", handler.clone());
        // As processes sharing a store do: each sweeps from the start.
        runner.sweep_every_tick(true);
    }
    assert!(
        a.submit("test", "w1", Some("alice"), json(1))
            .await
            .unwrap()
    );
    assert!(
        !a.submit("test", "w1", Some("alice"), json(1))
            .await
            .unwrap(),
        "a repeat"
    );
    until("ran", || !handler.runs().is_empty()).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!a.alive("w1").await.unwrap(), "forgotten once done");
    assert_eq!(
        handler.runs(),
        [("w1".to_owned(), 1, false)],
        "once, by a; b took nothing"
    );
}

fn json(n: u32) -> Value {
    serde_json::json!({"n": n})
}

#[tokio::test]
async fn a_crashed_runners_work_is_taken_over_within_its_lease_and_a_tick() {
    let store = store();
    let handler = Recording::new(Duration::from_millis(100), |_| Outcome::Done);
    let crashed = Runner::new(store.clone(), quick());
    // The crashed runner took the work and never ran it: no handler, no renewal (as kill -9).
    let mut work = Work::new("test", Some("alice"), json(2));
    work.claim("crashed-process", quick().lease, now_ms());
    let bytes = serde_json::to_vec(&work).unwrap();
    let item = Item::new(bytes, None).due_at(work.due_at());
    store.put(WORK, "w2", item).await.unwrap();
    drop(crashed);
    let survivor = Runner::new(store.clone(), quick());
    survivor.register("test", handler.clone());
    let started = Instant::now();
    survivor.sweep_every_tick(true);
    until("taken over", || !handler.runs().is_empty()).await;
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(500) && waited < quick().lease + quick().tick * 3,
        "taken over once the lease lapsed, within a tick: {waited:?}"
    );
    assert_eq!(handler.runs(), [("w2".to_owned(), 2, true)], "a takeover");
}

#[tokio::test]
async fn a_running_lease_is_renewed_so_a_long_run_is_never_taken_over() {
    let store = store();
    let handler = Recording::new(Duration::from_millis(2000), |_| Outcome::Done);
    let (a, b) = (
        Runner::new(store.clone(), quick()),
        Runner::new(store.clone(), quick()),
    );
    for runner in [&a, &b] {
        runner.register("test", handler.clone());
        // As processes sharing a store do: each sweeps from the start.
        runner.sweep_every_tick(true);
    }
    a.submit("test", "long", Some("alice"), json(3))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(handler.runs().len(), 1, "three leases long, run once");
    assert!(!a.alive("long").await.unwrap());
}

#[tokio::test]
async fn a_shutdown_lets_its_work_go_and_the_other_runner_takes_it_at_once() {
    let store = store();
    let handler = Recording::new(Duration::from_secs(60), |_| Outcome::Done);
    let (a, b) = (
        Runner::new(store.clone(), quick()),
        Runner::new(store.clone(), quick()),
    );
    for runner in [&a, &b] {
        runner.register("test", handler.clone());
    }
    b.sweep_every_tick(true);
    a.submit("test", "w3", Some("alice"), json(4))
        .await
        .unwrap();
    until("running", || handler.runs().len() == 1).await;
    assert_eq!(a.drain(Duration::from_millis(50)).await, 1);
    let started = Instant::now();
    until("taken over", || handler.runs().len() == 2).await;
    assert!(
        started.elapsed() < quick().lease,
        "at once, not after the lease: {:?}",
        started.elapsed()
    );
    assert_eq!(handler.runs()[1], ("w3".to_owned(), 2, true));
}

#[tokio::test]
async fn retries_back_off_and_the_last_attempt_gives_the_work_up_with_its_reason() {
    let store = store();
    let handler = Recording::new(Duration::ZERO, |_| {
        Outcome::Retry("callback refused".into())
    });
    let runner = Runner::new(store.clone(), quick());
    runner.register("test", handler.clone());
    runner.sweep_every_tick(false);
    runner
        .submit("test", "w4", Some("alice"), json(5))
        .await
        .unwrap();
    until("given up", || !handler.given_up.lock().unwrap().is_empty()).await;
    let attempts: Vec<u32> = handler.runs().iter().map(|r| r.1).collect();
    assert_eq!(attempts, [1, 2, 3]);
    assert_eq!(
        handler.given_up.lock().unwrap()[0],
        "w4: callback refused; gave up after 3 attempts"
    );
    // Forgotten just after it was given up.
    let end = Instant::now() + Duration::from_secs(2);
    while runner.alive("w4").await.unwrap() {
        assert!(Instant::now() < end, "given up work is forgotten");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn parked_work_runs_again_only_once_woken() {
    let store = store();
    let parks = Arc::new(AtomicUsize::new(0));
    let counted = parks.clone();
    let handler = Recording::new(Duration::ZERO, move |_| {
        if counted.fetch_add(1, Ordering::SeqCst) == 0 {
            Outcome::Park
        } else {
            Outcome::Done
        }
    });
    let runner = Runner::new(store.clone(), quick());
    runner.register("test", handler.clone());
    runner.sweep_every_tick(false);
    runner
        .submit("test", "w5", Some("alice"), json(6))
        .await
        .unwrap();
    until("parked", || handler.runs().len() == 1).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(handler.runs().len(), 1, "waits, however long");
    assert!(runner.wake("w5").await.unwrap());
    until("ran again", || handler.runs().len() == 2).await;
    assert!(!runner.wake("gone").await.unwrap());
}

#[tokio::test]
async fn a_caller_holds_at_most_its_share_and_others_are_not_refused() {
    let store = store();
    let handler = Recording::new(Duration::from_secs(60), |_| Outcome::Done);
    let runner = Runner::new(store.clone(), quick());
    runner.register("test", handler.clone());
    for i in 0..3 {
        runner
            .submit("test", &format!("a{i}"), Some("alice"), json(i))
            .await
            .unwrap();
    }
    assert_eq!(
        runner.submit("test", "a3", Some("alice"), json(3)).await,
        Err(Refused::CallerFull)
    );
    assert!(!runner.alive("a3").await.unwrap(), "nothing kept");
    let marks = store.list("work-of#alice", None, 10).await.unwrap();
    assert_eq!(marks.len(), 3, "nor its mark in the share");
    assert_eq!(
        runner.submit("test", "a0", Some("alice"), json(0)).await,
        Ok(false),
        "a repeat of accepted work is a repeat, not refused, whatever the share"
    );
    assert!(
        runner
            .submit("test", "b0", Some("bob"), json(0))
            .await
            .unwrap()
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        handler.runs().iter().all(|(id, _, _)| id != "a3"),
        "the refused work never ran"
    );
}

#[tokio::test]
async fn more_that_comes_while_a_run_holds_the_work_runs_it_again_and_nothing_is_stranded() {
    let store = store();
    let handler = Recording::new(Duration::from_millis(200), |_| Outcome::Done);
    let runner = Runner::new(store.clone(), quick());
    runner.register("test", handler.clone());
    runner
        .due_all("test", vec![("drain".into(), json(7), None)])
        .await;
    until("running", || handler.runs().len() == 1).await;
    // Three more while the first run holds it: one more run takes them all.
    for _ in 0..3 {
        assert_eq!(
            runner
                .due_all("test", vec![("drain".into(), json(7), None)])
                .await,
            0
        );
    }
    until("ran again", || handler.runs().len() == 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(handler.runs().len(), 2, "not once per call");
    assert!(!runner.alive("drain").await.unwrap(), "ended");
    // Later, more again: the ended work is taken up anew.
    runner
        .due_all("test", vec![("drain".into(), json(7), None)])
        .await;
    until("anew", || handler.runs().len() == 3).await;
}

#[tokio::test]
async fn work_accepted_and_run_here_is_renewed_and_ended_over_what_this_runner_wrote_without_reading_it()
 {
    let counting = CountingReads::of(store(), WORK);
    let store: Arc<dyn StateStore> = counting.clone();
    // Long enough for two renewals (every third of the 600 ms lease).
    let handler = Recording::new(Duration::from_millis(500), |_| Outcome::Done);
    let runner = Runner::new(store.clone(), quick());
    runner.register("test", handler.clone());
    assert!(
        runner
            .submit("test", "w1", Some("alice"), json(1))
            .await
            .unwrap()
    );
    until("ran", || !handler.runs().is_empty()).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        Runner::read(&runner, "w1").await.unwrap().is_none(),
        "ended"
    );
    assert_eq!(counting.reads(), 1, "the one read is this test's own");
    // Another process's write in between: read again, and the change still made.
    let runner2 = Runner::new(store.clone(), quick());
    let slow = Recording::new(Duration::from_millis(300), |_| Outcome::Done);
    runner2.register("test", slow.clone());
    assert!(runner2.submit("test", "w2", None, json(2)).await.unwrap());
    until("running", || !slow.runs().is_empty()).await;
    // More for it while it runs (as a subscription's next event does): the record changes
    // under the run, whose end then reads it and runs it again.
    assert_eq!(
        runner
            .due_all("test", vec![("w2".into(), json(2), None)])
            .await,
        0
    );
    until("ran again", || slow.runs().len() == 2).await;
}

#[tokio::test]
async fn a_repeat_counts_in_its_callers_share_only_while_the_first_runs_and_ended_work_is_new_work_again()
 {
    let store = store();
    let handler = Recording::new(Duration::from_millis(300), |_| Outcome::Done);
    let runner = Runner::new(store.clone(), quick());
    runner.register("test", handler.clone());
    let share = |store: Arc<dyn StateStore>| async move {
        store.list("work-of#alice", None, 10).await.unwrap().len()
    };
    assert!(
        runner
            .submit("test", "w1", Some("alice"), json(1))
            .await
            .unwrap()
    );
    // While the first runs, a repeat leaves its one mark.
    assert!(
        !runner
            .submit("test", "w1", Some("alice"), json(1))
            .await
            .unwrap()
    );
    assert_eq!(share(store.clone()).await, 1);
    until("ended", || !handler.runs().is_empty()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(share(store.clone()).await, 0, "its end took the mark");
    // Once it ended, its id coming again is new work: counted while it runs, then not.
    assert!(
        runner
            .submit("test", "w1", Some("alice"), json(1))
            .await
            .unwrap()
    );
    assert_eq!(share(store.clone()).await, 1);
    until("ran again", || handler.runs().len() == 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(share(store.clone()).await, 0, "its end took the mark");
}

#[tokio::test]
async fn parked_work_woken_here_is_claimed_by_the_write_that_wakes_it_and_run_without_another_read()
{
    let counting = CountingReads::of(store(), WORK);
    let store: Arc<dyn StateStore> = counting.clone();
    let handler = Recording::new(Duration::ZERO, |w| {
        if w.attempts == 1 {
            Outcome::Park
        } else {
            Outcome::Done
        }
    });
    let runner = Runner::new(store, quick());
    runner.register("test", handler.clone());
    assert!(runner.submit("test", "w1", None, json(1)).await.unwrap());
    until("parked", || handler.runs().len() == 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    counting.reset();
    assert!(runner.wake("w1").await.unwrap(), "there is such work");
    until("ran again", || handler.runs().len() == 2).await;
    assert_eq!(
        counting.reads(),
        1,
        "one read: the wake's, whose write holds it for this run"
    );
    assert_eq!(handler.runs()[1].1, 2, "its second attempt");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!runner.alive("w1").await.unwrap(), "ended");
    assert!(!runner.wake("w1").await.unwrap(), "ended work is not woken");
}
