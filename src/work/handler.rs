//! What a kind of work is to the runner: its [`Handler`] (how a protocol runs, delivers and
//! gives up its work), what one run made of it ([`Outcome`]) under which conditions ([`Run`]),
//! how work reaches the process it runs in ([`Wake`]), and why work was not accepted
//! ([`Refused`]).

use super::{Retries, Work, execute};
use crate::server::BoxFuture;
use oxp_lambda_core::tool::Cancellation;
use std::time::{Duration, Instant, SystemTime};

/// What a handler made of one run, or of one delivery of a kept result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Finished: the record goes.
    Done,
    /// Finished, and what it left (a task's record) counts in its caller's share until then.
    Kept(SystemTime),
    /// Finished with this result to deliver: kept in the record, then delivered.
    Result(Vec<u8>),
    /// Failed: again after the backoff (why, for the log and the dead letter), or given up
    /// after the last attempt.
    Retry(String),
    /// Failed: again not before this long (a `Retry-After`), or given up.
    RetryAfter(String, Duration),
    /// Failed for good: given up now.
    GiveUp(String),
    /// Not finished and not failed (this executor's time is up): go on at once, anywhere.
    Continue,
    /// Not finished and not failed, but not to go on before this long (another copy of the
    /// work is still ending).
    After(Duration),
    /// Waiting for someone: runs again once [`super::Runner::wake`]d.
    Park,
}

/// One run's conditions.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// When this executor stops (a Lambda invocation's deadline); `None`: it does not.
    pub(crate) deadline: Option<Instant>,
    /// Fires when the run must stop: its lease was lost (another runner took it over) or the
    /// process is shutting down and let it go.
    pub(crate) stop: Cancellation,
    /// Fires when the process is shutting down and the run should end soon: a tool is asked
    /// to stop (its cancellation) and what it returns is delivered.
    pub(crate) cancel: Cancellation,
}

/// How a protocol runs its kind of work.
pub(crate) trait Handler: Send + Sync {
    /// Runs work `id`; `work.interrupted` says a run before this one ended without an outcome.
    fn run<'a>(&'a self, id: &'a str, work: &'a Work, run: Run) -> BoxFuture<'a, Outcome>;

    /// Delivers `result`, the kept result of work `id`'s run: [`Outcome::Done`] once taken.
    fn deliver<'a>(
        &'a self,
        id: &'a str,
        work: &'a Work,
        result: &'a [u8],
        run: Run,
    ) -> BoxFuture<'a, Outcome> {
        let _ = (id, work, result, run);
        Box::pin(async { Outcome::Done })
    }

    /// What to keep instead of `result`, work `id`'s result, for which its caller's room
    /// (`OXP_WORK_MAX_BYTES_PER_CALLER`) has no space: [`Outcome::Result`] with an error that
    /// tells its caller why (small: kept in the record); by default the run is tried again.
    fn unkept<'a>(
        &'a self,
        id: &'a str,
        work: &'a Work,
        result: &'a [u8],
    ) -> BoxFuture<'a, Outcome> {
        let _ = (id, work, result);
        Box::pin(async { Outcome::Retry(execute::NO_ROOM.into()) })
    }

    /// Work `id`'s `result` was not kept (the store did not answer, or the lease was lost):
    /// the run that made it ends without delivering it, so what the handler holds for its
    /// delivery (a mark that says a copy delivers it) is let go for the next run.
    fn not_kept<'a>(&'a self, id: &'a str, work: &'a Work, result: &'a [u8]) -> BoxFuture<'a, ()> {
        let _ = (id, work, result);
        Box::pin(async {})
    }

    /// Gives work `id` up after its last attempt (`reason`), with its kept result if it has
    /// one: dead-letter it, tell its caller. Whether the work goes on (the part that failed
    /// given up, more is left: a subscription's next events); else it ends.
    fn give_up<'a>(
        &'a self,
        id: &'a str,
        work: &'a Work,
        reason: &'a str,
        result: Option<&'a [u8]>,
    ) -> BoxFuture<'a, bool>;

    /// How its failures are retried (`None`: the runner's own numbers).
    fn retries(&self) -> Option<Retries> {
        None
    }

    /// How long a run asked to stop at shutdown may still take to deliver what it returns.
    fn settle(&self) -> Duration {
        Duration::ZERO
    }
}

/// Sends work to where it runs when it does not run here (Lambda's worker queue).
pub(crate) trait Wake: Send + Sync {
    /// Asks for `ids` (at most [`super::WAKE_BATCH`]) to be run `after` from now.
    fn wake(&self, ids: Vec<String>, after: Duration) -> BoxFuture<'_, Result<(), String>>;
}

/// Why work was not accepted: nothing was kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The caller holds its whole share (`OXP_WORK_MAX_PER_CALLER`).
    CallerFull,
    /// The store did not answer.
    Unavailable(String),
}

impl From<crate::state::share::Full> for Refused {
    fn from(full: crate::state::share::Full) -> Self {
        match full {
            crate::state::share::Full::Caller => Self::CallerFull,
            crate::state::share::Full::Unavailable(why) => Self::Unavailable(why),
        }
    }
}
