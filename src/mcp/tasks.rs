//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) at 2026-07-28: a client
//! that declares it and calls a long-running tool (annotated `long_running`, `Demo.Sleep`) gets
//! `resultType: "task"` at once, once the task is written to the state store; the tool runs
//! detached, and `tasks/get` answers from the store (working, input_required with the question,
//! completed with the `CallToolResult`, failed, cancelled). `tasks/update` carries the answer to
//! a question the tool asked (`ctx.ask`, `ctx.fill`), `tasks/cancel` fires the tool's
//! cancellation. Tasks are the caller's: another caller's id is an unknown task.
//!
//! The record is the truth: a process that did not start a task answers for it, a cancellation
//! reaches the run through the record (polled each second) as well as directly, and a task whose
//! run a restart ended is failed with a message, never forgotten.

use super::round_trip::{Question, choice_form, form_request, read_response};
use crate::server::CallContext;
use oxp_lambda_core::durable::{Item, StateError, StateStore};
use oxp_lambda_core::form::{Filled, Form};
use oxp_lambda_core::invoke::{Invoker, Target};
use oxp_lambda_core::principal::Principal;
use oxp_lambda_core::registry::RegisteredTool;
use oxp_lambda_core::running::Running;
use oxp_lambda_core::talk::{Ask, Choice, Talk, TalkError, TalkFuture};
use oxp_lambda_core::tool::Cancellation;
use rmcp::ErrorData;
use rmcp::model::{
    CreateTaskResult, DetailedTask, InputRequests, InputResponses, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

/// How long a task is kept after it is created (`ttlMs`).
pub(crate) const TASK_TTL: Duration = Duration::from_secs(3600);
/// The polling interval suggested to clients (`pollIntervalMs`).
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How often a run reads its record for a cancellation or an answer.
const WATCH: Duration = Duration::from_millis(250);
/// The partition of task records.
const TASKS: &str = "mcp-task";
/// The partition of tasks whose run has not ended (read after a restart).
const OPEN: &str = "mcp-task-open";
/// Most tasks failed in one page after a restart.
const PAGE: usize = 500;

/// A task as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// Hash of the caller's subject (empty without authentication).
    owner: String,
    /// The caller, to run the call as (the subject and its binding).
    principal: Principal,
    tool: String,
    arguments: Map<String, Value>,
    status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    created: String,
    updated: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<JsonObject>,
    /// The question the tool is waiting on: its key and request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<(String, Value)>,
    /// Answers to the tool's questions, in order.
    #[serde(default)]
    answers: Vec<Value>,
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// The hash a record names its owner by.
fn owner_of(subject: Option<&str>) -> String {
    let digest = Sha256::digest(subject.unwrap_or_default().as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn unknown_task() -> ErrorData {
    ErrorData::invalid_params("Unknown task", None)
}

fn unavailable(e: StateError) -> ErrorData {
    tracing::warn!(target: "oxp::mcp", error = %e, "task state unavailable");
    ErrorData::internal_error("The server cannot read its tasks now", None)
}

/// The tasks of `/mcp`.
pub(crate) struct Tasks {
    store: Arc<dyn StateStore>,
    invoker: Arc<Invoker>,
    /// The tools a task may run, by listing name.
    tools: HashMap<String, Arc<RegisteredTool>>,
    running: Arc<Running>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").finish_non_exhaustive()
    }
}

impl Tasks {
    pub(crate) fn new(
        store: Arc<dyn StateStore>,
        invoker: Arc<Invoker>,
        tools: &[Arc<RegisteredTool>],
    ) -> Self {
        Self {
            store,
            invoker,
            tools: tools
                .iter()
                .map(|t| (t.listing_name.clone(), t.clone()))
                .collect(),
            running: Arc::default(),
        }
    }

    async fn read(&self, id: &str) -> Result<Option<(Record, Vec<u8>)>, StateError> {
        let Some(item) = self.store.get(TASKS, id).await? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice(&item.value)
            .ok()
            .map(|record| (record, item.value)))
    }

    /// `change` applied to task `id` (compare-and-swap, retried); the record as written, or
    /// `None` when there is none or `change` declines.
    async fn update(
        &self,
        id: &str,
        change: impl Fn(&mut Record) -> bool,
    ) -> Result<Option<Record>, StateError> {
        for _ in 0..16 {
            let Some((mut record, old)) = self.read(id).await? else {
                return Ok(None);
            };
            if !change(&mut record) {
                return Ok(None);
            }
            record.updated = now();
            let bytes = serde_json::to_vec(&record).expect("records serialize");
            let item = Item::new(bytes, Some(SystemTime::now() + TASK_TTL));
            if self.store.put_if(TASKS, id, item, Some(&old)).await? {
                return Ok(Some(record));
            }
        }
        Err(StateError("a task is updated too often at once".into()))
    }

    /// Creates a task for `tool` with `arguments`, durably, and starts its run here.
    pub(crate) async fn create(
        self: &Arc<Self>,
        context: CallContext,
        tool: &str,
        arguments: Map<String, Value>,
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
            error: None,
            input: None,
            answers: Vec::new(),
        };
        let expires = Some(SystemTime::now() + TASK_TTL);
        let bytes = serde_json::to_vec(&record).expect("records serialize");
        // Written before the answer: a tasks/get anywhere finds it.
        self.store
            .put(OPEN, &id, Item::new(Vec::new(), expires))
            .await
            .map_err(unavailable)?;
        self.store
            .put_if(TASKS, &id, Item::new(bytes, expires), None)
            .await
            .map_err(unavailable)?;
        let this = self.clone();
        let run_id = id.clone();
        tokio::spawn(async move { this.run(&run_id, context.traceparent).await });
        Ok(CreateTaskResult::new(task_of(&id, &record)))
    }

    /// Runs task `id`'s tool to its end, recording the outcome.
    async fn run(self: &Arc<Self>, id: &str, traceparent: Option<String>) {
        let Ok(Some((record, _))) = self.read(id).await else {
            return;
        };
        let Some(tool) = self.tools.get(&record.tool).cloned() else {
            return;
        };
        let (signal, _registered) = self.running.start(None, "task", id);
        let talk = Arc::new(TaskTalk {
            tasks: Arc::downgrade(self),
            id: id.to_owned(),
            answers: record.answers.clone(),
            signal: signal.clone(),
        });
        let context = CallContext {
            principal: record.principal.clone(),
            deadline: None,
            traceparent,
        };
        let mut call = context.call(
            "mcp",
            Target::Tool(tool),
            Value::Object(record.arguments.clone()),
        );
        call.user_id = call.principal.subject.clone();
        call.cancellation = Some(signal.clone());
        call.talk = Some(talk);
        // A cancellation written by another process reaches the run through the record.
        let watch = {
            let tasks = Arc::downgrade(self);
            let id = id.to_owned();
            let signal = signal.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(WATCH).await;
                    let Some(tasks) = tasks.upgrade() else { return };
                    if let Ok(Some((r, _))) = tasks.read(&id).await
                        && r.status == TaskStatus::Cancelled
                    {
                        signal.cancel();
                        return;
                    }
                }
            })
        };
        let answer = self.invoker.invoke(call).await;
        watch.abort();
        let result = serde_json::to_value(super::result::from_invoke(answer))
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        let written = self
            .update(id, |r| {
                if r.status.is_terminal() {
                    return false;
                }
                r.status = TaskStatus::Completed;
                r.message = None;
                r.input = None;
                r.result = Some(result.clone());
                true
            })
            .await;
        if let Err(e) = written {
            tracing::error!(target: "oxp::mcp", error = %e, "task outcome not recorded");
        }
        let _ = self.store.delete(OPEN, id).await;
    }

    /// The caller's task `id`.
    async fn owned(&self, subject: Option<&str>, id: &str) -> Result<Record, ErrorData> {
        if id.is_empty() || id.len() > 64 {
            return Err(unknown_task());
        }
        match self.read(id).await.map_err(unavailable)? {
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
        let payload = match record.status {
            TaskStatus::InputRequired => {
                let mut requests = InputRequests::new();
                if let Some((key, request)) = &record.input
                    && let Ok(request) = serde_json::from_value(request.clone())
                {
                    requests.insert(key.clone(), request);
                }
                TaskPayload::InputRequired {
                    input_requests: requests,
                }
            }
            TaskStatus::Completed => TaskPayload::Completed {
                result: record.result.clone().unwrap_or_default(),
            },
            TaskStatus::Failed => TaskPayload::Failed {
                error: record.error.clone().unwrap_or_default(),
            },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        Ok(DetailedTask::new(task_of(id, &record), payload))
    }

    /// `tasks/update`: the answer to the question the task waits on (other keys are ignored).
    pub(crate) async fn answer(
        &self,
        subject: Option<&str>,
        id: &str,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let record = self.owned(subject, id).await?;
        let Some((key, _)) = &record.input else {
            return Ok(());
        };
        let Some(response) = responses.get(key) else {
            return Ok(());
        };
        let response = read_response(response)?;
        let key = key.clone();
        self.update(id, |r| {
            if r.status != TaskStatus::InputRequired
                || r.input.as_ref().map(|(k, _)| k) != Some(&key)
            {
                return false;
            }
            r.answers.push(response.clone());
            r.input = None;
            r.status = TaskStatus::Working;
            r.message = Some("The tool is running".into());
            true
        })
        .await
        .map_err(unavailable)?;
        Ok(())
    }

    /// `tasks/cancel`.
    pub(crate) async fn cancel(&self, subject: Option<&str>, id: &str) -> Result<(), ErrorData> {
        self.owned(subject, id).await?;
        self.update(id, |r| {
            if r.status.is_terminal() {
                return false;
            }
            r.status = TaskStatus::Cancelled;
            r.message = Some("Cancelled by the client".into());
            r.input = None;
            true
        })
        .await
        .map_err(unavailable)?;
        // Here at once; elsewhere through the record.
        self.running.cancel(None, "task", id);
        let _ = self.store.delete(OPEN, id).await;
        Ok(())
    }

    /// After a restart: every task whose run had not ended is failed with a message (its run
    /// is gone with the process). How many.
    pub(crate) async fn end_interrupted(&self) -> Result<usize, StateError> {
        let mut ended = 0;
        loop {
            let page = self.store.list(OPEN, None, PAGE).await?;
            for (id, _) in &page {
                self.update(id, |r| {
                    if r.status.is_terminal() {
                        return false;
                    }
                    r.status = TaskStatus::Failed;
                    r.message = Some("The server restarted while the task ran; call the tool again".into());
                    r.input = None;
                    r.error = json!({"code": -32603, "message": "The server restarted while the task ran"})
                        .as_object()
                        .cloned();
                    true
                })
                .await?;
                self.store.delete(OPEN, id).await?;
                ended += 1;
            }
            if page.len() < PAGE {
                return Ok(ended);
            }
        }
    }
}

/// The wire `Task` of a record.
fn task_of(id: &str, record: &Record) -> Task {
    let mut task = Task::new(id, record.status, &record.created, &record.updated)
        .with_ttl_ms(TASK_TTL.as_millis() as u64)
        .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64);
    task.status_message = record.message.clone();
    task
}

/// A task's talk-back channel: a question puts the task in `input_required` and waits for
/// `tasks/update` to answer it (or for a cancellation).
struct TaskTalk {
    tasks: Weak<Tasks>,
    id: String,
    /// Answers the record held when the run started (a run that resumes).
    answers: Vec<Value>,
    signal: Cancellation,
}

impl std::fmt::Debug for TaskTalk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTalk").field("id", &self.id).finish()
    }
}

impl TaskTalk {
    /// The answer to question `seq`, asking it if the record has none yet.
    async fn answer(&self, seq: u32, question: Question) -> Result<Value, TalkError> {
        if let Some(answer) = self.answers.get(seq as usize) {
            return Ok(answer.clone());
        }
        let tasks = self.tasks.upgrade().ok_or(TalkError::Cancelled)?;
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
