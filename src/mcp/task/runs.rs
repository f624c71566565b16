//! A task's run: the runner's handler of MCP task runs ([`super::TASK_RUN`]), and the run
//! itself, from its record to its outcome written there. A run ends done, parked (waiting for
//! the user past its executor's deadline), or retried; given up, the task fails with a message
//! its client sees.

use super::store::{Record, TASK_TTL};
use super::talk::TaskTalk;
use super::{NO_ROOM, TASK_RUN, Tasks};
use crate::mcp::questions::Carried;
use crate::server::{BoxFuture, CallContext};
use crate::state::share::Full;
use crate::work::{Handler, Outcome, Run, Work};
use oxp_lambda_core::durable::Item;
use oxp_lambda_core::invoke::{Outcome as Answer, Rejection, Target};
use oxp_lambda_core::refusal::ErrorClass;
use oxp_lambda_core::tool::Cancellation;
use rmcp::model::TaskStatus;
use serde_json::Value;
use std::sync::Arc;

/// The runner's handler of task runs.
struct TaskRuns(std::sync::Weak<Tasks>);

/// Registers the handler of `tasks`' runs with `runner`.
pub(in crate::mcp) fn register(tasks: &Arc<Tasks>, runner: &crate::work::Runner) {
    runner.register(TASK_RUN, Arc::new(TaskRuns(Arc::downgrade(tasks))));
}

impl Handler for TaskRuns {
    fn run<'a>(&'a self, _: &'a str, work: &'a Work, run: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(tasks) = self.0.upgrade() else {
                return Outcome::Retry("the server is shutting down".into());
            };
            let Some(id) = work.body.get("task").and_then(Value::as_str) else {
                return Outcome::Done;
            };
            let traceparent = work
                .body
                .get("traceparent")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let ended = tokio::select! {
                ended = tasks.run(id, traceparent, run.deadline, work.interrupted) => ended,
                // Let go (the process stops) or taken over: the run ends here.
                () = run.stop.cancelled() => return Outcome::Retry("stopped".into()),
            };
            match ended {
                // Its record, the result in it, counts in its caller's share while it lives.
                RunEnd::Finished => Outcome::Kept(std::time::SystemTime::now() + TASK_TTL),
                // No record counts: its slot is given back at once.
                RunEnd::Gone => Outcome::Done,
                RunEnd::Parked => Outcome::Park,
                RunEnd::Unavailable(why) => Outcome::Retry(why),
            }
        })
    }

    fn give_up<'a>(
        &'a self,
        _: &'a str,
        work: &'a Work,
        reason: &'a str,
        _: Option<&'a [u8]>,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let (Some(tasks), Some(id)) = (
                self.0.upgrade(),
                work.body.get("task").and_then(Value::as_str),
            ) else {
                return false;
            };
            tracing::error!(target: "oxp::mcp", reason, "task run given up");
            if let Err(e) = tasks
                .fail(id, "The server could not run the task; call the tool again")
                .await
            {
                tracing::error!(target: "oxp::mcp", error = %e, "task outcome not recorded");
            }
            false
        })
    }
}

/// How a run ended in this process.
#[derive(Debug, PartialEq, Eq)]
enum RunEnd {
    /// The outcome is recorded (or there was nothing to run).
    Finished,
    /// Its record is gone (never written, or expired): nothing of it is kept.
    Gone,
    /// It waits for the user past this executor's deadline: the answer sends it again.
    Parked,
    /// Its record could not be read: the run may work later.
    Unavailable(String),
}

impl Tasks {
    /// Runs task `id`'s tool to its end, recording the outcome, unless it must wait for the
    /// user past `deadline` (this executor's end: a Lambda worker's invocation).
    async fn run(
        self: &Arc<Self>,
        id: &str,
        traceparent: Option<String>,
        deadline: Option<std::time::Instant>,
        interrupted: bool,
    ) -> RunEnd {
        let found = match self.handed(id) {
            Some(handed) => Ok(Some(handed)),
            None => self.store.read(id).await,
        };
        let (record, read) = match found {
            Ok(Some(found)) => found,
            Ok(None) => return RunEnd::Gone,
            Err(e) => return RunEnd::Unavailable(e.0),
        };
        // The outcome is written over the record as read here (read again only if the run
        // changed it meanwhile: a question, a status message, a cancellation).
        let known = (record.clone(), read);
        // A run happens at least once: a task already ended is not run again.
        if record.status.is_terminal() {
            return RunEnd::Finished;
        }
        // Not served here (a deployment that dropped it shares the table): the task ends
        // failed, not working until it expires.
        let Some(tool) = self.tools.get(&record.tool).cloned() else {
            return self
                .failed(id, "The tool is no longer served; list the tools again")
                .await;
        };
        // Its last run ended unfinished (the process died or stopped): run again only what
        // may run twice; anything else ends with a message the client sees.
        if interrupted && !record.parked && !tool.may_run_again() {
            let message = "The server stopped while the task ran; call the tool again";
            return self.failed(id, message).await;
        }
        let (signal, _registered) = self.running.start(None, "task", id);
        let talk = Arc::new(Carried(TaskTalk::new(
            (self.store.clone(), self.questions.clone()),
            (id, &record.owner),
            record.offers,
            signal.clone(),
            deadline,
        )));
        let context = CallContext {
            principal: record.principal.clone(),
            deadline,
            traceparent,
        };
        let mut call = context.call(
            "mcp",
            Target::Tool(tool),
            Value::Object(record.arguments.clone()),
        );
        call.user_id = call.principal.subject.clone();
        // Counted where the task was made (a call the caller was told is accepted never ends
        // by its caller's rate), or by the call it detached from: none of its runs again.
        call.rate_counted = true;
        call.cancellation = Some(signal.clone());
        call.talk = Some(talk.clone());
        let watch = self.watch_cancel(id, signal);
        let answer = self.invoker.invoke(call).await;
        drop(watch);
        if talk.parked() {
            return RunEnd::Parked;
        }
        // The tool crashed (a panic, class `internal`): SEP-2663 keeps `failed` for such
        // failures of the server, a tool's own error being a completed task with `isError`. The
        // panic's text stays in the log.
        if let Ok(outcome) = &answer
            && outcome.error_class() == Some(ErrorClass::Internal)
        {
            if let Err(e) = self.fail(id, "The tool failed unexpectedly").await {
                tracing::error!(target: "oxp::mcp", error = %e, "task outcome not recorded");
            }
            return RunEnd::Finished;
        }
        self.complete(id, known, answer).await
    }

    /// A cancellation written by another process reaches task `id`'s run (its `signal`)
    /// through the record, while the returned watch is held.
    fn watch_cancel(
        self: &Arc<Self>,
        id: &str,
        signal: Cancellation,
    ) -> crate::work::watch::Watching {
        let tasks = Arc::downgrade(self);
        let id = id.to_owned();
        crate::work::watch::cancel_when(signal, false, move || {
            let (tasks, id) = (tasks.clone(), id.clone());
            async move {
                let Some(tasks) = tasks.upgrade() else {
                    return false;
                };
                matches!(tasks.store.read(&id).await, Ok(Some((r, _))) if r.status == TaskStatus::Cancelled)
            }
        })
    }

    /// Task `id` completed with `answer`: the outcome is the record's (`known` as the run read
    /// it), written before anyone is told (tasks/get reads it), the arguments no longer kept.
    async fn complete(
        &self,
        id: &str,
        known: (Record, Item),
        answer: Result<Answer, Rejection>,
    ) -> RunEnd {
        let result = crate::mcp::result::from_invoke(answer, crate::mcp::result::Revision::ALL);
        let room = self.runner.room(Some(&known.0.owner));
        let kept = match self.store.keep(&result, room).await {
            Ok(kept) => kept,
            // Its caller's kept results leave no room for it: the task fails, saying why.
            Err(Full::Caller) => return self.failed(id, NO_ROOM).await,
            Err(Full::Unavailable(e)) => return RunEnd::Unavailable(e),
        };
        let written = self
            .store
            .update_from(id, Some(known), |r| {
                let ended = r.end(TaskStatus::Completed, None);
                if ended {
                    r.kept = Some(kept.clone());
                }
                ended
            })
            .await;
        match written {
            Ok(Some(_)) => RunEnd::Finished,
            // The task ended otherwise meanwhile (cancelled): no record names the result.
            Ok(None) => {
                self.store.unkeep(&kept).await;
                RunEnd::Finished
            }
            Err(e) => RunEnd::Unavailable(e.0),
        }
    }

    /// Task `id`'s run ends with the task failed, saying `message`: finished once written.
    async fn failed(&self, id: &str, message: &str) -> RunEnd {
        match self.fail(id, message).await {
            Ok(()) => RunEnd::Finished,
            Err(e) => RunEnd::Unavailable(e.0),
        }
    }
}
