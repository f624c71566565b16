//! Task records in the state store: one item per task (compare-and-swap updates, kept an hour).
//! A task's run is work of the runner ([`crate::work`]), which takes it over when its process
//! dies.

use crate::mcp::declared::Offers;
use crate::state::large::{Kept, Room};
use crate::state::record::Records;
use crate::state::share::Full;
use oxp_lambda_core::durable::{Item, StateError, StateStore};
use oxp_lambda_core::principal::Principal;
use rmcp::model::{DetailedTask, InputRequests, JsonObject, Task, TaskPayload, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The polling interval suggested to clients (`pollIntervalMs`).
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How long a task is kept after it is created (`ttlMs`).
pub(crate) const TASK_TTL: Duration = Duration::from_secs(3600);
/// The partition of task records.
const TASKS: &str = "mcp-task";

/// A task as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Record {
    /// Hash of the caller's subject (empty without authentication).
    pub(super) owner: String,
    /// The caller, to run the call as (the subject and its binding).
    pub(super) principal: Principal,
    pub(super) tool: String,
    pub(super) arguments: Map<String, Value>,
    pub(super) status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<String>,
    pub(super) created: String,
    pub(super) updated: String,
    /// The result (a record of an earlier version; now kept in `kept`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) result: Option<JsonObject>,
    /// The result (a `CallToolResult`), kept in the record or, when large (content may reach
    /// 3 MiB), in parts beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) kept: Option<Kept>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<JsonObject>,
    /// The questions the tool is waiting on, by key: each one's number and request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) inputs: BTreeMap<String, (u32, Value)>,
    /// No run holds the task: its worker's time ran out while it waited for the user (in
    /// Lambda); the answer sends the run to the queue again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) parked: bool,
    /// What the client that created it declared it takes (a record of an earlier version:
    /// forms only).
    #[serde(default = "Offers::forms")]
    pub(super) offers: Offers,
}

impl crate::state::record::Record for Record {}

impl Record {
    /// Ends the task as `status`, with `message` for `tasks/get`; its questions and arguments
    /// are no longer kept. Whether it changed (a task that ended already stays as it ended).
    pub(super) fn end(&mut self, status: TaskStatus, message: Option<String>) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        self.status = status;
        self.message = message;
        self.inputs.clear();
        self.arguments.clear();
        true
    }

    /// The wire `Task` of the record, as task `id`.
    pub(super) fn task(&self, id: &str) -> Task {
        let mut task = Task::new(id, self.status, &self.created, &self.updated)
            .with_ttl_ms(TASK_TTL.as_millis() as u64)
            .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64);
        task.status_message = self.message.clone();
        task
    }

    /// What `tasks/get` answers of it: the task and what its status carries (the open
    /// questions, the result, the error).
    pub(super) fn detailed(&self, id: &str) -> DetailedTask {
        let payload = match self.status {
            TaskStatus::InputRequired => {
                let mut requests = InputRequests::new();
                for (key, (_, request)) in &self.inputs {
                    if let Ok(request) = serde_json::from_value(request.clone()) {
                        requests.insert(key.clone(), request);
                    }
                }
                TaskPayload::InputRequired {
                    input_requests: requests,
                }
            }
            TaskStatus::Completed => TaskPayload::Completed {
                result: self.result.clone().unwrap_or_default(),
            },
            TaskStatus::Failed => TaskPayload::Failed {
                error: self.error.clone().unwrap_or_default(),
            },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        DetailedTask::new(self.task(id), payload)
    }
}

pub(super) fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// The key a record names its owner by: the one caller key, the same its share of work is
/// counted under whatever the protocol.
pub(super) fn owner_of(subject: Option<&str>) -> String {
    crate::state::caller_key(subject)
}

/// The task records.
#[derive(Clone)]
pub(super) struct TaskStore(Arc<dyn StateStore>);

impl TaskStore {
    pub(super) fn new(store: Arc<dyn StateStore>) -> Self {
        Self(store)
    }

    /// Writes new task `id`, unless one exists; the item written.
    pub(super) async fn create(&self, id: &str, record: &Record) -> Result<Item, StateError> {
        let expires = Some(SystemTime::now() + TASK_TTL);
        let item = Item::new(
            serde_json::to_vec(record).expect("records serialize"),
            expires,
        );
        if self.0.put_if(TASKS, id, item.clone(), None).await? {
            Ok(item)
        } else {
            Err(StateError("a task with this id exists".into()))
        }
    }

    /// The task records, each changed by compare-and-swap.
    fn records(&self) -> Records<'_> {
        Records::new(&*self.0, TASKS, "a task record")
    }

    /// Task `id` and the item it is stored as; one that does not read is no task (of an
    /// earlier version: a client asking is told it is unknown).
    pub(super) async fn read(&self, id: &str) -> Result<Option<(Record, Item)>, StateError> {
        let Some(item) = self.0.get(TASKS, id).await? else {
            return Ok(None);
        };
        Ok(serde_json::from_slice(&item.value)
            .ok()
            .map(|record| (record, item)))
    }

    /// `change` applied to task `id` (compare-and-swap, retried); the record as written, or
    /// `None` when there is none or `change` declines.
    pub(super) async fn update(
        &self,
        id: &str,
        change: impl Fn(&mut Record) -> bool,
    ) -> Result<Option<Record>, StateError> {
        self.update_from(id, None, change).await
    }

    /// [`Self::update`] starting from `known`, the record as read before (no read again unless
    /// it changed since: a decline counts only on a fresh read). Each change is the task's
    /// last update, and keeps it [`TASK_TTL`] from now.
    pub(super) async fn update_from(
        &self,
        id: &str,
        known: Option<(Record, Item)>,
        change: impl Fn(&mut Record) -> bool,
    ) -> Result<Option<Record>, StateError> {
        let changed = |record: &mut Record| {
            let changed = change(record);
            if changed {
                record.updated = now();
            }
            changed
        };
        let written = self
            .records()
            .update(id, known, changed, |_, _| {
                Some(SystemTime::now() + TASK_TTL)
            })
            .await?;
        Ok(written.map(|(record, _)| record))
    }

    /// Keeps `result`, a task's result, for as long as a task lives, its parts in `room`.
    pub(super) async fn keep(
        &self,
        result: &impl Serialize,
        room: Option<Room<'_>>,
    ) -> Result<Kept, Full> {
        let bytes = serde_json::to_vec(result).expect("results serialize");
        let until = Some(SystemTime::now() + TASK_TTL);
        crate::state::large::keep(&*self.0, &bytes, until, room).await
    }

    /// Lets go of `kept`, a result no task's record names, and of its room.
    pub(super) async fn unkeep(&self, kept: &Kept) {
        if let Err(e) = kept.forget(&*self.0).await {
            tracing::warn!(target: "oxp::mcp", error = %e, "a result no task names not deleted: it expires with the hour");
        }
    }

    /// `record` with its kept result read back into it (what `tasks/get` answers).
    pub(super) async fn with_result(&self, mut record: Record) -> Result<Record, StateError> {
        if let Some(kept) = record.kept.take() {
            let bytes = kept.read(&*self.0).await?;
            record.result = serde_json::from_slice(&bytes).ok();
        }
        Ok(record)
    }

    /// Task `id` was never started: it goes.
    pub(super) async fn forget(&self, id: &str) {
        let _ = self.0.delete(TASKS, id).await;
    }
}
