//! Waiting for an answer: a call of this process waiting on its question is handed the answer
//! taken here and woken at once; one given through another process it reads within [`POLL`].
//! The waiting call knows its question as last written or read, which an answer taken here is
//! written over without a read of its own.

use super::{POLL, QUESTIONS, Questions, Record, Waited};
use oxp_lambda_core::durable::{Item, StateError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// A call of this process waiting on its question's answer.
#[derive(Debug, Default)]
pub(super) struct Waiter {
    woken: Notify,
    /// The answer, when it was taken in this process: handed over, not read back from the
    /// store.
    answer: Mutex<Option<Value>>,
    /// The question as this call last wrote or read it, unanswered: an answer taken here is
    /// written over it without reading it first.
    known: Mutex<Option<Item>>,
}

/// A call of this process about to wait on its question: registered before the question is
/// sent, so that an answer arriving before the wait begins is handed to it, and written over
/// the question as known without a read. Let go when dropped.
pub(crate) struct Waiting<'a> {
    questions: &'a Questions,
    token: String,
    waiter: Arc<Waiter>,
}

impl Questions {
    /// The call of this process that will wait on question `token` (`known` as written, when
    /// the call just asked it), registered from now on.
    pub(crate) fn expect(&self, token: &str, known: Option<Item>) -> Waiting<'_> {
        let waiter = lock(&self.waiting)
            .entry(token.to_owned())
            .or_default()
            .clone();
        if known.is_some() {
            *lock(&waiter.known) = known;
        }
        Waiting {
            questions: self,
            token: token.to_owned(),
            waiter,
        }
    }
}

impl Waiting<'_> {
    /// Waits for the answer until `until`, or until `cancelled`; a question
    /// [taken](Questions::take) for `hold` is held on while it waits.
    pub(crate) async fn wait(
        self,
        until: tokio::time::Instant,
        hold: Option<Duration>,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Value, Waited> {
        let (questions, token) = (self.questions, self.token.as_str());
        let waited = questions
            .watch(token, until, hold, &self.waiter, cancelled)
            .await;
        let waiter = Arc::clone(&self.waiter);
        // No longer waiting (dropped): answers taken from now on are not handed here.
        drop(self);
        // An answer handed over at the last moment (it wakes nothing else: see `answer`).
        let handed = lock(&waiter.answer).take();
        match (waited, handed) {
            (Err(Waited::Until), Some(answer)) => Ok(answer),
            (waited, _) => waited,
        }
    }
}

impl Drop for Waiting<'_> {
    /// Takes the question off this process's waiting calls (unless a call registered it anew
    /// since, which keeps its own).
    fn drop(&mut self) {
        let mut waiting = lock(&self.questions.waiting);
        if waiting
            .get(&self.token)
            .is_some_and(|w| Arc::ptr_eq(w, &self.waiter))
        {
            waiting.remove(&self.token);
        }
    }
}

impl Questions {
    async fn watch(
        &self,
        token: &str,
        until: tokio::time::Instant,
        hold: Option<Duration>,
        waiter: &Waiter,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Value, Waited> {
        tokio::pin!(cancelled);
        let mut held = tokio::time::Instant::now();
        loop {
            if let Some(answer) = lock(&waiter.answer).take() {
                return Ok(answer);
            }
            match self.store.get(QUESTIONS, token).await {
                Ok(Some(mut item)) => {
                    let record: Record = serde_json::from_slice(&item.value)
                        .map_err(|_| Waited::Unavailable(StateError("unreadable".into())))?;
                    if let Some(answer) = record.answer {
                        return Ok(answer);
                    }
                    if let Some(hold) = hold
                        && held.elapsed() >= hold / 3
                    {
                        // Still waiting: the question stays this call's (unless the answer
                        // came first, which the next read finds).
                        let renewed = Item::new(item.value.clone(), Some(SystemTime::now() + hold));
                        let put =
                            self.store
                                .put_if(QUESTIONS, token, renewed.clone(), Some(&item.value));
                        if let Ok(true) = put.await {
                            item = renewed;
                        }
                        held = tokio::time::Instant::now();
                    }
                    *lock(&waiter.known) = Some(item);
                }
                Ok(None) => return Err(Waited::Gone),
                Err(e) => {
                    tracing::warn!(target: "oxp::questions", error = %e, "state store unavailable while waiting for an answer");
                }
            }
            let wake = until.min(tokio::time::Instant::now() + POLL);
            tokio::select! {
                () = waiter.woken.notified() => {}
                () = tokio::time::sleep_until(wake) => {}
                () = &mut cancelled => return Err(Waited::Cancelled),
            }
            if tokio::time::Instant::now() >= until {
                return Err(Waited::Until);
            }
        }
    }
}

/// The question `token` as the call of this process waiting on it last wrote or read it.
pub(super) fn known(waiting: &Mutex<HashMap<String, Arc<Waiter>>>, token: &str) -> Option<Item> {
    let waiting = lock(waiting);
    waiting
        .get(token)
        .and_then(|waiter| lock(&waiter.known).clone())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// What hands an answer to `token` to the call of this process waiting on it, once the store
/// has decided the answer's write: whether a write follows it (`work` handed the answer writes
/// its outcome, or its next question, next), noting in `handed` whether it was handed.
pub(super) fn hand(
    waiting: &Arc<Mutex<HashMap<String, Arc<Waiter>>>>,
    token: &str,
    answer: &Value,
    work: bool,
    handed: &Arc<AtomicBool>,
) -> oxp_lambda_core::durable::Decided {
    let (waiting, handed) = (Arc::clone(waiting), Arc::clone(handed));
    let (token, answer) = (token.to_owned(), answer.clone());
    Box::new(move |taken: bool| {
        let here = taken && hand_to(&waiting, &token, answer);
        handed.store(here, Ordering::Release);
        // A call that is not work (on an MCP stream) writes nothing, and with nobody waiting
        // here nothing follows to wait for.
        work && here
    })
}

/// Hands `answer` to the call of this process waiting on question `token`, if one is, and wakes
/// it; whether one was.
pub(super) fn hand_to(
    waiting: &Mutex<HashMap<String, Arc<Waiter>>>,
    token: &str,
    answer: Value,
) -> bool {
    let waiting = lock(waiting);
    let Some(waiter) = waiting.get(token) else {
        return false;
    };
    *lock(&waiter.answer) = Some(answer);
    waiter.woken.notify_one();
    true
}
