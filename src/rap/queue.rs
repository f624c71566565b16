//! Acknowledged invocations are work of the one runner ([`crate::work`], kind [`JOB`]), on
//! every deployment: kept in the state store before the caller is answered, run at once in
//! this process (locally) or by the worker role (in Lambda, woken through its queue), their
//! answer kept in the work record before its first delivery (a retry, a takeover, a
//! redelivered message delivers the same bytes), retried with the runner's backoff under RAP's
//! numbers, and taken over when the process running it dies. One process takes on at most
//! `OXP_RAP_MAX_PENDING` runs at once (503), each caller at most its share of the work every
//! process shares (`OXP_WORK_MAX_PER_CALLER`, 429).

use crate::rap::job::{Job, Kept};
use crate::rap::worker::Worker;
use crate::server::BoxFuture;
use crate::state::{caller_key, key_of};
use crate::work::{Handler, Outcome, Refused, Retries, Run, Runner, Work};
use std::sync::Arc;
use std::time::Duration;

/// The kind of work of an accepted invocation (its body: the [`Job`]).
pub(crate) const JOB: &str = "rap-job";
/// How long a run waits for another copy of its call (still holding the call's id) to end.
const DUPLICATE_WAIT: Duration = Duration::from_secs(5);

/// Why a job could not be accepted (the invocation is then refused, not acknowledged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EnqueueError {
    /// This process runs as many invocations as it may (`OXP_RAP_MAX_PENDING`).
    Full,
    /// The caller holds its whole share (`OXP_WORK_MAX_PER_CALLER`).
    CallerFull,
    /// The job is larger than a record takes.
    TooLarge,
    /// The store did not take the job.
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
    let key = key_of(&[caller.unwrap_or_default(), group_id, id]);
    format!("rap:{key}:")
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

/// The accepted invocations of this process.
#[derive(Debug, Clone)]
pub(crate) struct Jobs {
    runner: Arc<Runner>,
    /// `OXP_RAP_MAX_PENDING`: runs this process takes on at once.
    max_pending: usize,
}

impl Jobs {
    /// Invocations accepted as `runner`'s work; `worker`: the runs are this process's (locally,
    /// or the worker role), registered with the runner.
    pub(crate) fn new(
        runner: Arc<Runner>,
        worker: Option<Arc<Worker>>,
        max_pending: usize,
    ) -> Self {
        if let Some(worker) = worker {
            runner.register(JOB, Arc::new(JobRuns { worker }));
        }
        Self {
            runner,
            max_pending: max_pending.max(1),
        }
    }

    /// The runner whose work accepted invocations are.
    pub(crate) fn runner(&self) -> &Arc<Runner> {
        &self.runner
    }

    /// Accepts `job`; once this returns `Ok` the job is kept, and runs, or is dead-lettered,
    /// even after a crash.
    pub(crate) async fn enqueue(&self, job: Job) -> Result<(), EnqueueError> {
        if self.runner.local() && self.runner.in_hand() >= self.max_pending {
            return Err(EnqueueError::Full);
        }
        let body = serde_json::to_value(&job).expect("jobs serialize");
        // Within one record, with room for what the runner adds to it.
        if body.to_string().len() > oxp_lambda_core::durable::MAX_VALUE_BYTES - 4096 {
            return Err(EnqueueError::TooLarge);
        }
        let caller = caller_key(job.principal.subject.as_deref());
        self.runner
            .submit(JOB, &work_id(&job), Some(&caller), body)
            .await?;
        Ok(())
    }
}

/// The runner's handler of accepted invocations: the worker runs each to its answer, and
/// delivers the answer kept.
struct JobRuns {
    worker: Arc<Worker>,
}

/// The job of work `id`.
fn job_of(id: &str, work: &Work) -> Option<Job> {
    let mut job: Job = serde_json::from_value(work.body.clone()).ok()?;
    job.work = id.to_owned();
    Some(job)
}

/// What becomes of a job answered (its answer to keep) or not.
fn outcome(answered: Result<Vec<u8>, Kept>) -> Outcome {
    match answered {
        Ok(answer) => Outcome::Result(answer),
        // Answered and delivered before (a repeat of the invocation).
        Err(Kept::Delivered) => Outcome::Done,
        // A copy of the call (a dead process's, until its hold lapses) has its id.
        Err(Kept::Duplicate) => Outcome::After(DUPLICATE_WAIT),
        // The user has not answered or authorized yet and this executor's time is up:
        // parked until they do (their answer, in any process, wakes it).
        Err(Kept::AwaitingAnswer | Kept::AwaitingAuthorization) => Outcome::Park,
        Err(other) => Outcome::Retry(other.to_string()),
    }
}

impl Handler for JobRuns {
    fn run<'a>(&'a self, id: &'a str, work: &'a Work, run: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(job) = job_of(id, work) else {
                return Outcome::Done;
            };
            // Its run before this one ended unfinished (its process died) without an answer:
            // what may not run twice is answered "interrupted" rather than run again.
            if work.interrupted && !self.worker.may_run_again(&job) {
                return Outcome::Result(self.worker.interrupted_answer(&job));
            }
            let answered = tokio::select! {
                answered = self.worker.answer(&job, &run) => answered,
                () = run.stop.cancelled() => return Outcome::Retry("stopped".into()),
            };
            outcome(answered)
        })
    }

    fn unkept<'a>(
        &'a self,
        id: &'a str,
        work: &'a Work,
        result: &'a [u8],
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(job) = job_of(id, work) else {
                return Outcome::Done;
            };
            outcome(self.worker.unkept(&job, result).await)
        })
    }

    fn not_kept<'a>(&'a self, id: &'a str, work: &'a Work, result: &'a [u8]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(job) = job_of(id, work) {
                self.worker.let_go(&job, result).await;
            }
        })
    }

    fn deliver<'a>(
        &'a self,
        id: &'a str,
        work: &'a Work,
        result: &'a [u8],
        run: Run,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(job) = job_of(id, work) else {
                return Outcome::Done;
            };
            self.worker.deliver(&job, result, run.deadline).await
        })
    }

    fn give_up<'a>(
        &'a self,
        id: &'a str,
        work: &'a Work,
        reason: &'a str,
        result: Option<&'a [u8]>,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            if let Some(job) = job_of(id, work) {
                // Each failure of a kept answer was one attempt to deliver it, and the last.
                let attempts = result.map_or(0, |_| work.failures + 1);
                self.worker
                    .dead_letter(&job, reason, result, attempts)
                    .await;
            }
            false
        })
    }

    fn retries(&self) -> Option<Retries> {
        Some(self.worker.deliverer.retries())
    }

    fn settle(&self) -> Duration {
        self.worker.deliverer.attempt_timeout()
    }
}
