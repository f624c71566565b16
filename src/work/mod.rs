//! One runner for every piece of acknowledged work (a RAP invocation, a subscription's events
//! to deliver, an MCP task's run, ...): a record in the state store ([`record::Work`]) that any
//! process sharing the store may take over. A runner claims a record that is due under a lease,
//! renews the lease while the work runs, and ends it as its protocol's [`Handler`] says: done
//! (the record goes), a result to deliver (kept in the record first, then delivered: a retry, a
//! takeover, a redelivered message delivers the same bytes), retried after a backoff (holding
//! no turn while it waits), parked until woken (a question for a person), or after its last
//! attempt given up with the reason (the handler dead-letters it and tells the caller).
//!
//! Where work runs: locally, in the process that accepted it, at once, each run taking a turn
//! of its caller's ([`turns`]); work put off to later runs when due; any process finds work
//! whose lease lapsed (a crash) or that a shutdown let go by reading what is due
//! (`StateStore::due`), without reading every record. A process that takes the embedded
//! store's file (its lock proves the last holder dead) takes over at start what that holder
//! left running. In Lambda, where an execution environment freezes once it has answered, a
//! message on the worker's queue names the work (`{"oxp_work": [ids]}`, delayed by a retry's
//! backoff) and a schedule puts a sweep there (`{"oxp_sweep": true}`, template.yaml).
//!
//! Knows no protocol: a handler ([`Handler`], `handler.rs`) is registered under its kind.

mod accept;
mod end;
mod execute;
mod handler;
pub(crate) mod questions;
pub(crate) mod queue;
mod record;
mod settings;
mod share;
mod sweep;
mod turns;
pub(crate) mod watch;

pub(crate) use handler::{Handler, Outcome, Refused, Run, Wake};
pub(crate) use questions::Questions;
pub(crate) use queue::WorkRecords;
pub(crate) use record::Work;
pub(crate) use settings::{Retries, Settings};

use crate::state::record::Records;
use futures_util::{StreamExt, stream};
use oxp_lambda_core::durable::{Item, StateError, StateStore};
use oxp_lambda_core::tool::Cancellation;
use record::{WORK, now_ms};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Notify;

/// Most records one sweep reads in a page of the store.
const PAGE: usize = 500;
/// Most ids one queued message names.
pub(crate) const WAKE_BATCH: usize = 200;
/// The key of the anonymous caller (every call where callers do not authenticate), whose runs
/// take no share of the runner's turns.
static ANONYMOUS: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| crate::state::caller_key(None));

/// A record as this runner last wrote it: the work, and the item stored. A change to it is
/// written over exactly those bytes (compare-and-swap) without reading first; only when
/// another process wrote since is it read again.
type Held = (Work, Item);

/// Work to run: its id, and its record when it was just accepted here (held already).
type ToBegin = (String, Option<Held>);

/// A run going on in this process, and how to stop it.
#[derive(Debug, Clone)]
struct Going {
    stop: Cancellation,
    cancel: Cancellation,
    /// How long its kind may take to deliver what it returns once asked to stop.
    settle: Duration,
    /// Its record as this runner last wrote it: where every write of the run starts (no read).
    last: Arc<std::sync::Mutex<Item>>,
}

/// The runner of one process.
pub(crate) struct Runner {
    store: Arc<dyn StateStore>,
    handlers: RwLock<HashMap<String, Arc<dyn Handler>>>,
    /// This runner's name in leases.
    owner: String,
    settings: Settings,
    /// The share of each caller (its slots).
    share: crate::state::share::Share,
    /// The room of each caller for its results' parts (a slot per part).
    rooms: crate::state::share::Share,
    /// Where work goes when it does not run here (Lambda); `None`: it runs in this process.
    wake: OnceLock<Arc<dyn Wake>>,
    /// The work running here, and how to stop each.
    running: Mutex<HashMap<String, Going>>,
    idle: Notify,
    turns: Arc<turns::Turns>,
    /// Runs begun here and not yet ended (running, or waiting for a turn).
    in_hand: AtomicUsize,
    /// Fired at shutdown: nothing more is claimed.
    stopping: Cancellation,
    /// Itself, for what it starts from `&self`.
    this: OnceLock<std::sync::Weak<Runner>>,
    /// Whether there may be work to sweep for: this process accepted some, or an earlier run
    /// or another process may have left some (a store that outlives this process and that
    /// others share). A local server with a fresh file never opens it for a sweep.
    active: AtomicBool,
    /// Whether this process swept once (its first sweep reads every record).
    swept: AtomicBool,
    /// Whether the store is this process's alone (the embedded file it took): any lease of
    /// another runner in it is a dead process's.
    sole: AtomicBool,
    /// Whether the store outlives this process (else what is left at shutdown is given up).
    durable: AtomicBool,
    /// The soonest time work this process put off is due (Unix ms; `u64::MAX`: none), and the
    /// sweeper's wake-up when it comes sooner.
    next_due: std::sync::atomic::AtomicU64,
    sooner: Arc<Notify>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("owner", &self.owner)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Runner {
    /// A runner over `store` (shared with other processes, and outliving this one, until told
    /// otherwise: [`Runner::sole`], [`Runner::durable`]).
    pub(crate) fn new(store: Arc<dyn StateStore>, settings: Settings) -> Arc<Self> {
        let runner = Arc::new(Self {
            store,
            handlers: RwLock::default(),
            owner: uuid::Uuid::new_v4().simple().to_string(),
            turns: turns::Turns::new(settings.at_once, settings.at_once_per_caller),
            share: crate::state::share::Share::new("work-of", settings.per_caller),
            rooms: crate::state::large::rooms(settings.bytes_per_caller),
            settings,
            wake: OnceLock::new(),
            running: Mutex::default(),
            idle: Notify::new(),
            in_hand: AtomicUsize::new(0),
            stopping: Cancellation::new(),
            this: OnceLock::new(),
            active: AtomicBool::new(false),
            swept: AtomicBool::new(false),
            sole: AtomicBool::new(false),
            durable: AtomicBool::new(true),
            next_due: std::sync::atomic::AtomicU64::new(u64::MAX),
            sooner: Arc::default(),
        });
        let _ = runner.this.set(Arc::downgrade(&runner));
        runner
    }

    /// Says whether the store is this process's alone (`sole`) and outlives it (`durable`).
    pub(crate) fn store_is(&self, sole: bool, durable: bool) {
        self.sole.store(sole, Relaxed);
        self.durable.store(durable, Relaxed);
    }

    /// Runs `kind`'s work with `handler` (a protocol registers its kinds as it is built).
    pub(crate) fn register(&self, kind: &str, handler: Arc<dyn Handler>) {
        self.handlers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(kind.to_owned(), handler);
    }

    /// Sends work elsewhere (Lambda's queue) rather than running it here.
    pub(crate) fn wake_with(&self, wake: Arc<dyn Wake>) {
        let _ = self.wake.set(wake);
    }

    /// The settings.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Whether work is sent to a queue (Lambda's worker role runs it).
    pub(crate) fn queued(&self) -> bool {
        self.wake.get().is_some()
    }

    /// Whether work runs in this process (it is not sent to a queue).
    pub(crate) fn local(&self) -> bool {
        self.wake.get().is_none()
    }

    /// Runs this process has begun and not yet ended: what a bound on the work one process
    /// takes on counts.
    pub(crate) fn in_hand(&self) -> usize {
        self.in_hand.load(Relaxed)
    }

    /// A run begun here ended (its outcome kept and delivered, or left for a takeover): the
    /// last one wakes a shutdown's wait.
    fn out_of_hand(&self) {
        if self.in_hand.fetch_sub(1, Relaxed) == 1 {
            self.idle.notify_waiters();
        }
    }

    pub(super) fn handler(&self, kind: &str) -> Option<Arc<dyn Handler>> {
        self.handlers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(kind)
            .cloned()
    }

    pub(super) fn expires(&self) -> Option<SystemTime> {
        Some(SystemTime::now() + self.settings.keep)
    }

    /// The longest the kinds of the runs going on here take to settle once asked to stop: a
    /// shutdown waits for those only (an MCP task's run, let go whole, for no other kind's).
    pub(super) fn settle(&self) -> Duration {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.values().map(|g| g.settle).max().unwrap_or_default()
    }

    /// How `handler`'s kind is retried.
    pub(super) fn retries(&self, handler: &dyn Handler) -> Retries {
        handler
            .retries()
            .unwrap_or_else(|| self.settings.retries.clone())
    }

    /// Whether any work whose id starts with `prefix` is kept (accepted and not ended).
    pub(crate) async fn alive_under(&self, prefix: &str) -> Result<bool, StateError> {
        // Ids sort as strings: the first after the prefix itself is the first that has it.
        let first = self.store.list(WORK, Some(prefix), 1).await?;
        Ok(first.first().is_some_and(|(id, _)| id.starts_with(prefix)))
    }

    /// Whether work `id` is kept (accepted and not ended).
    pub(crate) async fn alive(&self, id: &str) -> Result<bool, StateError> {
        Ok(self.read(id).await?.is_some())
    }

    /// The work records, each changed by compare-and-swap.
    fn records(&self) -> Records<'_> {
        Records::new(&*self.store, WORK, "a work record")
    }

    pub(super) async fn read(&self, id: &str) -> Result<Option<Held>, StateError> {
        self.records().read(id).await
    }

    /// `change` applied to work `id` starting from `known` (the record as this runner last
    /// wrote it, if it did: no read unless another process wrote since), the record kept until
    /// what `expires` says of the changed record (`None`: as it was). The record and item as
    /// written, or `None` when there is none or `change` declines on the stored record.
    pub(super) async fn update_then(
        &self,
        id: &str,
        known: Option<Item>,
        change: impl FnMut(&mut Work) -> bool,
        expires: impl Fn(&Work) -> Option<SystemTime>,
    ) -> Result<Option<Held>, StateError> {
        let known = known.and_then(|item| {
            let work = serde_json::from_slice(&item.value).ok()?;
            Some((work, item))
        });
        self.records()
            .update(id, known, change, |work, old| expires(work).or(old.expires))
            .await
    }

    /// [`Runner::update_then`] of work `id` only while this runner holds it.
    pub(super) async fn if_mine(
        &self,
        id: &str,
        known: Option<Item>,
        expires: impl Fn(&Work) -> Option<SystemTime>,
        change: impl FnMut(&mut Work),
    ) -> Result<Option<Held>, StateError> {
        (self.update_then(id, known, self.while_mine(change), expires)).await
    }

    /// `change` made to a work record only if its lease is this runner's (the one rule of
    /// every outcome it writes): whether it was.
    fn while_mine<'a>(
        &'a self,
        mut change: impl FnMut(&mut Work) + 'a,
    ) -> impl FnMut(&mut Work) -> bool + 'a {
        move |w| {
            let mine = w.held_by(&self.owner);
            if mine {
                change(w);
            }
            mine
        }
    }

    /// Marks work `id`, which this runner runs, as waiting for a person: a takeover resumes
    /// it (its question found again) rather than taking it for interrupted. `followed`: the
    /// question's writes follow at once, and the mark's flush (on the embedded store) waits
    /// to share theirs.
    pub(crate) async fn asking(&self, id: &str, followed: bool) -> Result<(), StateError> {
        let last = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .map(|g| g.last.clone());
        let known = last.as_ref().and_then(|l| {
            let item = l.lock().unwrap_or_else(|p| p.into_inner()).clone();
            Some((serde_json::from_slice::<Work>(&item.value).ok()?, item))
        });
        // Marked once: a run's later questions find it so.
        if known.as_ref().is_some_and(|(w, _)| w.asking) {
            return Ok(());
        }
        let records = if followed {
            self.records().followed()
        } else {
            self.records()
        };
        let mark = self.while_mine(|w| w.asking = true);
        let held = records
            .update(id, known, mark, |_, old| old.expires)
            .await?;
        if let (Some(last), Some((_, item))) = (last, held) {
            *last.lock().unwrap_or_else(|p| p.into_inner()) = item;
        }
        Ok(())
    }
}

#[cfg(test)]
mod end_tests;
#[cfg(test)]
mod not_kept_tests;
#[cfg(test)]
mod result_tests;
#[cfg(test)]
mod room_tests;
#[cfg(test)]
mod share_tests;
#[cfg(test)]
mod sweep_tests;
#[cfg(test)]
mod tests;
