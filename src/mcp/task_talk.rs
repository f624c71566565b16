//! A task's talk-back channel: a question puts the task in `input_required` and waits for
//! `tasks/update` to answer it (or for a cancellation). Questions asked at once are open at
//! once, each under its key, and answered in any order; the task works again when none is open. In Lambda a worker cannot wait past its
//! invocation: at its deadline the task is parked (no run holds it) and the answer sends the
//! run to the queue again, which replays the answers given so far.

use super::questions::{Answers, MAX_ASKS, Offers, Question, request_of};
use super::sampling::{roots_of, sampled_of};
use super::task_store::{TaskStore, WATCH};
use oxp_lambda_core::durable::StateError;
use oxp_lambda_core::form::{Filled, Form};
use oxp_lambda_core::sample::{Root, Sample, Sampled};
use oxp_lambda_core::talk::{Ask, Choice, Talk, TalkError, TalkFuture};
use oxp_lambda_core::tool::Cancellation;
use rmcp::model::TaskStatus;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A task's talk-back channel: a question puts the task in `input_required` and waits for
/// `tasks/update` to answer it (or for a cancellation).
pub(super) struct TaskTalk {
    store: TaskStore,
    id: String,
    /// Answers the record held when the run started (a run that resumes).
    answers: Answers,
    /// What the task's client declared it takes.
    offers: Offers,
    signal: Cancellation,
    /// When the executor stops (a Lambda worker's invocation); `None`: it waits as long as
    /// the task lives.
    deadline: Option<Instant>,
    /// Whether the run parked the task at its deadline.
    parked: AtomicBool,
}

impl std::fmt::Debug for TaskTalk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTalk").field("id", &self.id).finish()
    }
}

impl TaskTalk {
    pub(super) fn new(
        store: TaskStore,
        id: &str,
        answers: Answers,
        offers: Offers,
        signal: Cancellation,
        deadline: Option<Instant>,
    ) -> Self {
        Self {
            store,
            id: id.to_owned(),
            answers,
            offers,
            signal,
            deadline,
            parked: AtomicBool::new(false),
        }
    }

    /// Whether the run stopped waiting for the user at its deadline (the task is parked).
    pub(super) fn parked(&self) -> bool {
        self.parked.load(Ordering::Relaxed)
    }

    /// The answer to question `seq`, asking it if the record has none yet.
    async fn answer(&self, seq: u32, question: Question) -> Result<Value, TalkError> {
        if let Some(answer) = self.answers.get(seq) {
            return Ok(answer.clone());
        }
        // The task's client did not declare it: the tool may do without, or fail `unsupported`.
        if !self.offers.takes(question.needs()) {
            return Err(question.needs().not_carried());
        }
        if seq as usize >= MAX_ASKS {
            return Err(TalkError::Invalid(format!(
                "a call asks at most {MAX_ASKS} questions"
            )));
        }
        let tasks = &self.store;
        let key = question.key(seq);
        let request = request_of(&question).map_err(TalkError::Invalid)?;
        let request =
            serde_json::to_value(request).map_err(|e| TalkError::Invalid(e.to_string()))?;
        let unavailable = |e: StateError| TalkError::Unavailable(e.0);
        let shared_key = AtomicBool::new(false);
        tasks
            .update(&self.id, |r| {
                if r.status.is_terminal() || r.answers.get(seq).is_some() {
                    return false;
                }
                if r.inputs.get(&key).is_some_and(|(s, _)| *s != seq) {
                    shared_key.store(true, Ordering::Relaxed);
                    return false;
                }
                r.status = TaskStatus::InputRequired;
                r.message = Some("Waiting for the user".into());
                r.inputs.insert(key.clone(), (seq, request.clone()));
                true
            })
            .await
            .map_err(unavailable)?;
        if shared_key.load(Ordering::Relaxed) {
            return Err(TalkError::Invalid(format!(
                "two questions asked at once share the key `{key}`"
            )));
        }
        loop {
            tokio::select! {
                () = self.signal.cancelled() => return Err(TalkError::Cancelled),
                () = tokio::time::sleep(WATCH) => {}
            }
            let Some((record, _)) = tasks.read(&self.id).await.map_err(unavailable)? else {
                return Err(TalkError::Cancelled);
            };
            if record.status == TaskStatus::Cancelled {
                return Err(TalkError::Cancelled);
            }
            if let Some(answer) = record.answers.get(seq) {
                return Ok(answer.clone());
            }
            // The executor's time is nearly up: park the task, unless the answer came first.
            if self
                .deadline
                .is_some_and(|d| Instant::now() + WATCH * 2 >= d)
            {
                let parked = tasks
                    .update(&self.id, |r| {
                        if r.status.is_terminal() || r.answers.get(seq).is_some() {
                            return false;
                        }
                        r.parked = true;
                        true
                    })
                    .await
                    .map_err(unavailable)?;
                if parked.is_some() {
                    self.parked.store(true, Ordering::Relaxed);
                    return Err(TalkError::Parked);
                }
            }
        }
    }
}

impl Talk for TaskTalk {
    fn protocol(&self) -> &'static str {
        "mcp"
    }

    fn ask(&self, ask: Ask, seq: u32) -> TalkFuture<'_, Result<Choice, TalkError>> {
        Box::pin(async move {
            let choices = ask.choices.clone();
            let default = ask.default;
            let answer = self.answer(seq, Question::Choice(ask)).await?;
            super::questions::choice_of(&answer, &choices, default)
        })
    }

    fn fill(&self, form: Form, seq: u32) -> TalkFuture<'_, Result<Filled, TalkError>> {
        Box::pin(async move {
            let answer = self.answer(seq, Question::Form(form)).await?;
            Ok(super::questions::filled_of(&answer))
        })
    }

    fn sample(&self, sample: Sample, seq: u32) -> TalkFuture<'_, Result<Sampled, TalkError>> {
        Box::pin(async move { sampled_of(&self.answer(seq, Question::Sample(sample)).await?) })
    }

    fn roots(&self, seq: u32) -> TalkFuture<'_, Result<Vec<Root>, TalkError>> {
        Box::pin(async move { roots_of(&self.answer(seq, Question::Roots).await?) })
    }
}
