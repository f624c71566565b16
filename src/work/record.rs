//! A piece of acknowledged work as the store keeps it, and the one place its state changes:
//! queued until due, running under a lease, waiting for someone, and its run's result kept in
//! it until delivered. Every change is a compare-and-swap on the record's bytes, so two
//! processes sharing the store never both hold it.

use crate::state::large::Kept;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The partition of work records, by id: live work only (ended work's record goes), what a
/// sweep reads (by due time).
pub(super) const WORK: &str = "work";

/// Milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u64 {
    ms(SystemTime::now())
}

pub(super) fn ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn after(now: u64, d: Duration) -> u64 {
    now.saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Who runs a record, until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Lease {
    /// The runner (one per process) holding it.
    pub(crate) owner: String,
    /// When it lapses, Unix milliseconds: after this anyone may take the work over.
    pub(crate) until_ms: u64,
}

/// Where a piece of work is in its life (stored beside its other fields, named by `state`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub(crate) enum State {
    /// To run at `due_ms` (Unix milliseconds), by any runner.
    Queued { due_ms: u64 },
    /// Run by the lease's owner, until the lease lapses unless renewed.
    Running(Lease),
    /// Waiting for someone (a person's answer): runs again once woken.
    Waiting,
}

/// One piece of work: what runs it (`kind`, a handler a protocol registered), whose it is, what
/// it carries, where it is in its life, and its run's result once there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Work {
    /// The handler that runs it.
    pub(crate) kind: String,
    /// The caller it is done for (a hash of the caller; empty: the anonymous one): its runs
    /// take this caller's turns, and with a `slot` it counts in this caller's share. `None`:
    /// nobody's (a subscription's expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) caller: Option<String>,
    /// The slot of its caller's share it holds (`crate::state::share`), given back by its end;
    /// `None`: it counts in no share (bounded elsewhere: a subscription's deliveries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slot: Option<String>,
    /// What the handler needs (opaque here).
    pub(crate) body: Value,
    #[serde(flatten)]
    pub(crate) state: State,
    /// Runs started so far.
    #[serde(default)]
    pub(crate) attempts: u32,
    /// Runs or deliveries that failed (asked to be retried) so far: given up after the last
    /// attempt its kind allows.
    #[serde(default)]
    pub(crate) failures: u32,
    /// Whether its last run ended without an outcome (a crash, a lapsed lease, a shutdown that
    /// let it go): the next run is a takeover.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) interrupted: bool,
    /// Its run is waiting for a person (a question asked): a takeover resumes it, its
    /// question and the answer found again, rather than taking it for interrupted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) asking: bool,
    /// Why the last run or delivery asked to be retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_error: Option<String>,
    /// More came for it while it ran (another event to deliver): run again rather than end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) again: bool,
    /// Its run's result, kept before the first delivery: every later delivery (a retry, a
    /// takeover, a redelivered message) delivers these bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<Kept>,
    /// When delivering its result began (Unix milliseconds): deliveries end by a total time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) delivering_since_ms: Option<u64>,
}

impl Work {
    /// New work of `kind` done for `caller`, due now.
    pub(crate) fn new(kind: &str, caller: Option<&str>, body: Value) -> Self {
        Self {
            kind: kind.to_owned(),
            caller: caller.map(str::to_owned),
            slot: None,
            body,
            state: State::Queued { due_ms: now_ms() },
            attempts: 0,
            failures: 0,
            interrupted: false,
            asking: false,
            last_error: None,
            again: false,
            result: None,
            delivering_since_ms: None,
        }
    }

    /// When a sweep should look at it: when it is due, or when its lease lapses (a takeover);
    /// `None` while it waits to be woken.
    pub(crate) fn due_at(&self) -> Option<SystemTime> {
        let at = match &self.state {
            State::Queued { due_ms } => *due_ms,
            State::Running(lease) => lease.until_ms,
            State::Waiting => return None,
        };
        Some(UNIX_EPOCH + Duration::from_millis(at))
    }

    /// Whether a runner named `me` may take it at `now`: due, or its lease lapsed, or
    /// (`sole`: the store is this process's alone, so any other holder is a dead process) held
    /// by another.
    pub(crate) fn claimable(&self, now: u64, me: &str, sole: bool) -> bool {
        match &self.state {
            State::Queued { due_ms } => *due_ms <= now,
            State::Running(lease) => lease.until_ms <= now || (sole && lease.owner != me),
            State::Waiting => false,
        }
    }

    /// Whether a runner holds it at `now`.
    pub(crate) fn running(&self, now: u64) -> bool {
        matches!(&self.state, State::Running(lease) if lease.until_ms > now)
    }

    /// Whether it waits past `now` on purpose: to be retried (its backoff, a callback's
    /// `Retry-After`) or to go on later.
    pub(crate) fn put_off(&self, now: u64) -> bool {
        matches!(self.state, State::Queued { due_ms } if due_ms > now)
    }

    /// Whether `owner` holds it.
    pub(crate) fn held_by(&self, owner: &str) -> bool {
        matches!(&self.state, State::Running(lease) if lease.owner == owner)
    }

    /// Taken by `owner` for `lease`: taken from another runner's lease, its last run ended
    /// without an outcome (unless it was waiting for a person, whose run resumes).
    pub(crate) fn claim(&mut self, owner: &str, lease: Duration, now: u64) {
        if matches!(&self.state, State::Running(held) if held.owner != owner) && !self.asking {
            self.interrupted = true;
        }
        self.state = State::Running(Lease {
            owner: owner.to_owned(),
            until_ms: after(now, lease),
        });
        self.attempts += 1;
    }

    /// `owner`'s lease, extended to `lease` from `now` (a renewal).
    pub(crate) fn extend(&mut self, owner: &str, lease: Duration, now: u64) -> bool {
        match &mut self.state {
            State::Running(held) if held.owner == owner => {
                held.until_ms = after(now, lease);
                true
            }
            _ => false,
        }
    }

    /// Failed (`why`): to run again at `due_ms`, by anyone.
    pub(crate) fn retry(&mut self, due_ms: u64, why: &str) {
        self.failures += 1;
        self.go_on(due_ms);
        self.last_error = Some(why.chars().take(300).collect());
    }

    /// Not finished, not failed (its executor's time was up, or it made progress): to go on at
    /// `due_ms`, by anyone.
    pub(crate) fn go_on(&mut self, due_ms: u64) {
        self.interrupted = false;
        self.state = State::Queued { due_ms };
    }

    /// Let go unfinished (a shutdown): due now for anyone, as a takeover unless its result is
    /// kept (then it is only delivered) or it waits for a person (then it resumes).
    pub(crate) fn release(&mut self) {
        self.interrupted = self.result.is_none() && !self.asking;
        self.state = State::Queued { due_ms: now_ms() };
    }

    /// Parked until woken.
    pub(crate) fn park(&mut self) {
        self.interrupted = false;
        self.state = State::Waiting;
    }

    /// Woken: due now.
    pub(crate) fn wake(&mut self) {
        self.state = State::Queued { due_ms: now_ms() };
    }

    /// Ended, unless more came meanwhile (then due again at once); whether it ended (the
    /// record then goes: a repeat of its id is new work, which a RAP invocation's call
    /// answers from its idempotency record).
    pub(crate) fn end(&mut self) -> bool {
        self.interrupted = false;
        self.asking = false;
        self.state = State::Queued { due_ms: now_ms() };
        !std::mem::take(&mut self.again)
    }
}

impl crate::state::record::Record for Work {
    fn due(&self) -> Option<SystemTime> {
        self.due_at()
    }
}
