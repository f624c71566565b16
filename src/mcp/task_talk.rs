//! A task's talk-back channel: a question puts the task in `input_required` and waits for
//! `tasks/update` to answer it (or for a cancellation). In Lambda a worker cannot wait past its
//! invocation: at its deadline the task is parked (no run holds it) and the answer sends the
//! run to the queue again, which replays the answers given so far.

use super::round_trip::{Question, choice_form, form_request};
use super::task_store::{TaskStore, WATCH};
use oxp_lambda_core::durable::StateError;
use oxp_lambda_core::form::{Filled, Form};
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
    answers: Vec<Value>,
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
        answers: Vec<Value>,
        signal: Cancellation,
        deadline: Option<Instant>,
    ) -> Self {
        Self {
            store,
            id: id.to_owned(),
            answers,
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
        if let Some(answer) = self.answers.get(seq as usize) {
            return Ok(answer.clone());
        }
        let tasks = &self.store;
        let key = question.key(seq);
        let request = match &question {
            Question::Choice(ask) => choice_form(ask),
            Question::Form(form) => form_request(form),
        }
        .map_err(TalkError::Invalid)?;
        let request =
            serde_json::to_value(request).map_err(|e| TalkError::Invalid(e.to_string()))?;
        let unavailable = |e: StateError| TalkError::Unavailable(e.0);
        tasks
            .update(&self.id, |r| {
                if r.status.is_terminal() || r.answers.len() != seq as usize {
                    return false;
                }
                r.status = TaskStatus::InputRequired;
                r.message = Some("Waiting for the user".into());
                r.input = Some((key.clone(), request.clone()));
                true
            })
            .await
            .map_err(unavailable)?;
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
            if let Some(answer) = record.answers.get(seq as usize) {
                return Ok(answer.clone());
            }
            // The executor's time is nearly up: park the task, unless the answer came first.
            if self
                .deadline
                .is_some_and(|d| Instant::now() + WATCH * 2 >= d)
            {
                let parked = tasks
                    .update(&self.id, |r| {
                        if r.status.is_terminal() || r.answers.len() > seq as usize {
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
            super::round_trip::choice_of(&answer, &choices, default)
        })
    }

    fn fill(&self, form: Form, seq: u32) -> TalkFuture<'_, Result<Filled, TalkError>> {
        Box::pin(async move {
            let answer = self.answer(seq, Question::Form(form)).await?;
            Ok(super::round_trip::filled_of(&answer))
        })
    }
}
