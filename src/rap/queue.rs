//! Where acknowledged invocations wait for a worker: SQS in Lambda (the function freezes
//! once it has answered, so nothing may run after the 200), an in-process queue locally.

use crate::rap::job::Job;
use crate::rap::worker::{Kept, Worker};
use oxp_lambda_core::durable::{Item, StateStore};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// Largest SQS message body.
const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Why a job could not be enqueued (the invocation is then refused, not acknowledged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EnqueueError {
    /// The in-process queue holds as many invocations as it may (`OXP_RAP_MAX_PENDING`).
    Full,
    /// The caller holds its whole share of the in-process queue
    /// (`OXP_RAP_MAX_PENDING_PER_CALLER`).
    CallerFull,
    /// The job is larger than the queue takes.
    TooLarge,
    /// The queue did not take the job.
    Unavailable(String),
}

/// A job queue.
#[derive(Debug, Clone)]
pub(crate) enum Queue {
    /// Jobs run on this process's runtime, at most `OXP_MAX_CONCURRENT_CALLS` at once.
    InProcess(InProcessQueue),
    /// Jobs are sent to an SQS queue whose consumer is the worker function.
    Sqs {
        /// The SQS client.
        client: crate::sqs::Sqs,
        /// The queue URL.
        queue_url: String,
    },
}

impl Queue {
    /// Enqueues `job`; once this returns `Ok` the job is never silently dropped.
    pub(crate) async fn enqueue(&self, job: Job) -> Result<(), EnqueueError> {
        match self {
            Self::InProcess(queue) => queue.accept(job).await,
            Self::Sqs { client, queue_url } => {
                let body = serde_json::to_string(&job).expect("jobs serialize");
                if body.len() > MAX_MESSAGE_BYTES {
                    return Err(EnqueueError::TooLarge);
                }
                client
                    .send(queue_url, body)
                    .await
                    .map_err(EnqueueError::Unavailable)
            }
        }
    }
}

/// The local queue: each job is a task on the runtime; the pending ones are tracked so a
/// shutdown can wait for them and dead-letter those that do not finish.
#[derive(Debug, Clone)]
pub(crate) struct InProcessQueue {
    worker: Arc<Worker>,
    pending: Arc<Pending>,
    max_pending: usize,
    per_caller: usize,
    /// Where acknowledged jobs are kept until they are done, so a crash loses none
    /// ([`InProcessQueue::resume`] runs them when the server is back).
    durable: Option<Arc<dyn StateStore>>,
}

/// The acknowledged jobs of the local queue, by key.
const JOBS: &str = "rap-job";
/// How long an acknowledged job is kept for a restart to find.
const JOB_KEEP: Duration = Duration::from_secs(7 * 24 * 3600);

#[derive(Debug, Default)]
struct Pending {
    next: AtomicU64,
    jobs: Mutex<Jobs>,
    idle: Notify,
}

/// The pending jobs, and how many each caller holds (only callers holding some are kept, so
/// the map is no larger than the queue).
#[derive(Debug, Default)]
struct Jobs {
    by_key: HashMap<u64, (Job, Option<String>)>,
    by_caller: HashMap<String, usize>,
}

impl Pending {
    fn jobs(&self) -> std::sync::MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Forgets the kept copy `id` of a job that is done.
async fn forget(store: &dyn StateStore, id: &str) {
    if let Err(e) = store.delete(JOBS, id).await {
        tracing::warn!(target: "oxp::rap", error = %e, "a finished invocation stays kept: it may run again at the next start");
    }
}

/// The key a caller's share is counted under: its authenticated subject; every caller
/// without one (authentication off) is the same caller.
fn caller(job: &Job) -> &str {
    job.principal.subject.as_deref().unwrap_or_default()
}

/// Removes a job from the pending set when its task ends, however it ends.
struct Done {
    pending: Arc<Pending>,
    key: u64,
}

impl Drop for Done {
    fn drop(&mut self) {
        let mut jobs = self.pending.jobs();
        if let Some((job, _)) = jobs.by_key.remove(&self.key) {
            let who = caller(&job);
            if let Some(held) = jobs.by_caller.get_mut(who) {
                *held -= 1;
                if *held == 0 {
                    jobs.by_caller.remove(who);
                }
            }
        }
        if jobs.by_key.is_empty() {
            self.pending.idle.notify_waiters();
        }
    }
}

impl InProcessQueue {
    /// A queue whose jobs `worker` runs, holding at most `max_pending` jobs (running or
    /// delivering) at once, and at most `per_caller` of one caller's; acknowledged jobs are
    /// kept in `durable` until done.
    pub(crate) fn new(
        worker: Arc<Worker>,
        max_pending: usize,
        per_caller: usize,
        durable: Option<Arc<dyn StateStore>>,
    ) -> Self {
        Self {
            worker,
            pending: Arc::default(),
            max_pending: max_pending.max(1),
            per_caller: per_caller.max(1),
            durable,
        }
    }

    /// Takes `job` if there is room, keeps it durably, then runs it; once this returns `Ok`
    /// the job runs, or is dead-lettered, even after a crash.
    async fn accept(&self, job: Job) -> Result<(), EnqueueError> {
        let key = self.reserve(&job)?;
        let stored = match &self.durable {
            None => None,
            Some(store) => {
                let id = uuid::Uuid::new_v4().simple().to_string();
                let item = Item::new(
                    serde_json::to_vec(&job).expect("jobs serialize"),
                    Some(SystemTime::now() + JOB_KEEP),
                );
                if let Err(e) = store.put(JOBS, &id, item).await {
                    drop(Done {
                        pending: self.pending.clone(),
                        key,
                    });
                    return Err(EnqueueError::Unavailable(e.0));
                }
                Some(id)
            }
        };
        self.run(key, job, stored);
        Ok(())
    }

    /// Runs the jobs an earlier run of the server acknowledged and did not finish; how many.
    pub(crate) async fn resume(&self) -> usize {
        let Some(store) = &self.durable else {
            return 0;
        };
        let kept = match store.list(JOBS, None, self.max_pending).await {
            Ok(kept) => kept,
            Err(e) => {
                tracing::error!(target: "oxp::rap", error = %e, "acknowledged invocations not read back");
                return 0;
            }
        };
        let mut resumed = 0;
        for (id, item) in kept {
            let Ok(job) = serde_json::from_slice::<Job>(&item.value) else {
                continue;
            };
            // Every kept job runs again, whatever the shares (it was accepted once).
            let key = self.pending.next.fetch_add(1, Ordering::Relaxed);
            {
                let mut jobs = self.pending.jobs();
                *jobs.by_caller.entry(caller(&job).to_owned()).or_default() += 1;
                jobs.by_key.insert(key, (job.clone(), Some(id.clone())));
            }
            self.run(key, job, Some(id));
            resumed += 1;
        }
        if resumed > 0 {
            tracing::warn!(target: "oxp::rap", resumed, "invocations acknowledged before a restart run now");
        }
        resumed
    }

    /// A place in the queue for `job`, or why there is none.
    fn reserve(&self, job: &Job) -> Result<u64, EnqueueError> {
        let key = self.pending.next.fetch_add(1, Ordering::Relaxed);
        let mut jobs = self.pending.jobs();
        if jobs.by_key.len() >= self.max_pending {
            return Err(EnqueueError::Full);
        }
        // With room left, a caller at its share is told so (429): the room is the others'.
        let held = jobs.by_caller.get(caller(job)).copied().unwrap_or(0);
        if held >= self.per_caller {
            return Err(EnqueueError::CallerFull);
        }
        *jobs.by_caller.entry(caller(job).to_owned()).or_default() += 1;
        jobs.by_key.insert(key, (job.clone(), None));
        Ok(key)
    }

    /// Runs the job of place `key` in a task; its kept copy `stored` goes once it is done.
    fn run(&self, key: u64, job: Job, stored: Option<String>) {
        if let Some(id) = &stored {
            let mut jobs = self.pending.jobs();
            if let Some(entry) = jobs.by_key.get_mut(&key) {
                entry.1 = Some(id.clone());
            }
        }
        let done = Done {
            pending: self.pending.clone(),
            key,
        };
        let worker = self.worker.clone();
        let durable = self.durable.clone();
        tokio::spawn(async move {
            let _done = done;
            let finished = match worker.process(job, None).await {
                Ok(_) => true,
                // The running one, in this process, delivers the result.
                Err(Kept::Duplicate) => {
                    tracing::info!(target: "oxp::rap", "duplicate of a running invocation: its result is delivered once");
                    true
                }
                Err(Kept::NotRecorded(e)) => {
                    tracing::error!(target: "oxp::rap", error = %e, "result neither delivered nor dead-lettered: kept for the next start");
                    false
                }
                // The in-process worker has no deadline of its own: not reached.
                Err(other) => {
                    tracing::error!(target: "oxp::rap", reason = %other, "invocation ended without a result");
                    false
                }
            };
            if finished && let (Some(store), Some(id)) = (durable, stored) {
                forget(&*store, &id).await;
            }
        });
    }

    /// Jobs accepted and not finished.
    pub(crate) fn pending(&self) -> usize {
        self.pending.jobs().by_key.len()
    }

    /// Waits up to `timeout` for every pending job; then cancels the tools still running, so
    /// each can return what it did and have it delivered (a tool that ignores its signal is
    /// stopped after the grace period and its caller told "cancelled"); only what is still
    /// pending after that is dead-lettered (its task ends with the runtime). Returns how many
    /// were dead-lettered.
    pub(crate) async fn drain(&self, timeout: Duration) -> usize {
        let all_done = || async {
            loop {
                let idle = self.pending.idle.notified();
                if self.pending() == 0 {
                    return;
                }
                idle.await;
            }
        };
        if tokio::time::timeout(timeout, all_done()).await.is_ok() {
            return 0;
        }
        if self.worker.running().cancel_all() > 0 {
            let settle = oxp_lambda_core::invoke::CANCEL_GRACE + self.worker.deliverer_timeout();
            if tokio::time::timeout(settle, all_done()).await.is_ok() {
                return 0;
            }
        }
        let left: Vec<(Job, Option<String>)> = {
            let mut jobs = self.pending.jobs();
            jobs.by_caller.clear();
            jobs.by_key.drain().map(|(_, job)| job).collect()
        };
        let count = left.len();
        for (job, stored) in left {
            match self
                .worker
                .abandon(job, "the server shut down before the call finished")
                .await
            {
                // Dead-lettered: not to run again at the next start.
                Ok(_) => {
                    if let (Some(store), Some(id)) = (&self.durable, stored) {
                        forget(&**store, &id).await;
                    }
                }
                Err(e) => {
                    tracing::error!(target: "oxp::rap", error = %e, "pending invocation not dead-lettered at shutdown: it runs at the next start");
                }
            }
        }
        count
    }
}
