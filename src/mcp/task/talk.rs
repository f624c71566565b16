//! A task's talk-back channel: a question is one of the one question service's
//! ([`crate::work::questions`], asked once per task and question number, for the task's owner),
//! listed in the task's record so that `tasks/get` shows it and the task reads
//! `input_required`; `tasks/update` answers it there and the run, woken, goes on. Questions
//! asked at once are open at once, each under its key, and answered in any order; the task
//! works again when none is open. In Lambda a worker cannot wait past its invocation: at its
//! deadline the task is parked (no run holds it) and the answer sends the run to the queue
//! again, whose run finds every answer given so far in the service.

use super::store::{TASK_TTL, TaskStore};
use crate::mcp::declared::Offers;
use crate::mcp::questions::{Answers, Carrier, Question, may_ask, request_of, shared_key};
use crate::work::Questions;
use crate::work::questions::Refused as NotAnswered;
use crate::work::questions::Waited;
use oxp_lambda_core::durable::StateError;
use oxp_lambda_core::talk::{TalkError, TalkFuture};
use oxp_lambda_core::tool::Cancellation;
use rmcp::model::TaskStatus;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The key the question service knows question `seq` of task `id` by.
pub(super) fn task_question(id: &str, seq: u32) -> String {
    format!("task:{id}:{seq}")
}

/// A task's talk-back channel.
pub(super) struct TaskTalk {
    store: TaskStore,
    questions: Arc<Questions>,
    id: String,
    /// The task's owner (as its record names it): the only caller whose answers count.
    owner: String,
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
        (store, questions): (TaskStore, Arc<Questions>),
        (id, owner): (&str, &str),
        offers: Offers,
        signal: Cancellation,
        deadline: Option<Instant>,
    ) -> Self {
        Self {
            store,
            questions,
            id: id.to_owned(),
            owner: owner.to_owned(),
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

    /// Question `seq` (`key`, asking `request`) open in the task's record: the task's status
    /// says the user is asked. Two questions asked at once may not share a key.
    async fn open(&self, seq: u32, key: &str, request: Value) -> Result<(), TalkError> {
        let shared = AtomicBool::new(false);
        self.store
            .update(&self.id, |r| {
                if r.status.is_terminal() {
                    return false;
                }
                if r.inputs.get(key).is_some_and(|(s, _)| *s != seq) {
                    shared.store(true, Ordering::Relaxed);
                    return false;
                }
                r.status = TaskStatus::InputRequired;
                r.message = Some("Waiting for the user".into());
                r.inputs.insert(key.to_owned(), (seq, request.clone()));
                true
            })
            .await
            .map_err(|e| TalkError::Unavailable(e.0))?;
        if shared.load(Ordering::Relaxed) {
            return Err(shared_key(key));
        }
        Ok(())
    }

    /// Parks the task, only while question `key` is still open in its record: `tasks/update`
    /// takes it out in the same compare-and-swap that reads `parked` to send the run again.
    /// Whether it parked (not: answered meanwhile).
    async fn park(&self, key: &str) -> Result<bool, TalkError> {
        let parked = self
            .store
            .update(&self.id, |r| {
                if r.status.is_terminal() || !r.inputs.contains_key(key) {
                    return false;
                }
                r.parked = true;
                true
            })
            .await
            .map_err(|e| TalkError::Unavailable(e.0))?;
        Ok(parked.is_some())
    }

    /// The answer to question `seq`, asking it unless it was answered (a run that resumes).
    async fn answer(&self, seq: u32, question: Question) -> Result<Value, TalkError> {
        let unavailable = |e: StateError| TalkError::Unavailable(e.0);
        let call = task_question(&self.id, seq);
        if let Some(answer) = self.questions.answered(&call).await.map_err(unavailable)? {
            return Ok(answer);
        }
        // The task's client did not declare it: the tool may do without, or fail `unsupported`.
        if !self.offers.takes(question.needs()) {
            return Err(question.needs().not_carried());
        }
        may_ask(seq)?;
        let key = question.key(seq);
        let request = request_of(&question).map_err(TalkError::Invalid)?;
        let request =
            serde_json::to_value(request).map_err(|e| TalkError::Invalid(e.to_string()))?;
        let asked = self
            .questions
            .ask_once(&call, Some(&self.owner), json!({"key": key}), TASK_TTL)
            .await
            .map_err(unavailable)?;
        // Expected before the client is told: an answer arriving first is handed to the wait.
        let waiting = self.questions.expect(&asked.token, asked.written);
        self.open(seq, &key, request).await?;
        // Past the executor's time (less a margin to park in), the task parks.
        let until = crate::work::questions::park_at(self.deadline)
            .unwrap_or_else(|| Instant::now() + TASK_TTL);
        let waited = waiting
            .wait(until.into(), None, self.signal.cancelled())
            .await;
        match waited {
            Ok(answer) => return Ok(answer),
            Err(Waited::Cancelled | Waited::Gone) => return Err(TalkError::Cancelled),
            Err(Waited::Unavailable(e)) => return Err(unavailable(e)),
            Err(Waited::Until) if self.deadline.is_none() => return Err(TalkError::TimedOut),
            Err(Waited::Until) => {}
        }
        if self.park(&key).await? {
            self.parked.store(true, Ordering::Relaxed);
            return Err(TalkError::Parked);
        }
        // Answered meanwhile: the answer is in the service.
        self.questions
            .answered(&call)
            .await
            .map_err(unavailable)?
            .ok_or(TalkError::Cancelled)
    }
}

impl Carrier for TaskTalk {
    fn carry(&self, seq: u32, question: Question) -> TalkFuture<'_, Result<Value, TalkError>> {
        Box::pin(self.answer(seq, question))
    }
}

/// Records `answers` (given before the call became task `id`) as its questions' answers.
pub(super) async fn seed(
    questions: &Questions,
    id: &str,
    owner: &str,
    answers: &Answers,
) -> Result<(), StateError> {
    for seq in 0..answers.slots() as u32 {
        let Some(answer) = answers.get(seq) else {
            continue;
        };
        let call = task_question(id, seq);
        let asked = questions
            .ask_once(&call, Some(owner), Value::Null, TASK_TTL)
            .await?;
        let taken = questions
            .answer(&asked.token, Some(owner), |_| true, answer.clone())
            .await;
        if taken == Err(NotAnswered::Unavailable) {
            return Err(StateError("an answer could not be recorded".into()));
        }
    }
    Ok(())
}
