//! A run's result is kept in its record before the first delivery: a runner that dies while
//! delivering it (its process, here its runtime, gone at once) leaves it to the runner that
//! takes the work over, which delivers the same bytes and never runs the work again; a result
//! of 1 MiB (content may reach 3 MiB; an item takes 256 KiB) is kept across items of the same
//! store, on the embedded store and on DynamoDB. And a handler that panics gives its work up
//! with a status its caller sees.

use super::*;
use crate::server::BoxFuture;
use std::sync::atomic::{AtomicUsize, Ordering};

fn quick() -> Settings {
    Settings {
        lease: Duration::from_millis(600),
        tick: Duration::from_millis(100),
        ..Settings::default()
    }
}

/// A handler whose runs answer `result`, whose delivery of work `hangs` never ends (the others
/// are taken), and whose results without room are replaced by `"no room"`, recording what each
/// run and delivery (by work id) saw.
pub(super) struct Delivering {
    result: Vec<u8>,
    hangs: Option<&'static str>,
    runs: AtomicUsize,
    delivered: Mutex<Vec<(String, Vec<u8>)>>,
    given_up: Mutex<Vec<(String, Option<Vec<u8>>)>>,
}

impl Delivering {
    pub(super) fn new(result: Vec<u8>, hangs: Option<&'static str>) -> Arc<Self> {
        Arc::new(Self {
            result,
            hangs,
            runs: AtomicUsize::new(0),
            delivered: Mutex::default(),
            given_up: Mutex::default(),
        })
    }

    /// What was delivered for work `id`, once it was (10 s at most).
    pub(super) async fn delivered(&self, id: &str) -> Vec<u8> {
        let started = Instant::now();
        loop {
            let found = (self.delivered.lock().unwrap().iter())
                .find(|(d, _)| d == id)
                .map(|(_, result)| result.clone());
            if let Some(result) = found {
                return result;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{id} delivered"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Handler for Delivering {
    fn run<'a>(&'a self, _: &'a str, _: &'a Work, _: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Outcome::Result(self.result.clone())
        })
    }

    fn unkept<'a>(&'a self, _: &'a str, _: &'a Work, _: &'a [u8]) -> BoxFuture<'a, Outcome> {
        Box::pin(async { Outcome::Result(b"\"no room\"".to_vec()) })
    }

    fn deliver<'a>(
        &'a self,
        id: &'a str,
        _: &'a Work,
        result: &'a [u8],
        _: Run,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let delivered = (id.to_owned(), result.to_vec());
            self.delivered.lock().unwrap().push(delivered);
            if self.hangs == Some(id) {
                std::future::pending::<()>().await;
            }
            Outcome::Done
        })
    }

    fn give_up<'a>(
        &'a self,
        _: &'a str,
        _: &'a Work,
        reason: &'a str,
        result: Option<&'a [u8]>,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            self.given_up
                .lock()
                .unwrap()
                .push((reason.to_owned(), result.map(<[u8]>::to_vec)));
            false
        })
    }
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(10), "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// 1 MiB of JSON text, every byte counting.
fn big() -> Vec<u8> {
    let text: String = (0..(1 << 20) - 2)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    serde_json::to_vec(&text).unwrap()
}

async fn a_kept_result_survives_its_runners_death(store: Arc<dyn StateStore>) {
    let result = big();
    // The first runner, in a runtime of its own (its process): it runs the work, keeps the
    // result, and dies while delivering it.
    let dying = Delivering::new(result.clone(), Some("w-big"));
    let (first, handler) = (store.clone(), dying.clone());
    let process = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let runner = runtime.block_on(async move {
            let runner = Runner::new(first, quick());
            runner.register("test", handler);
            runner
                .submit("test", "w-big", Some("alice"), serde_json::json!({}))
                .await
                .unwrap();
            runner
        });
        (runtime, runner)
    });
    let (runtime, runner) = process.join().unwrap();
    until("delivering", || !dying.delivered.lock().unwrap().is_empty()).await;
    let room = store.list("parts-of#alice", None, 10).await.unwrap();
    assert_eq!(room.len(), 5, "each part holds a slot of alice's room");
    // Killed: nothing more of it runs, nothing more is written.
    runtime.shutdown_background();
    drop(runner);
    let survivor = Delivering::new(b"\"another outcome\"".to_vec(), None);
    let taker = Runner::new(store.clone(), quick());
    taker.register("test", survivor.clone());
    taker.sweep_every_tick(true);
    until("delivered again", || {
        !survivor.delivered.lock().unwrap().is_empty()
    })
    .await;
    assert_eq!(survivor.runs.load(Ordering::SeqCst), 0, "not run again");
    let again = survivor.delivered("w-big").await;
    assert_eq!(again.len(), result.len());
    assert!(again == result, "the same bytes");
    // Delivered: the record and its parts are gone, and their slots of alice's room.
    let deadline = Instant::now() + Duration::from_secs(5);
    while taker.alive("w-big").await.unwrap()
        || !store.list("parts", None, 10).await.unwrap().is_empty()
        || !store
            .list("parts-of#alice", None, 10)
            .await
            .unwrap()
            .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "ended once delivered, its parts gone"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_mib_result_kept_before_a_crash_is_delivered_by_the_takeover_on_the_embedded_store() {
    let path = std::env::temp_dir().join(format!("oxp-result-{}.redb", uuid::Uuid::new_v4()));
    let store = crate::state::embedded::store(Some(path.clone())).unwrap();
    a_kept_result_survives_its_runners_death(store).await;
    // The file and the lock beside it (`<file>.lock`), which would otherwise pile up in the
    // temporary folder, one per run.
    let _ = std::fs::remove_file(path.with_extension("redb.lock"));
    let _ = std::fs::remove_file(&path);
}

#[cfg(feature = "dynamodb")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_1_mib_result_kept_before_a_crash_is_delivered_by_the_takeover_on_dynamodb() {
    let (client, table) = crate::moto::state_table().await;
    let store = crate::state::dynamodb::DynamoState::new(client, table);
    a_kept_result_survives_its_runners_death(Arc::new(store)).await;
}

/// A handler that panics in its run.
struct Panics(Arc<Delivering>);

impl Handler for Panics {
    fn run<'a>(&'a self, _: &'a str, _: &'a Work, _: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async { panic!("a bug in a protocol") })
    }

    fn give_up<'a>(
        &'a self,
        id: &'a str,
        work: &'a Work,
        reason: &'a str,
        result: Option<&'a [u8]>,
    ) -> BoxFuture<'a, bool> {
        self.0.give_up(id, work, reason, result)
    }
}

#[tokio::test]
async fn a_handler_that_panics_gives_its_work_up_with_a_status_and_the_runner_goes_on() {
    let store = crate::state::embedded::store(None).unwrap();
    let told = Delivering::new(Vec::new(), None);
    let runner = Runner::new(store, quick());
    runner.register("panics", Arc::new(Panics(told.clone())));
    runner.register("test", told.clone());
    runner
        .submit("panics", "w-panic", None, serde_json::json!({}))
        .await
        .unwrap();
    until("given up", || !told.given_up.lock().unwrap().is_empty()).await;
    let (reason, _) = told.given_up.lock().unwrap()[0].clone();
    assert_eq!(reason, "the server failed unexpectedly", "no panic text");
    let deadline = Instant::now() + Duration::from_secs(5);
    while runner.alive("w-panic").await.unwrap() || !runner.running.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "nothing left running");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The runner goes on: other work runs.
    runner
        .submit("test", "w-after", None, serde_json::json!({}))
        .await
        .unwrap();
    until("ran", || told.runs.load(Ordering::SeqCst) == 1).await;
}

/// A handler whose runs mark their work as waiting for a person (a question asked), then wait,
/// recording whether each run was a takeover of an interrupted one.
struct Asks {
    runner: std::sync::OnceLock<std::sync::Weak<Runner>>,
    runs: Mutex<Vec<bool>>,
}

impl Handler for Asks {
    fn run<'a>(&'a self, id: &'a str, work: &'a Work, _: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            self.runs.lock().unwrap().push(work.interrupted);
            if let Some(runner) = self.runner.get().and_then(std::sync::Weak::upgrade) {
                runner.asking(id, false).await.unwrap();
            }
            std::future::pending().await
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_for_a_person_taken_over_after_a_crash_resumes_and_is_not_interrupted() {
    let store = crate::state::embedded::store(None).unwrap();
    let asks = |runner: &Arc<Runner>| {
        let handler = Arc::new(Asks {
            runner: std::sync::OnceLock::new(),
            runs: Mutex::default(),
        });
        let _ = handler.runner.set(Arc::downgrade(runner));
        runner.register("asks", handler.clone());
        handler
    };
    let first = store.clone();
    let process = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let (runner, handler) = runtime.block_on(async move {
            let runner = Runner::new(first, quick());
            let handler = asks(&runner);
            runner
                .submit("asks", "w-ask", None, serde_json::json!({}))
                .await
                .unwrap();
            (runner, handler)
        });
        (runtime, runner, handler)
    });
    let (runtime, runner, dying) = process.join().unwrap();
    let marked = || async {
        let (work, _) = Runner::new(store.clone(), quick())
            .read("w-ask")
            .await
            .unwrap()
            .unwrap();
        work.asking
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !marked().await {
        assert!(Instant::now() < deadline, "marked as waiting for a person");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    runtime.shutdown_background();
    drop(runner);
    let taker = Runner::new(store.clone(), quick());
    let survivor = asks(&taker);
    taker.sweep_every_tick(true);
    until("taken over", || !survivor.runs.lock().unwrap().is_empty()).await;
    assert_eq!(*dying.runs.lock().unwrap(), [false]);
    assert_eq!(
        *survivor.runs.lock().unwrap(),
        [false],
        "resumed, not taken for interrupted"
    );
}
