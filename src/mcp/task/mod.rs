//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) at 2026-07-28: a client
//! that declares it and calls a long-running tool (annotated `long_running`, `Demo.Sleep`) gets
//! `resultType: "task"` at once, once the task is written to the state store; the tool runs
//! detached, and `tasks/get` answers from the store (working, input_required with the question,
//! completed with the `CallToolResult`, failed, cancelled). `tasks/update` carries the answer to
//! a question the tool asked (`ctx.ask`, `ctx.fill`; the one question service's, in
//! `talk.rs`), `tasks/cancel` fires the tool's cancellation. Tasks are the caller's:
//! another caller's id is an unknown task.
//!
//! The record is the truth: a process that did not start a task answers for it, and a
//! cancellation reaches the run through the record (polled) as well as directly. A task's run
//! is work of the one runner ([`crate::work`], kind [`TASK_RUN`]): run at once where the task
//! was created (in Lambda by the worker role), parked while it waits for an answer past its
//! executor's deadline, and taken over when its process dies or stops: run again when the tool
//! may run twice ([`RegisteredTool::may_run_again`]), else failed with a message. Never
//! `working` forever, never silent.
//!
//! The whole of tasks is this folder: here, creation, `tasks/get` and `tasks/cancel`;
//! `store.rs` the task record; `runs.rs` a task's run, from its record to its outcome written
//! there, as the runner's work; `talk.rs` the questions a task's tool asks; `update.rs`
//! `tasks/update`, their answers.

mod runs;
pub(super) use runs::register;
mod store;
mod talk;
mod update;

use crate::mcp::declared::Offers;
use crate::mcp::questions::Answers;
use crate::server::CallContext;
use crate::work::Questions;
use crate::work::{Refused, Runner};
use oxp_lambda_core::durable::{Item, StateError};
use oxp_lambda_core::invoke::{Invoker, Rejection};
use oxp_lambda_core::registry::RegisteredTool;
use oxp_lambda_core::running::Running;
use rmcp::ErrorData;
use rmcp::model::{CreateTaskResult, DetailedTask, TaskStatus};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use store::{Record, TaskStore, now, owner_of};
use talk::seed;

/// The kind of work that runs a task (its body: `{"task": id, "traceparent": ...}`).
pub(crate) const TASK_RUN: &str = "mcp-task";

/// The work that runs task `id`.
fn work_id(id: &str) -> String {
    format!("task:{id}")
}

/// Most tasks created here and not yet begun whose records are handed to their runs.
const HANDED_MAX: usize = 1024;

/// The JSON-RPC error of a task refused because its caller has too many (an implementation
/// error code, in the range JSON-RPC leaves to servers).
const TOO_MANY_TASKS: i32 = -32005;
/// The failure of a task whose result its caller's room (`OXP_WORK_MAX_BYTES_PER_CALLER`) has
/// no space for, while its earlier tasks' results are kept.
const NO_ROOM: &str = "The result is larger than the room your earlier tasks' results leave while they are kept (an hour); call the tool again later";

fn unknown_task() -> ErrorData {
    ErrorData::invalid_params("Unknown task", None)
}

fn unavailable(e: StateError) -> ErrorData {
    tracing::warn!(target: "oxp::mcp", error = %e, "task state unavailable");
    ErrorData::internal_error("The server cannot read its tasks now", None)
}

/// The tasks of `/mcp`.
pub(crate) struct Tasks {
    store: TaskStore,
    /// Where the tasks' questions wait for their answers.
    questions: Arc<Questions>,
    invoker: Arc<Invoker>,
    /// The tools a task may run, by listing name.
    tools: HashMap<String, Arc<RegisteredTool>>,
    running: Arc<Running>,
    /// Runs the tasks (here, or in Lambda's worker role) and takes them over.
    runner: Arc<Runner>,
    /// Tasks created here whose runs begin here, with their records as written: the run
    /// starts from it rather than reading it back (one store call fewer per task).
    handed: std::sync::Mutex<HashMap<String, (Record, Item)>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").finish_non_exhaustive()
    }
}

impl Tasks {
    /// Counts a task of `caller` against its rate where the task is made (its runs are not
    /// counted again): over it, no task is made.
    pub(crate) fn count(&self, caller: Option<&str>) -> Result<(), Rejection> {
        self.invoker.count_call(caller)
    }

    /// The tasks over the store of `questions`, their runs `runner`'s work (the handler of
    /// [`TASK_RUN`] is registered with it by [`runs::register`]).
    pub(crate) fn new(
        questions: Arc<Questions>,
        invoker: Arc<Invoker>,
        tools: &[Arc<RegisteredTool>],
        runner: Arc<Runner>,
    ) -> Arc<Self> {
        Arc::new(Self {
            runner,
            store: TaskStore::new(questions.store().clone()),
            questions,
            invoker,
            tools: tools
                .iter()
                .map(|t| (t.listing_name.clone(), t.clone()))
                .collect(),
            running: Arc::default(),
            handed: std::sync::Mutex::default(),
        })
    }

    /// The record of task `id` as created here, once (its run's).
    fn handed(&self, id: &str) -> Option<(Record, Item)> {
        self.handed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
    }

    /// Creates a task for `tool` with `arguments`, durably, and starts its run here (or in
    /// the worker); `answers` are those its questions had before it became a task. The
    /// arguments are checked first (invalid ones are never kept), and the caller's share of
    /// work bounds how many tasks it may have running.
    pub(crate) async fn create(
        self: &Arc<Self>,
        context: CallContext,
        tool: &str,
        arguments: Map<String, Value>,
        answers: Answers,
        offers: Offers,
    ) -> Result<CreateTaskResult, ErrorData> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let created = now();
        let record = Record {
            owner: owner_of(context.principal.subject.as_deref()),
            principal: context.principal.clone(),
            tool: tool.to_owned(),
            arguments,
            status: TaskStatus::Working,
            message: Some("The tool is running".into()),
            created: created.clone(),
            updated: created,
            result: None,
            kept: None,
            error: None,
            inputs: BTreeMap::new(),
            parked: false,
            offers,
        };
        // Written before the answer, beside the work that runs it: a tasks/get anywhere finds
        // it. The answers its questions had are the task's first, where its runs read them.
        let first = async {
            let item = self
                .store
                .create(&id, &record)
                .await
                .map_err(|e| Refused::Unavailable(e.0))?;
            // Its run begins here once this is written: handed the record.
            if !self.runner.queued() {
                let mut handed = self.handed.lock().unwrap_or_else(|p| p.into_inner());
                if handed.len() < HANDED_MAX {
                    handed.insert(id.clone(), (record.clone(), item));
                }
            }
            seed(&self.questions, &id, &record.owner, &answers)
                .await
                .map_err(|e| Refused::Unavailable(e.0))
        };
        let body = json!({"task": id, "traceparent": context.traceparent});
        let kept = self
            .runner
            .submit_beside(TASK_RUN, &work_id(&id), Some(&record.owner), body, first)
            .await;
        match kept {
            Ok(_) => Ok(CreateTaskResult::new(record.task(&id))),
            Err(refused) => {
                self.handed(&id);
                self.store.forget(&id).await;
                Err(match refused {
                    Refused::CallerFull => ErrorData::new(
                        rmcp::model::ErrorCode(TOO_MANY_TASKS),
                        "Too many of your tasks and invocations are running or kept (a task counts until its result expires, an hour after it ends); try again later",
                        None,
                    ),
                    Refused::Unavailable(e) => {
                        tracing::error!(target: "oxp::mcp", error = %e, "task not started");
                        ErrorData::internal_error("The server cannot start the task now", None)
                    }
                })
            }
        }
    }

    /// The caller's task `id`.
    async fn owned(&self, subject: Option<&str>, id: &str) -> Result<Record, ErrorData> {
        if id.is_empty() || id.len() > 64 {
            return Err(unknown_task());
        }
        match self.store.read(id).await.map_err(unavailable)? {
            Some((record, _)) if record.owner == owner_of(subject) => Ok(record),
            _ => Err(unknown_task()),
        }
    }

    /// `tasks/get`.
    pub(crate) async fn get(
        &self,
        subject: Option<&str>,
        id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let record = self.owned(subject, id).await?;
        let record = self.store.with_result(record).await.map_err(unavailable)?;
        Ok(record.detailed(id))
    }

    /// Ends task `id` as failed with `message` (unless it already ended).
    async fn fail(&self, id: &str, message: &str) -> Result<(), StateError> {
        self.store
            .update(id, |r| {
                let ended = r.end(TaskStatus::Failed, Some(message.into()));
                if ended {
                    r.error = json!({"code": -32603, "message": message})
                        .as_object()
                        .cloned();
                }
                ended
            })
            .await?;
        Ok(())
    }

    /// `tasks/cancel`.
    pub(crate) async fn cancel(&self, subject: Option<&str>, id: &str) -> Result<(), ErrorData> {
        self.owned(subject, id).await?;
        self.store
            .update(id, |r| {
                r.end(
                    TaskStatus::Cancelled,
                    Some("Cancelled by the client".into()),
                )
            })
            .await
            .map_err(unavailable)?;
        // Here at once; elsewhere through the record.
        self.running.cancel(None, "task", id);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
