//! Where acknowledged invocations wait for a worker. With a state store an invocation is work of
//! the one runner ([`crate::work`], kind [`JOB`]): kept before it is acknowledged, run at once
//! in this process (locally) or by the worker role (in Lambda, woken through its queue), and
//! taken over when the process running it dies. Without one: an in-process task locally (lost
//! with the process), the job itself on the SQS queue in Lambda.

use crate::rap::job::{Job, Kept};
use crate::rap::worker::Worker;
use crate::server::BoxFuture;
use crate::subscriptions::key_of;
use crate::work::{Handler, Outcome, Refused, Run, Runner, Work};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Largest SQS message body.
const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// The kind of work of an accepted invocation (its body: the [`Job`]).
pub(crate) const JOB: &str = "rap-job";
/// How long a run waits for another copy of its call (still holding the call's id) to end.
const DUPLICATE_WAIT: Duration = Duration::from_secs(5);

/// Why a job could not be enqueued (the invocation is then refused, not acknowledged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EnqueueError {
    /// The in-process queue holds as many invocations as it may (`OXP_RAP_MAX_PENDING`).
    Full,
    /// The caller holds its whole share (`OXP_RAP_MAX_PENDING_PER_CALLER` in this process,
    /// `OXP_WORK_MAX_PER_CALLER` of the work every process shares).
    CallerFull,
    /// The job is larger than the queue takes.
    TooLarge,
    /// The queue did not take the job.
    Unavailable(String),
}

impl From<Refused> for EnqueueError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::CallerFull => Self::CallerFull,
            Refused::Unavailable(why) => Self::Unavailable(why),
        }
    }
}

/// The prefix of the work ids of the invocations of call `id` in thread `group_id` by `caller`:
/// what `/tool_call_status` looks for.
pub(crate) fn call_prefix(caller: Option<&str>, group_id: &str, id: &str) -> String {
    format!(
        "rap:{}:",
        key_of(&[caller.unwrap_or_default(), group_id, id])
    )
}

/// The work id of one acceptance of `job` (each `/invoke` is its own work: the call's
/// idempotency makes a repeat replay, not run again).
fn work_id(job: &Job) -> String {
    let prefix = call_prefix(
        job.principal.subject.as_deref(),
        &job.reply_to.group_id,
        &job.reply_to.id,
    );
    format!("{prefix}{}", uuid::Uuid::new_v4().simple())
}

/// The share a job counts in: its caller's.
fn share_of(job: &Job) -> String {
    key_of(&[caller(job)])
}

/// The key a caller's share of the in-process queue is counted under: its authenticated
/// subject; every caller without one (authentication off) is the same caller.
fn caller(job: &Job) -> &str {
    job.principal.subject.as_deref().unwrap_or_default()
}

fn body_of(job: &Job) -> Result<serde_json::Value, EnqueueError> {
    let body = serde_json::to_value(job).expect("jobs serialize");
    if body.to_string().len() > oxp_lambda_core::durable::MAX_VALUE_BYTES {
        return Err(EnqueueError::TooLarge);
    }
    Ok(body)
}

/// A job queue.
#[derive(Debug, Clone)]
pub(crate) enum Queue {
    /// Jobs run in this process, at most `OXP_MAX_CONCURRENT_CALLS` at once (kept as the
    /// runner's work when there is a state store).
    InProcess(InProcessQueue),
    /// In Lambda without a state table: the job itself goes to the SQS queue whose consumer
    /// is the worker function.
    Sqs {
        /// The SQS client.
        client: crate::sqs::Sqs,
        /// The queue URL.
        queue_url: String,
    },
    /// In Lambda with a state table: the job is the runner's work, kept in the table; the
    /// worker role runs it (woken through its queue).
    Work(Arc<Runner>),
}

impl Queue {
    /// The runner whose work accepted invocations are (with a state store).
    pub(crate) fn runner(&self) -> Option<&Arc<Runner>> {
        match self {
            Self::InProcess(queue) => queue.runner.as_ref(),
            Self::Work(runner) => Some(runner),
            Self::Sqs { .. } => None,
        }
    }

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
            Self::Work(runner) => {
                let body = body_of(&job)?;
                runner
                    .submit(JOB, &work_id(&job), Some(&share_of(&job)), body)
                    .await?;
                Ok(())
            }
        }
    }
}

/// The runner's handler of accepted invocations: the worker runs each, the in-process queue
/// (`pending`) tracks those running here.
pub(crate) struct JobRuns {
    pub(crate) worker: Arc<Worker>,
    pub(crate) pending: Option<Arc<Pending>>,
}

impl Handler for JobRuns {
    fn run<'a>(&'a self, id: &'a str, work: &'a Work, run: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Ok(job) = serde_json::from_value::<Job>(work.body.clone()) else {
                return Outcome::Done;
            };
            let _tracked = self.pending.as_ref().map(|p| {
                let tracked = p.track(id, &job);
                // Tracked by the run now: the acceptance's reservation ends.
                p.handoff
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(id);
                tracked
            });
            // Its run before this one ended unfinished (its process died): what may not run
            // twice is answered "interrupted" rather than run again.
            if work.interrupted && !self.worker.may_run_again(&job) {
                return match self.worker.interrupted(job).await {
                    Ok(()) => Outcome::Done,
                    Err(e) => Outcome::Retry(e),
                };
            }
            let processed = tokio::select! {
                processed = self.worker.process(job, run.deadline) => processed,
                () = run.stop.cancelled() => return Outcome::Retry("stopped".into()),
            };
            match processed {
                Ok(_) => Outcome::Done,
                // A copy of the call (a dead process's, until its hold lapses) has its id.
                Err(Kept::Duplicate) => Outcome::After(DUPLICATE_WAIT),
                // The user has not answered or authorized yet and this executor's time is up:
                // on, in the next one.
                Err(Kept::AwaitingAnswer | Kept::AwaitingAuthorization) => Outcome::Continue,
                Err(other) => Outcome::Retry(other.to_string()),
            }
        })
    }

    fn give_up<'a>(&'a self, _: &'a str, work: &'a Work, reason: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let Ok(job) = serde_json::from_value::<Job>(work.body.clone()) else {
                return;
            };
            if let Err(e) = self.worker.abandon(job, reason).await {
                tracing::error!(target: "oxp::rap", error = %e, "invocation given up and not dead-lettered");
            }
        })
    }
}

/// The jobs running in this process, by work id, and how many each caller holds (only callers
/// holding some are kept, so the map is no larger than the queue).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    jobs: Mutex<Jobs>,
    idle: Notify,
    /// Reservations of jobs accepted here, held until their run has started (so a shutdown
    /// waiting for the queue never finds it empty in between).
    handoff: Mutex<HashMap<String, Done>>,
}

#[derive(Debug, Default)]
struct Jobs {
    /// Each job, and how many hold it (its reservation, its run).
    by_key: HashMap<String, (Job, usize)>,
    by_caller: HashMap<String, usize>,
}

impl Pending {
    fn jobs(&self) -> std::sync::MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tracks job `key` while the guard lives (a job taken over, or resumed after a restart,
    /// counts like one accepted here).
    fn track(self: &Arc<Self>, key: &str, job: &Job) -> Done {
        let mut jobs = self.jobs();
        match jobs.by_key.get_mut(key) {
            Some((_, holders)) => *holders += 1,
            None => {
                *jobs.by_caller.entry(caller(job).to_owned()).or_default() += 1;
                jobs.by_key.insert(key.to_owned(), (job.clone(), 1));
            }
        }
        Done {
            pending: self.clone(),
            key: key.to_owned(),
        }
    }
}

/// Removes a job from the pending set when it ends, however it ends.
struct Done {
    pending: Arc<Pending>,
    key: String,
}

impl std::fmt::Debug for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Done").field("key", &self.key).finish()
    }
}

impl Drop for Done {
    fn drop(&mut self) {
        let mut jobs = self.pending.jobs();
        let last = match jobs.by_key.get_mut(&self.key) {
            Some((_, holders)) => {
                *holders -= 1;
                *holders == 0
            }
            None => false,
        };
        if last && let Some((job, _)) = jobs.by_key.remove(&self.key) {
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

/// The local queue: each job runs in this process; the pending ones are tracked so a shutdown
/// can wait for them, and (with a state store) each is the runner's work, so a crash loses none:
/// another process sharing the store, or this server once it starts again, takes it over.
#[derive(Debug, Clone)]
pub(crate) struct InProcessQueue {
    worker: Arc<Worker>,
    pending: Arc<Pending>,
    max_pending: usize,
    per_caller: usize,
    runner: Option<Arc<Runner>>,
}

impl InProcessQueue {
    /// A queue whose jobs `worker` runs, holding at most `max_pending` jobs (running or
    /// delivering) at once, and at most `per_caller` of one caller's; acknowledged jobs are
    /// `runner`'s work when there is a state store (registered here).
    pub(crate) fn new(
        worker: Arc<Worker>,
        max_pending: usize,
        per_caller: usize,
        runner: Option<Arc<Runner>>,
    ) -> Self {
        let pending = Arc::new(Pending::default());
        if let Some(runner) = &runner {
            runner.register(
                JOB,
                Arc::new(JobRuns {
                    worker: worker.clone(),
                    pending: Some(pending.clone()),
                }),
            );
        }
        Self {
            worker,
            pending,
            max_pending: max_pending.max(1),
            per_caller: per_caller.max(1),
            runner,
        }
    }

    /// Takes `job` if there is room, keeps it durably, then runs it; once this returns `Ok`
    /// the job runs, or is dead-lettered, even after a crash.
    async fn accept(&self, job: Job) -> Result<(), EnqueueError> {
        let key = work_id(&job);
        let reserved = self.reserve(&key, &job)?;
        match &self.runner {
            None => {
                let worker = self.worker.clone();
                tokio::spawn(async move {
                    let _reserved = reserved;
                    if let Err(kept) = worker.process(job, None).await {
                        tracing::error!(target: "oxp::rap", reason = %kept, "invocation ended without a result");
                    }
                });
                Ok(())
            }
            Some(runner) => {
                let body = body_of(&job)?;
                // The reservation ends once the run holds its own (the runner spawns it).
                self.pending
                    .handoff
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key.clone(), reserved);
                let kept = runner.submit(JOB, &key, Some(&share_of(&job)), body).await;
                if kept.is_err() {
                    let reserved = self
                        .pending
                        .handoff
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&key);
                    drop(reserved);
                }
                kept.map(drop).map_err(Into::into)
            }
        }
    }

    /// A place in the queue for `job`, or why there is none.
    fn reserve(&self, key: &str, job: &Job) -> Result<Done, EnqueueError> {
        let jobs = self.pending.jobs();
        if jobs.by_key.len() >= self.max_pending {
            return Err(EnqueueError::Full);
        }
        // With room left, a caller at its share is told so (429): the room is the others'.
        let held = jobs.by_caller.get(caller(job)).copied().unwrap_or(0);
        if held >= self.per_caller {
            return Err(EnqueueError::CallerFull);
        }
        drop(jobs);
        Ok(self.pending.track(key, job))
    }

    /// Jobs accepted and not finished.
    pub(crate) fn pending(&self) -> usize {
        self.pending.jobs().by_key.len()
    }

    /// Waits up to `timeout` for every pending job; then cancels the tools still running, so
    /// each can return what it did and have it delivered (a tool that ignores its signal is
    /// stopped after the grace period and its caller told "cancelled"); only what is still
    /// pending after that is dead-lettered, and ended as work (not run again at the next start).
    /// Returns how many were dead-lettered.
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
        let left: Vec<(String, Job)> = {
            let mut jobs = self.pending.jobs();
            jobs.by_caller.clear();
            jobs.by_key
                .drain()
                .map(|(key, (job, _))| (key, job))
                .collect()
        };
        let count = left.len();
        for (key, job) in left {
            match self
                .worker
                .abandon(job, "the server shut down before the call finished")
                .await
            {
                // Dead-lettered: not to run again at the next start.
                Ok(_) => {
                    if let Some(runner) = &self.runner
                        && let Err(e) = runner.end(&key).await
                    {
                        tracing::warn!(target: "oxp::rap", error = %e, "a dead-lettered invocation stays kept: it may run again at the next start");
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
