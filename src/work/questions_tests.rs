use super::*;
use oxp_lambda_core::durable::StateFuture;
use serde_json::json;

fn questions() -> Arc<Questions> {
    Arc::new(Questions::new(crate::state::embedded::store(None).unwrap()))
}

fn later(secs: u64) -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(secs)
}

const KEEP: Duration = Duration::from_secs(60);

/// A question service over an embedded store whose reads of questions are counted.
fn counted() -> (Arc<Questions>, Arc<crate::state::counting::CountingReads>) {
    let store = crate::state::embedded::store(None).unwrap();
    let counting = crate::state::counting::CountingReads::of(store, QUESTIONS);
    (Arc::new(Questions::new(counting.clone())), counting)
}

/// A call of `q` waiting up to 30 s, in a task of its own, on question `token` (`known` as it
/// asked it).
fn waiting_call(
    q: &Arc<Questions>,
    token: &str,
    known: Option<Item>,
) -> tokio::task::JoinHandle<Result<Value, Waited>> {
    let (q, token) = (q.clone(), token.to_owned());
    tokio::spawn(async move {
        q.wait(&token, known, later(30), None, std::future::pending())
            .await
    })
}

impl Questions {
    /// [`expect`](Self::expect)s the answer to question `token`, then [waits](Waiting::wait)
    /// for it: what each call waiting on a question does, in one step.
    async fn wait(
        &self,
        token: &str,
        known: Option<Item>,
        until: tokio::time::Instant,
        hold: Option<Duration>,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Value, Waited> {
        self.expect(token, known).wait(until, hold, cancelled).await
    }
}

#[tokio::test]
async fn a_question_takes_one_answer_from_its_own_caller_that_passes_the_protocols_check() {
    let q = questions();
    let asked = q
        .ask_once("call-1#0", Some("alice"), json!({"id": "call-1"}), KEEP)
        .await
        .unwrap();
    assert!(asked.new);
    let t = asked.token.as_str();
    let same_call = |asked: &Value| asked["id"] == "call-1";
    let answer = |token: &str, caller: &str, ok: bool, v: i64| {
        let q = q.clone();
        let token = token.to_owned();
        let caller = caller.to_owned();
        async move {
            q.answer(&token, Some(&caller), move |a| ok && same_call(a), json!(v))
                .await
        }
    };
    assert_eq!(
        answer("no-such", "alice", true, 0).await,
        Err(Refused::Unknown)
    );
    assert_eq!(
        answer(t, "mallory", true, 0).await,
        Err(Refused::Unknown),
        "another caller's answer is refused as if there were no question"
    );
    assert_eq!(answer(t, "alice", false, 0).await, Err(Refused::Mismatch));
    assert_eq!(answer(t, "alice", true, 0).await, Ok(()));
    assert_eq!(
        answer(t, "alice", true, 1).await,
        Err(Refused::Answered),
        "a second answer changes nothing"
    );
    let got = q
        .wait(t, None, later(5), None, std::future::pending())
        .await;
    assert_eq!(got, Ok(json!(0)));
}

#[tokio::test]
async fn the_same_call_asking_again_finds_its_question_and_its_answer() {
    let q = questions();
    let first = q.ask_once("c#0", None, json!(1), KEEP).await.unwrap();
    let again = q.ask_once("c#0", None, json!(1), KEEP).await.unwrap();
    assert!(!again.new);
    assert_eq!(first.token, again.token);
    let kept = q.store().list(QUESTIONS, None, 10).await.unwrap();
    assert_eq!(kept.len(), 1, "asking again leaves no second question");
    let next = q.ask_once("c#1", None, json!(1), KEEP).await.unwrap();
    assert_ne!(
        next.token, first.token,
        "the call's next question is another"
    );
    q.answer(&first.token, None, |_| true, json!("yes"))
        .await
        .unwrap();
    // The call, run again (a redelivered job), reads the answer given to its first run.
    let again = q.ask_once("c#0", None, json!(1), KEEP).await.unwrap();
    let got = q
        .wait(&again.token, None, later(5), None, std::future::pending())
        .await;
    assert_eq!(got, Ok(json!("yes")));
}

#[tokio::test]
async fn a_waiting_call_wakes_at_once_on_an_answer_taken_in_its_process_and_is_handed_it() {
    let (q, counting) = counted();
    let asked = q.ask_once("w#0", None, Value::Null, KEEP).await.unwrap();
    let waiter = waiting_call(&q, &asked.token, asked.written);
    // Past its first read of the store: from here only a wake or the poll can end the wait.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    q.answer(&asked.token, None, |_| true, json!(5))
        .await
        .unwrap();
    assert_eq!(waiter.await.unwrap(), Ok(json!(5)));
    assert!(
        started.elapsed() < POLL / 2,
        "woken, not polled: {:?}",
        started.elapsed()
    );
    assert_eq!(
        counting.reads(),
        1,
        "the wait's first look only: the answer written over the question the waiting call knew, \
         and handed to it, neither read again"
    );
}

#[tokio::test]
async fn an_answer_arriving_before_its_call_waits_is_handed_to_it_and_written_without_a_read() {
    let (q, counting) = counted();
    let asked = q
        .ask_once("k#0", Some("alice"), json!(1), KEEP)
        .await
        .unwrap();
    // Every read fails: the call expects its answer (before its question is sent) knowing the
    // question as it wrote it, and the answer needs no read.
    counting.fail_next(usize::MAX);
    let waiting = q.expect(&asked.token, asked.written);
    let refused = q.answer(&asked.token, Some("mallory"), |_| true, json!(0));
    assert_eq!(
        refused.await,
        Err(Refused::Unknown),
        "only its caller answers"
    );
    let mismatch = q.answer(&asked.token, Some("alice"), |a| a == &json!(2), json!(0));
    assert_eq!(
        mismatch.await,
        Err(Refused::Mismatch),
        "checked against what was asked"
    );
    let taken = q.answer(&asked.token, Some("alice"), |a| a == &json!(1), json!(9));
    assert_eq!(taken.await, Ok(()));
    let started = std::time::Instant::now();
    let got = waiting.wait(later(30), None, std::future::pending()).await;
    assert_eq!(got, Ok(json!(9)));
    assert!(started.elapsed() < POLL / 2, "handed, not polled");
    counting.fail_next(0);
    assert_eq!(counting.reads(), 0);
    assert_eq!(q.answered("k#0").await.unwrap(), Some(json!(9)), "durable");
    // A call that no longer expects its answer (it failed to send the question) is let go:
    // an answer then reads the question.
    let asked = q.ask_once("k#1", None, json!(1), KEEP).await.unwrap();
    drop(q.expect(&asked.token, asked.written));
    counting.reset();
    q.answer(&asked.token, None, |_| true, json!(3))
        .await
        .unwrap();
    assert_eq!(counting.reads(), 1);
}

#[tokio::test]
async fn an_answer_over_a_question_changed_since_its_waiting_call_knew_it_reads_it_as_it_stands() {
    let q = questions();
    let other = Questions::new(q.store().clone());
    let asked = q.ask_once("s#0", None, Value::Null, KEEP).await.unwrap();
    let waiter = waiting_call(&q, &asked.token, asked.written);
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Answered through another process: the call here still knows it unanswered.
    other
        .answer(&asked.token, None, |_| true, json!(1))
        .await
        .unwrap();
    let again = q.answer(&asked.token, None, |_| true, json!(2)).await;
    assert_eq!(
        again,
        Err(Refused::Answered),
        "its write refused, it read the answer"
    );
    assert_eq!(waiter.await.unwrap(), Ok(json!(1)), "the first answer only");
    // Let go through another process: refused as the record stands (no such question).
    let asked = q.ask_once("s#1", None, Value::Null, KEEP).await.unwrap();
    let waiter = waiting_call(&q, &asked.token, asked.written);
    tokio::time::sleep(Duration::from_millis(50)).await;
    other.forget(&asked.token).await.unwrap();
    let gone = q.answer(&asked.token, None, |_| true, json!(2)).await;
    assert_eq!(gone, Err(Refused::Unknown));
    waiter.abort();
}

#[tokio::test]
async fn an_answer_taken_by_another_process_is_read_within_a_poll() {
    let q = questions();
    // Another process on the same store: its own service, its own waiting calls.
    let other = Questions::new(q.store().clone());
    let asked = q.ask_once("x#0", None, Value::Null, KEEP).await.unwrap();
    let waiter = waiting_call(&q, &asked.token, None);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    other
        .answer(&asked.token, None, |_| true, json!(7))
        .await
        .unwrap();
    assert_eq!(waiter.await.unwrap(), Ok(json!(7)));
    assert!(started.elapsed() <= POLL + Duration::from_millis(200));
}

#[tokio::test]
async fn a_wait_ends_at_its_time_on_cancellation_and_when_the_question_is_let_go() {
    let q = questions();
    let asked = q.ask_once("e#0", None, Value::Null, KEEP).await.unwrap();
    let soon = tokio::time::Instant::now() + Duration::from_millis(100);
    let t = asked.token.as_str();
    assert_eq!(
        q.wait(t, None, soon, None, std::future::pending()).await,
        Err(Waited::Until)
    );
    let cancelled = tokio::time::sleep(Duration::from_millis(50));
    assert_eq!(
        q.wait(t, None, later(30), None, cancelled).await,
        Err(Waited::Cancelled)
    );
    q.forget(t).await.unwrap();
    assert_eq!(
        q.wait(t, None, later(30), None, std::future::pending())
            .await,
        Err(Waited::Gone)
    );
}

#[tokio::test]
async fn a_taken_key_is_held_while_awaited_and_free_once_let_go_or_lapsed() {
    let q = questions();
    // The stores keep expiry to the second: a hold of seconds.
    let hold = Duration::from_secs(3);
    let written = q.take("s:0", Some("a"), hold).await.unwrap();
    assert!(written.is_some());
    assert!(
        q.take("s:0", Some("a"), hold).await.unwrap().is_none(),
        "held"
    );
    // Awaited past its hold: renewed, so still this call's.
    let soon = tokio::time::Instant::now() + Duration::from_secs(4);
    let waited = q
        .wait("s:0", written, soon, Some(hold), std::future::pending())
        .await;
    assert_eq!(waited, Err(Waited::Until));
    assert!(
        q.take("s:0", Some("a"), hold).await.unwrap().is_none(),
        "renewed while awaited"
    );
    // Not awaited (its call crashed): the hold lapses.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(
        q.take("s:0", Some("a"), hold).await.unwrap().is_some(),
        "lapsed"
    );
    q.forget("s:0").await.unwrap();
    assert!(
        q.take("s:0", Some("a"), hold).await.unwrap().is_some(),
        "let go"
    );
}

#[tokio::test]
async fn a_taken_questions_answer_is_handed_to_the_call_expecting_it_and_written_without_a_read() {
    let (q, counting) = counted();
    let written = q.take("s:1", Some("alice"), KEEP).await.unwrap();
    // Every read fails: the call expects its answer knowing the question as it took it.
    counting.fail_next(usize::MAX);
    let waiting = q.expect("s:1", written);
    q.answer("s:1", Some("alice"), |_| true, json!(7))
        .await
        .unwrap();
    let got = waiting.wait(later(30), None, std::future::pending()).await;
    assert_eq!(got, Ok(json!(7)));
    counting.fail_next(0);
    assert_eq!(counting.reads(), 0);
}

#[tokio::test]
async fn a_question_whose_index_was_kept_and_record_lost_is_recorded_again_when_its_call_asks_again()
 {
    let q = questions();
    let first = q
        .ask_once("lost#0", Some("alice"), json!(1), KEEP)
        .await
        .unwrap();
    // A crash between the two writes on a store that does not keep their order: the index
    // is there, the question is not.
    q.store().delete(QUESTIONS, &first.token).await.unwrap();
    let again = q
        .ask_once("lost#0", Some("alice"), json!(1), KEEP)
        .await
        .unwrap();
    assert_eq!(again.token, first.token, "the call's one question");
    assert_eq!(
        q.answer(
            &again.token,
            Some("alice"),
            |a| *a == json!(1),
            json!("yes")
        )
        .await,
        Ok(()),
        "recorded again: it takes its caller's answer"
    );
    let got = q
        .wait(&again.token, None, later(5), None, std::future::pending())
        .await;
    assert_eq!(got, Ok(json!("yes")));
    // An answered question asked again is kept as it is.
    let third = q
        .ask_once("lost#0", Some("alice"), json!(1), KEEP)
        .await
        .unwrap();
    let got = q
        .wait(&third.token, None, later(5), None, std::future::pending())
        .await;
    assert_eq!(got, Ok(json!("yes")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_waiting_here_is_handed_its_answer_before_it_is_durable_and_its_next_write_shares_the_flush()
 {
    use std::time::Instant;
    let q = questions();
    let answer_after_the_wait_began = |token: String| {
        let q = q.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let started = Instant::now();
            let answered = q.answer(&token, None, |_| true, json!("yes")).await;
            (answered, started, Instant::now())
        }
    };
    // Work's question: its run, handed the answer, writes its outcome 10 ms later, and the
    // answer is acknowledged with that write, not in a flush of its own before it.
    let asked = q
        .ask("w#0", None, json!(1), KEEP, Some("work-1"))
        .await
        .unwrap();
    let run = async {
        let got = q
            .wait(&asked.token, None, later(5), None, std::future::pending())
            .await;
        let handed = Instant::now();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let outcome = Item::new(b"outcome".to_vec(), None);
        q.store().put("work", "work-1", outcome).await.unwrap();
        (got, handed)
    };
    let ((got, handed), (answered, _, acknowledged)) =
        tokio::join!(run, answer_after_the_wait_began(asked.token.clone()));
    assert_eq!(got, Ok(json!("yes")));
    answered.unwrap();
    assert!(
        acknowledged >= handed + Duration::from_millis(10),
        "acknowledged before the run's next write"
    );
    // A call that is not work (a question on an MCP stream) writes nothing next: its answer is
    // acknowledged at once, nothing held for it.
    let asked = q.ask("s#0", None, json!(1), KEEP, None).await.unwrap();
    let call = q.wait(&asked.token, None, later(5), None, std::future::pending());
    let (got, (answered, started, acknowledged)) =
        tokio::join!(call, answer_after_the_wait_began(asked.token.clone()));
    assert_eq!(got, Ok(json!("yes")));
    answered.unwrap();
    // The embedded store holds a write for one to follow up to 25 ms.
    let took = acknowledged - started;
    assert!(
        took < Duration::from_millis(25),
        "held {took:?} for nothing"
    );
}

/// The embedded store with a flush that comes only when the test says: a decision told, then
/// the write made once `flush` is notified.
#[derive(Debug)]
struct SlowFlush {
    store: Arc<dyn StateStore>,
    flush: Arc<tokio::sync::Notify>,
}

impl StateStore for SlowFlush {
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
        self.store.put_if(partition, key, item, expected)
    }

    fn put_if_decided<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
        decided: oxp_lambda_core::durable::Decided,
    ) -> StateFuture<'a, bool> {
        Box::pin(async move {
            decided(true);
            self.flush.notified().await;
            self.store.put_if(partition, key, item, expected).await
        })
    }

    fn put<'a>(&'a self, partition: &'a str, key: &'a str, item: Item) -> StateFuture<'a, ()> {
        self.store.put(partition, key, item)
    }

    fn delete<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, ()> {
        self.store.delete(partition, key)
    }

    fn list<'a>(
        &'a self,
        partition: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        self.store.list(partition, after, limit)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_begins_waiting_between_an_answers_decision_and_its_flush_is_handed_it_at_once()
{
    use std::time::Instant;
    let flush = Arc::new(tokio::sync::Notify::new());
    let store = crate::state::embedded::store(None).unwrap();
    let q = Arc::new(Questions::new(Arc::new(SlowFlush {
        store,
        flush: flush.clone(),
    })));
    let asked = q
        .ask("w#0", None, json!(1), KEEP, Some("work-1"))
        .await
        .unwrap();
    // Answered while nobody waits: decided, not yet durable.
    let answering = tokio::spawn({
        let (q, token) = (q.clone(), asked.token.clone());
        async move { q.answer(&token, None, |_| true, json!("yes")).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The call begins waiting and reads its question, unanswered as stored.
    let waiting = tokio::spawn({
        let (q, token) = (q.clone(), asked.token.clone());
        async move {
            let got = q
                .wait(&token, None, later(5), None, std::future::pending())
                .await;
            (got, Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let flushed = Instant::now();
    flush.notify_one();
    answering.await.unwrap().unwrap();
    let (got, at) = waiting.await.unwrap();
    assert_eq!(got, Ok(json!("yes")));
    // Not found by its next read of the store, a poll later.
    assert!(at - flushed < POLL / 2, "waited {:?}", at - flushed);
}
