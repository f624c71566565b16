//! One `tools/call`'s talk-back channel at 2026-07-28: the answers it came with (earlier
//! rounds' from its sealed state, this request's `inputResponses`), and the questions its tool
//! asked that have none, which end the call as the next round ([`super::round_trip`] seals it).
//! A tool that asks first may detach here: the call then goes on as a task. [`Round`] is the
//! call's way of asking at that revision: this channel, and what the call's end becomes.

use super::questions::{Answers, Carried, Carrier, MAX_ASKS, Needs, Offers, Question};
use super::round_trip::RoundTrips;
use super::task::Tasks;
use crate::server::CallContext;
use oxp_lambda_core::invoke::{Outcome, Rejection};
use oxp_lambda_core::talk::{TalkError, TalkFuture};
use rmcp::ErrorData;
use rmcp::model::CallToolResponse;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One call's questions and the answers it came with; the talk-back channel of the call.
#[derive(Debug, Default)]
pub(crate) struct Exchange {
    /// The answers of earlier rounds, by question, as [`read_response`] keeps them; this
    /// round's join them as the tool's questions take them.
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
        if seq as usize >= MAX_ASKS {
            return Err(TalkError::Invalid(format!(
                "a call asks at most {MAX_ASKS} questions"
            )));
        }
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
            return Err(TalkError::Invalid(format!(
                "two questions asked at once share the key `{key}`"
            )));
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

/// A round the server keeps: the store of rounds, the round's exchange and what its state is
/// bound to.
pub(crate) type Kept<'a> = (&'a RoundTrips, Arc<Carried<Exchange>>, Vec<u8>);

/// A 2026-07-28 call's way of asking its client: `input_required` rounds.
pub(crate) struct Round<'a> {
    /// The round (`None`: the server keeps no rounds, and the tool is asked nothing).
    pub(crate) exchange: Option<Kept<'a>>,
    /// The client opens links for its user (it declared URL-mode elicitation).
    pub(crate) url: bool,
    /// What the task starts from, should the tool detach.
    pub(crate) detaching: Option<(CallContext, Map<String, Value>, Offers)>,
}

impl Round<'_> {
    /// The call's end, when it is not the tool's result: the next round (a question without an
    /// answer), the -32021 of what the tool needed that its client did not declare, a task
    /// (the tool detached), or the user's authorization as a link to open.
    pub(crate) async fn end(
        self,
        tasks: Option<&Arc<Tasks>>,
        name: &str,
        answer: &Result<Outcome, Rejection>,
    ) -> Result<Option<CallToolResponse>, ErrorData> {
        if let Some((trips, exchange, binding)) = &self.exchange {
            let input_required = trips.input_required(exchange, binding).await.map_err(|e| {
                tracing::error!(target: "oxp::mcp", error = %e, "input_required not built");
                ErrorData::internal_error("The server cannot ask the user now", None)
            })?;
            if let Some(input_required) = input_required {
                return Ok(Some(CallToolResponse::InputRequired(input_required)));
            }
            let missing = exchange.missing();
            if !missing.is_empty() && !answer.as_ref().is_ok_and(|o| o.result.is_ok()) {
                return Err(super::questions::missing_capabilities(&missing));
            }
            if let Some(answers) = exchange.detached()
                && let (Some(tasks), Some((context, arguments, offers))) = (tasks, self.detaching)
            {
                let created = tasks
                    .create(context, name, arguments, answers, offers)
                    .await?;
                return Ok(Some(CallToolResponse::Task(created)));
            }
        }
        if self.url
            && let Err(rejection) = answer
            && let Some(input_required) = super::result::url_elicitation(rejection)
        {
            return Ok(Some(CallToolResponse::InputRequired(input_required)));
        }
        Ok(None)
    }
}
