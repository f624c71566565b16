//! The one question service: a question a running call asks its user or its client (RAP's
//! `user_choice`, MCP's elicitation, sampling and roots on a handshake call's stream) is a record
//! in the state store, asked once, answered once by its own caller through any process, and
//! awaited under one wake-up policy: at once when the answer lands in the waiting call's own
//! process, else within [`POLL`] (the answer came through another process: a Lambda execution
//! environment, a second server on the same table). Knows no protocol: what was asked and what
//! answers it are the protocol's JSON, checked by the protocol.
//!
//! Two ways to name a question: by the call that asks it ([`Questions::ask_once`]: a call that
//! runs again, a redelivered job, finds the question it asked and its answer rather than asking
//! twice; the answer comes under an unguessable token), or by a key the protocol names
//! ([`Questions::take`]: MCP numbers a call's requests on its stream, so a number is held while
//! it is awaited, renewed, and let go when its call is done).
//!
//! A task's questions are asked once per task and question number too, answered through
//! `tasks/update` and replayed from here to a run that resumes. Only answers given in the
//! request itself are not questions here (MCP 2026-07-28's `input_required` rounds, whose state
//! the client holds, sealed): nothing waits on them.

use oxp_lambda_core::durable::{Item, StateError, StateStore};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// How often a waiting call reads its question's record (when no answer woke it).
pub(crate) const POLL: Duration = Duration::from_millis(500);
/// How long before its executor's end (a Lambda invocation's deadline) a call waiting for its
/// user stops waiting and parks: the call's own deadline, at which the invoker ends its tool
/// with a timeout, must never come first, and the park is a write still to make.
pub(crate) const PARK_MARGIN: Duration = Duration::from_millis(500);
/// The time a call asking at `deadline` (its executor's end) may wait for the answer before it
/// parks; `None` without a deadline.
pub(crate) fn park_at(deadline: Option<std::time::Instant>) -> Option<std::time::Instant> {
    deadline.map(|d| d.checked_sub(PARK_MARGIN).unwrap_or(d))
}
/// An answered question is kept at least this long for its waiting call to read.
const ANSWER_KEPT: Duration = Duration::from_secs(60);

/// Questions, by token.
const QUESTIONS: &str = "questions";
/// The token of a call's question, by the key of the call and its question number.
const ASKED: &str = "questions-of";

/// A question as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// The caller the answer must come from (`None` without authentication).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    caller: Option<String>,
    /// What the protocol asked, to check an answer against.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    asked: Value,
    /// The answer, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answer: Option<Value>,
    /// The work whose run waits on it, woken by the answer (it may have parked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wakes: Option<String>,
}

impl Record {
    fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("questions serialize")
    }
}

/// A question asked by [`Questions::ask_once`]: its token, and whether it was asked just now
/// (the protocol then sends it) or before.
#[derive(Debug)]
pub(crate) struct Asked {
    pub(crate) token: String,
    pub(crate) new: bool,
    /// The question as written, when asked just now: the call [waiting](Waiting::wait) on it
    /// knows it, and an answer taken in this process is written over it without a read.
    pub(crate) written: Option<Item>,
}

/// Why a wait ended without an answer.
#[derive(Debug, PartialEq)]
pub(crate) enum Waited {
    /// `until` came.
    Until,
    /// The question is gone (expired, or let go).
    Gone,
    /// The call was cancelled.
    Cancelled,
    /// The store did not answer.
    Unavailable(StateError),
}

/// Why an answer was refused; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No such question, or it is another caller's (the difference is not told).
    Unknown,
    /// The protocol's check of the answer against the question failed.
    Mismatch,
    /// The question was answered already.
    Answered,
    /// The store did not answer (retry).
    Unavailable,
}

/// The questions of every call of this process, over the state store.
#[derive(Debug)]
pub(crate) struct Questions {
    store: Arc<dyn StateStore>,
    /// The calls of this process waiting on an answer, to wake them at once.
    waiting: Arc<Mutex<HashMap<String, Arc<Waiter>>>>,
    /// The runner whose work an answer wakes.
    runner: std::sync::OnceLock<std::sync::Weak<super::Runner>>,
}

impl Questions {
    /// The service over `store`.
    pub(crate) fn new(store: Arc<dyn StateStore>) -> Self {
        Self {
            store,
            waiting: Arc::default(),
            runner: std::sync::OnceLock::new(),
        }
    }

    /// Work `work`'s run waits on a question (or an authorization): a takeover of it resumes
    /// the run, which finds its question and the answer again, rather than taking it for
    /// interrupted. `asks`: its question's writes follow at once (they share the mark's
    /// flush on the embedded store).
    pub(crate) async fn waits(&self, work: &str, asks: bool) {
        let runner = self.runner.get().and_then(std::sync::Weak::upgrade);
        if let Some(runner) = runner
            && let Err(e) = runner.asking(work, asks).await
        {
            tracing::warn!(target: "oxp::questions", error = %e, "a run waiting on its user not marked so");
        }
    }

    /// Answers wake the work of `runner` whose runs wait on them.
    pub(crate) fn wakes(&self, runner: &Arc<super::Runner>) {
        let _ = self.runner.set(Arc::downgrade(runner));
    }

    /// The store the questions live in.
    pub(crate) fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    /// Asks the question `call` names (the call, its caller and the question's number, hashed
    /// by the protocol) once: recorded for `caller` with what was `asked`, waiting at most
    /// `keep` for its answer. Asked before: its token, and `new: false`.
    pub(crate) async fn ask_once(
        &self,
        call: &str,
        caller: Option<&str>,
        asked: Value,
        keep: Duration,
    ) -> Result<Asked, StateError> {
        self.ask(call, caller, asked, keep, None).await
    }

    /// [`Questions::ask_once`] for the run of work `wakes`: its answer wakes the work (its run
    /// may have parked, in any process).
    pub(crate) async fn ask(
        &self,
        call: &str,
        caller: Option<&str>,
        asked: Value,
        keep: Duration,
        wakes: Option<&str>,
    ) -> Result<Asked, StateError> {
        // Asked for the first time, mostly: recorded at once (not looked up first), and a call
        // that asked before (a redelivered job, a resumed task) finds its index taken below.
        let token = uuid::Uuid::new_v4().simple().to_string();
        let record = Record {
            caller: caller.map(str::to_owned),
            asked,
            answer: None,
            wakes: wakes.map(str::to_owned),
        };
        let expires = Some(SystemTime::now() + keep);
        let item = Item::new(record.bytes(), expires);
        let index = Item::new(token.clone().into_bytes(), expires);
        // The question and its index side by side: one wait (on the embedded store one commit,
        // its writer keeping their order). A concurrent copy of the same call whose index was
        // written first wins: its token is the one.
        let (recorded, indexed) = tokio::join!(
            self.store.put(QUESTIONS, &token, item.clone()),
            self.store.put_if(ASKED, call, index, None)
        );
        recorded?;
        if !indexed? {
            let found = self.token_of(call).await?.ok_or_else(|| {
                StateError("a question's record vanished while it was recorded".into())
            })?;
            // Ours goes; the first one's question is recorded again if its index was written
            // and it was not (a crash between the two, on a store that does not keep their
            // order): kept as it is when it was.
            let (deleted, healed) = tokio::join!(
                self.store.delete(QUESTIONS, &token),
                self.store.put_if(QUESTIONS, &found, item, None)
            );
            deleted.and(healed.map(drop))?;
            return Ok(Asked {
                token: found,
                new: false,
                written: None,
            });
        }
        Ok(Asked {
            token,
            new: true,
            written: Some(item),
        })
    }

    /// Takes the question `token` (a key the protocol names) for `caller` while no other
    /// question holds it, for `hold` (renewed while it is awaited): the question as written
    /// (which the call [expecting](Self::expect) its answer knows), or `None` when another
    /// holds it.
    pub(crate) async fn take(
        &self,
        token: &str,
        caller: Option<&str>,
        hold: Duration,
    ) -> Result<Option<Item>, StateError> {
        let record = Record {
            caller: caller.map(str::to_owned),
            asked: Value::Null,
            answer: None,
            wakes: None,
        };
        let item = Item::new(record.bytes(), Some(SystemTime::now() + hold));
        let taken = self
            .store
            .put_if(QUESTIONS, token, item.clone(), None)
            .await?;
        Ok(taken.then_some(item))
    }

    /// The answer to the question `call` names, if it was asked and answered.
    pub(crate) async fn answered(&self, call: &str) -> Result<Option<Value>, StateError> {
        let Some(token) = self.token_of(call).await? else {
            return Ok(None);
        };
        let Some(item) = self.store.get(QUESTIONS, &token).await? else {
            return Ok(None);
        };
        let record: Record = serde_json::from_slice(&item.value)
            .map_err(|_| StateError("a question does not read".into()))?;
        Ok(record.answer)
    }

    /// [`answer`](Self::answer) to the question `call` names (asked by
    /// [`ask_once`](Self::ask_once)).
    pub(crate) async fn answer_call(
        &self,
        call: &str,
        caller: Option<&str>,
        check: impl Fn(&Value) -> bool,
        answer: Value,
    ) -> Result<(), Refused> {
        let token = match self.token_of(call).await {
            Ok(Some(token)) => token,
            Ok(None) => return Err(Refused::Unknown),
            Err(_) => return Err(Refused::Unavailable),
        };
        self.answer(&token, caller, check, answer).await
    }

    /// The token of the question `call` names, if it was asked.
    async fn token_of(&self, call: &str) -> Result<Option<String>, StateError> {
        let found = self.store.get(ASKED, call).await?;
        Ok(found.map(|item| String::from_utf8_lossy(&item.value).into_owned()))
    }

    /// Lets the question `token` go (its call is done with it, answered or not).
    pub(crate) async fn forget(&self, token: &str) -> Result<(), StateError> {
        self.store.delete(QUESTIONS, token).await
    }

    /// Takes `answer` of `caller` to the question `token` once, when `check` passes it against
    /// what was asked, and wakes the call if it waits in this process.
    pub(crate) async fn answer(
        &self,
        token: &str,
        caller: Option<&str>,
        check: impl Fn(&Value) -> bool,
        answer: Value,
    ) -> Result<(), Refused> {
        let unavailable = |e: StateError| {
            tracing::warn!(target: "oxp::questions", error = %e, "state store unavailable for an answer");
            Refused::Unavailable
        };
        // The question as the call waiting on it here last wrote or read it: the answer is
        // written over that, not read first (one store round trip off the way to the result,
        // docs/performance.md); read only when the write finds it changed.
        let mut known = wait::known(&self.waiting, token);
        loop {
            let read = known.is_none();
            let item = match known.take() {
                Some(item) => item,
                None => (self.store.get(QUESTIONS, token).await)
                    .map_err(unavailable)?
                    .ok_or(Refused::Unknown)?,
            };
            let record = unanswered(&item, caller, &check)?;
            let wakes = record.wakes.clone();
            let answered = Record {
                answer: Some(answer.clone()),
                ..record
            };
            let kept = SystemTime::now() + ANSWER_KEPT;
            let expires = item.expires.map(|e| e.max(kept));
            let answered = Item::new(answered.bytes(), expires);
            // The call waiting here is handed the answer as soon as the store has taken it,
            // before it is durable: the outcome work then writes shares the answer's flush
            // (the embedded store holds it briefly for that), one flush on the way to the
            // result rather than two (docs/performance.md). The answer is acknowledged, below,
            // only once durable; should that fail, its sender hears so and sends it again, and
            // the call has gone on with it (or, after a crash, runs again and finds its
            // question unanswered).
            let handed = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let hand = wait::hand(&self.waiting, token, &answer, wakes.is_some(), &handed);
            let swapped = self
                .store
                .put_if_decided(QUESTIONS, token, answered, Some(&item.value), hand)
                .await
                .map_err(unavailable)?;
            match swapped {
                // Another answer (or the asking call letting it go) came between the read and
                // the write; or what the waiting call knew was not the question as it is.
                false if read => return Err(Refused::Answered),
                false => continue,
                true => {}
            }
            // A call that began waiting here after the decision may have read the question
            // before the answer was durable: handed it now (one that begins after reads it).
            let handed = handed.load(std::sync::atomic::Ordering::Acquire)
                || hand_to(&self.waiting, token, answer);
            self.wake(wakes.as_deref(), handed).await;
            return Ok(());
        }
    }

    /// Wakes the work `wakes` an answer was taken for. A run that parked waiting (its
    /// executor's time ran out) goes on, anywhere; one still waiting somewhere is left to find
    /// the answer. A local run waiting here was `handed` it (a local run never parks): nothing
    /// to wake.
    async fn wake(&self, wakes: Option<&str>, handed: bool) {
        let runner = self.runner.get().and_then(std::sync::Weak::upgrade);
        if let (Some(work), Some(runner)) = (wakes, runner)
            && !(handed && runner.local())
            && let Err(e) = runner.wake(work).await
        {
            tracing::warn!(target: "oxp::questions", error = %e, "the work waiting on an answer not woken");
        }
    }
}

/// The question `item`, when `caller` may answer it, it is unanswered and `check` passes what
/// was asked.
fn unanswered(
    item: &Item,
    caller: Option<&str>,
    check: impl Fn(&Value) -> bool,
) -> Result<Record, Refused> {
    let record: Record = serde_json::from_slice(&item.value).map_err(|_| Refused::Unknown)?;
    if record.caller.as_deref() != caller {
        return Err(Refused::Unknown);
    }
    if record.answer.is_some() {
        return Err(Refused::Answered);
    }
    if !check(&record.asked) {
        return Err(Refused::Mismatch);
    }
    Ok(record)
}

mod wait;
pub(crate) use wait::Waiting;
use wait::{Waiter, hand_to};

#[cfg(all(test, feature = "embedded-state"))]
#[path = "questions_tests.rs"]
mod tests;
