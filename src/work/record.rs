//! A piece of acknowledged work as the store keeps it, and the one place its state changes:
//! claimed under a lease, renewed, released, parked, due again. Every change is a
//! compare-and-swap on the record's bytes, so two processes sharing the store never both hold
//! it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The partition of work records, by id: live work only (ended work's record goes), what a
/// sweep reads.
pub(super) const WORK: &str = "work";

/// The partition of one caller's share: its slots, each holding a work id.
pub(super) fn of_caller(caller: &str) -> String {
    format!("work-of#{caller}")
}

/// Milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u64 {
    ms(SystemTime::now())
}

pub(super) fn ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Who runs a record, until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Lease {
    /// The runner (one per process) holding it.
    pub(crate) owner: String,
    /// When it lapses, Unix milliseconds: after this anyone may take the work over.
    pub(crate) until_ms: u64,
}

/// One piece of work: what runs it (`kind`, a handler a protocol registered), whose it is, what
/// it carries, and where it is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Work {
    /// The handler that runs it.
    pub(crate) kind: String,
    /// The caller whose share it counts in (a hash of the caller; empty: the anonymous one);
    /// `None`: in no caller's share (bounded elsewhere: a subscription's deliveries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) share: Option<String>,
    /// The slot of its caller's share it holds (`share.rs`), given back by its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slot: Option<String>,
    /// What the handler needs (opaque here).
    pub(crate) body: Value,
    /// Runs started so far.
    #[serde(default)]
    pub(crate) attempts: u32,
    /// Runs that failed (asked to be retried) so far: the work is given up after the last
    /// attempt the settings allow.
    #[serde(default)]
    pub(crate) failures: u32,
    /// When it may run (again), Unix milliseconds.
    pub(crate) due_ms: u64,
    /// Who runs it now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lease: Option<Lease>,
    /// Whether its last run ended without saying how (a crash, a lapsed lease, a shutdown
    /// that let it go): the next run is a takeover.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) interrupted: bool,
    /// Waiting for someone (the user's answer): due only once woken.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) waiting: bool,
    /// Why the last run asked to be retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_error: Option<String>,
    /// More came for it while it ran (another event to deliver): run again rather than end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) again: bool,
}

impl Work {
    /// New work of `kind` counted in `share`, due now.
    pub(crate) fn new(kind: &str, share: Option<&str>, body: Value) -> Self {
        Self {
            kind: kind.to_owned(),
            share: share.map(str::to_owned),
            slot: None,
            body,
            attempts: 0,
            failures: 0,
            due_ms: now_ms(),
            lease: None,
            interrupted: false,
            waiting: false,
            last_error: None,
            again: false,
        }
    }

    /// Whether a runner may take it at `now`: due, not waiting, and nobody's or its lease
    /// lapsed.
    pub(crate) fn claimable(&self, now: u64) -> bool {
        !self.waiting && self.due_ms <= now && !self.running(now)
    }

    /// Whether a runner holds it at `now`.
    pub(crate) fn running(&self, now: u64) -> bool {
        self.lease.as_ref().is_some_and(|l| l.until_ms > now)
    }

    /// Taken by `owner` for `lease`: a lease that lapsed under another runner makes this run
    /// a takeover.
    pub(crate) fn claim(&mut self, owner: &str, lease: Duration, now: u64) {
        if self.lease.as_ref().is_some_and(|l| l.owner != owner) {
            self.interrupted = true;
        }
        self.lease = Some(Lease {
            owner: owner.to_owned(),
            until_ms: now + u64::try_from(lease.as_millis()).unwrap_or(u64::MAX),
        });
        self.attempts += 1;
    }

    /// `owner`'s lease, extended to `lease` from `now` (a renewal).
    pub(crate) fn extend(&mut self, owner: &str, lease: Duration, now: u64) -> bool {
        match &mut self.lease {
            Some(held) if held.owner == owner => {
                held.until_ms = now + u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
                true
            }
            _ => false,
        }
    }

    /// Whether `owner` holds it.
    pub(crate) fn held_by(&self, owner: &str) -> bool {
        self.lease.as_ref().is_some_and(|l| l.owner == owner)
    }

    /// Failed (`why`): to be run again at `due_ms`, by anyone.
    pub(crate) fn retry(&mut self, due_ms: u64, why: &str) {
        self.failures += 1;
        self.go_on(due_ms);
        self.last_error = Some(why.chars().take(300).collect());
    }

    /// Not finished, not failed (its executor's time was up): to go on at `due_ms`, by anyone.
    pub(crate) fn go_on(&mut self, due_ms: u64) {
        self.lease = None;
        self.interrupted = false;
        self.due_ms = due_ms;
    }

    /// Let go unfinished (a shutdown): due now for anyone, as a takeover.
    pub(crate) fn release(&mut self) {
        self.lease = None;
        self.interrupted = true;
        self.due_ms = now_ms();
    }

    /// Parked until woken.
    pub(crate) fn park(&mut self) {
        self.lease = None;
        self.interrupted = false;
        self.waiting = true;
    }

    /// Woken: due now.
    pub(crate) fn wake(&mut self) {
        self.waiting = false;
        self.due_ms = now_ms();
    }

    /// Ended, unless more came meanwhile (then due again at once); whether it ended (the
    /// record then goes: a repeat of its id is new work, which a RAP invocation's call
    /// answers from its idempotency record).
    pub(crate) fn end(&mut self) -> bool {
        self.lease = None;
        self.interrupted = false;
        if std::mem::take(&mut self.again) {
            self.due_ms = now_ms();
            return false;
        }
        true
    }
}
