//! One `tools/call`'s talk-back channel at 2026-07-28: the answers it came with (earlier
//! rounds' from its sealed state, this request's `inputResponses`), and the questions its tool
//! asked that have none, which end the call as the next round ([`super::round_trip`] seals it).
//! A tool that asks first may detach here: the call then goes on as a task.

use super::declared::{Needs, Offers};
use super::questions::{Answers, Carrier, Question, may_ask, shared_key};
use oxp_lambda_core::talk::{TalkError, TalkFuture};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// One call's questions and the answers it came with; the talk-back channel of the call.
#[derive(Debug, Default)]
pub(crate) struct Exchange {
    /// The answers of earlier rounds, by question, as
    /// [`read_response`](super::questions::read_response) keeps them; this round's join them as
    /// the tool's questions take them.
    answers: Mutex<Answers>,
    /// This request's `inputResponses`, read, by key.
    responses: BTreeMap<String, Value>,
    /// The questions the last round left open, which the responses answer (`None`: the first
    /// one without an answer).
    open: Option<BTreeSet<u32>>,
    /// The questions the tool asked that have no answer yet, by number.
    asked: Mutex<BTreeMap<u32, Question>>,
    /// The call may go on as a task where the tool detaches (its client takes tasks).
    detachable: bool,
    /// The tool detached: the call goes on as a task, with the answers so far.
    detached: AtomicBool,
    /// What the client declared it takes; `None`: anything (its client was checked before).
    offers: Option<Offers>,
    /// What the tool needed that the client did not declare.
    missing: Mutex<BTreeSet<Needs>>,
}

impl Exchange {
    /// The exchange of a request that brings `responses`, after rounds that gave `answers` and
    /// left the questions `open` (`None`: the first one without an answer).
    pub(crate) fn continued(
        answers: Answers,
        responses: BTreeMap<String, Value>,
        open: Option<BTreeSet<u32>>,
    ) -> Self {
        Self {
            answers: Mutex::new(answers),
            responses,
            open,
            ..Self::default()
        }
    }

    /// The answers so far and the questions asked without one, which leave the exchange.
    pub(crate) fn round(&self) -> (Answers, BTreeMap<u32, Question>) {
        let asked = std::mem::take(&mut *self.asked.lock().unwrap_or_else(|e| e.into_inner()));
        let answers = self
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        (answers, asked)
    }

    /// The exchange of a client that declared `offers`: a question it does not take fails at
    /// once ([`TalkError::NotCarried`]), and is [`Exchange::missing`].
    pub(crate) fn offering(mut self, offers: Offers) -> Self {
        self.offers = Some(offers);
        self
    }

    /// What the tool needed that the client did not declare.
    pub(crate) fn missing(&self) -> BTreeSet<Needs> {
        self.missing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Nothing for the call's end to do: no question left open, nothing missing, no detach.
    pub(crate) fn quiet(&self) -> bool {
        let asked = self
            .asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty();
        let missing = self
            .missing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty();
        asked && missing && !self.detached.load(Ordering::Relaxed)
    }

    /// The call may go on as a task where the tool detaches.
    pub(crate) fn detachable(mut self) -> Self {
        self.detachable = true;
        self
    }

    /// The answers so far, when the tool detached (the task's to start with).
    pub(crate) fn detached(&self) -> Option<Answers> {
        self.detached.load(Ordering::Relaxed).then(|| {
            self.answers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
        })
    }

    /// Answer `seq`: an earlier round's, this request's response under the question's key,
    /// or none, and the question is parked as the next round's (the call ends there, with
    /// every other question asked at the same time).
    fn answer(&self, seq: u32, question: Question) -> Result<Value, TalkError> {
        let needs = question.needs();
        if self.offers.is_some_and(|o| !o.takes(needs)) {
            let mut missing = self.missing.lock().unwrap_or_else(|e| e.into_inner());
            missing.insert(needs);
            return Err(needs.not_carried());
        }
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(answer) = answers.get(seq) {
            return Ok(answer.clone());
        }
        may_ask(seq)?;
        let key = question.key(seq);
        let open = match &self.open {
            Some(open) => open.contains(&seq),
            None => seq == answers.first_open(),
        };
        if open && let Some(response) = self.responses.get(&key) {
            answers.set(seq, response.clone());
            return Ok(response.clone());
        }
        drop(answers);
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        if asked.iter().any(|(s, q)| *s != seq && q.key(*s) == key) {
            return Err(shared_key(&key));
        }
        asked.insert(seq, question);
        Err(TalkError::Parked)
    }
}

impl Carrier for Exchange {
    fn carry(&self, seq: u32, question: Question) -> TalkFuture<'_, Result<Value, TalkError>> {
        Box::pin(std::future::ready(self.answer(seq, question)))
    }

    fn detach(&self) -> TalkFuture<'_, Result<(), TalkError>> {
        if !self.detachable {
            return Box::pin(std::future::ready(Ok(())));
        }
        self.detached.store(true, Ordering::Relaxed);
        Box::pin(std::future::ready(Err(TalkError::Parked)))
    }
}
