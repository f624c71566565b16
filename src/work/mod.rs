//! One runner for every piece of acknowledged work (a subscription's events to deliver, an MCP
//! task's run, ...): a record in the state store ([`record::Work`]) that any process sharing
//! the store may take over. A runner claims a record that is due under a lease, renews the lease
//! while the work runs, and ends it as its protocol's [`Handler`] says: done (the record goes),
//! retried after a backoff, parked until woken (a question for the user), or after its last
//! attempt given up with the reason (the handler dead-letters it and tells the caller).
//!
//! Where work runs: locally, in the process that accepted it, at once, and any process finds
//! work whose lease lapsed (a crash) or that a shutdown let go, without a request arriving (a
//! sweep every [`Settings::tick`]). In Lambda, where an execution environment freezes once it
//! has answered, a message on the worker's queue names the work (`{"oxp_work": [ids]}`) and a
//! schedule puts a sweep there (`{"oxp_sweep": true}`, template.yaml).
//!
//! Knows no protocol: a handler is registered under its kind.

pub(crate) mod questions;
mod record;
mod settings;
pub(crate) mod watch;

/// Where work goes in Lambda: the worker's queue.
pub(crate) mod queue {
    use super::{WAKE_BATCH, Wake, queued_work};
    use crate::server::BoxFuture;
    use crate::sqs::Sqs;

    /// The worker's queue (`OXP_WORK_QUEUE_URL`, else the RAP or MCP task queue): a message
    /// names up to [`WAKE_BATCH`] pieces of work for the worker role to run.
    pub(crate) struct Queue {
        pub(crate) sqs: Sqs,
        pub(crate) url: String,
    }

    impl Wake for Queue {
        fn wake(&self, ids: Vec<String>) -> BoxFuture<'_, Result<(), String>> {
            debug_assert!(ids.len() <= WAKE_BATCH);
            Box::pin(self.sqs.send(&self.url, queued_work(ids)))
        }
    }
}

pub(crate) use questions::Questions;
pub(crate) use record::Work;
pub(crate) use settings::Settings;

use crate::server::{BoxFuture, CallContext, Handled, RecordHandler};
use futures_util::{StreamExt, stream};
use oxp_lambda_core::durable::{Item, StateError, StateStore};
use oxp_lambda_core::tool::Cancellation;
use record::{WORK, now_ms, of_caller};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{Notify, Semaphore};

/// Most records one sweep reads in a page of the store.
const PAGE: usize = 500;
/// Most ids one queued message names.
pub(crate) const WAKE_BATCH: usize = 200;
/// How long ended work is kept as a marker (a repeat is no new work meanwhile).
const ENDED_KEPT: Duration = Duration::from_secs(60);

/// What a handler made of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Finished: the record goes.
    Done,
    /// Failed: run again after a backoff (why, for the log and the dead letter), or given up
    /// after the last attempt.
    Retry(String),
    /// Not finished and not failed (this executor's time is up): go on at once, anywhere.
    Continue,
    /// Not finished and not failed, but not to go on before this long (another copy of the
    /// work is still ending).
    After(Duration),
    /// Waiting for someone: runs again once [`Runner::wake`]d.
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
}

/// How a protocol runs its kind of work.
pub(crate) trait Handler: Send + Sync {
    /// Runs work `id`; `work.interrupted` says a run before this one ended without an outcome.
    fn run<'a>(&'a self, id: &'a str, work: &'a Work, run: Run) -> BoxFuture<'a, Outcome>;

    /// Gives work `id` up after its last attempt (`reason`): dead-letter it, tell its caller.
    fn give_up<'a>(&'a self, id: &'a str, work: &'a Work, reason: &'a str) -> BoxFuture<'a, ()>;
}

/// Sends work to where it runs when it does not run here (Lambda's worker queue).
pub(crate) trait Wake: Send + Sync {
    /// Asks for `ids` (at most [`WAKE_BATCH`]) to be run soon.
    fn wake(&self, ids: Vec<String>) -> BoxFuture<'_, Result<(), String>>;
}

/// Why work was not accepted: nothing was kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The caller holds its whole share (`OXP_WORK_MAX_PER_CALLER`).
    CallerFull,
    /// The store did not answer.
    Unavailable(String),
}

/// A record as this runner last wrote it: the work, and the item stored. A change to it is
/// written over exactly those bytes (compare-and-swap) without reading first; only when
/// another process wrote since is it read again.
type Held = (Work, Item);

/// Work to run: its id, and its record when it was just accepted here (held already).
type ToBegin = (String, Option<Held>);

/// The queued messages of the worker role: work to run, or a sweep.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Queued {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    oxp_work: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    oxp_sweep: bool,
}

/// The runner of one process.
pub(crate) struct Runner {
    store: Arc<dyn StateStore>,
    handlers: RwLock<HashMap<String, Arc<dyn Handler>>>,
    /// This runner's name in leases.
    owner: String,
    settings: Settings,
    /// Where work goes when it does not run here (Lambda); `None`: it runs in this process.
    wake: OnceLock<Arc<dyn Wake>>,
    /// The work running here, and how to stop each.
    running: Mutex<HashMap<String, Cancellation>>,
    idle: Notify,
    slots: Arc<Semaphore>,
    /// Fired at shutdown: nothing more is claimed.
    stopping: Cancellation,
    /// Itself, for what it starts from `&self`.
    this: OnceLock<std::sync::Weak<Runner>>,
    /// Whether there may be work to sweep for: this process accepted some, or an earlier run
    /// or another process may have left some (a store that outlives this process and that
    /// others share). A local server with a fresh file never opens it for a sweep.
    active: std::sync::atomic::AtomicBool,
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
    /// A runner over `store`.
    pub(crate) fn new(store: Arc<dyn StateStore>, settings: Settings) -> Arc<Self> {
        let runner = Arc::new(Self {
            store,
            handlers: RwLock::default(),
            owner: uuid::Uuid::new_v4().simple().to_string(),
            slots: Arc::new(Semaphore::new(settings.at_once.max(1))),
            settings,
            wake: OnceLock::new(),
            running: Mutex::default(),
            idle: Notify::new(),
            stopping: Cancellation::new(),
            this: OnceLock::new(),
            active: std::sync::atomic::AtomicBool::new(false),
        });
        let _ = runner.this.set(Arc::downgrade(&runner));
        runner
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
    fn local(&self) -> bool {
        self.wake.get().is_none()
    }

    fn handler(&self, kind: &str) -> Option<Arc<dyn Handler>> {
        self.handlers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(kind)
            .cloned()
    }

    fn expires(&self) -> Option<SystemTime> {
        Some(SystemTime::now() + self.settings.keep)
    }

    /// Accepts work `id` of `kind`, counted in `share` (a caller's hash): kept before this
    /// answers, then run here at once (or sent to the queue). `Ok(false)`: work `id` was
    /// accepted before (a repeat), nothing more is done.
    pub(crate) async fn submit(
        self: &Arc<Self>,
        kind: &str,
        id: &str,
        share: Option<&str>,
        body: Value,
    ) -> Result<bool, Refused> {
        self.within_share(share).await?;
        let work = self.fresh(kind, share, body);
        let bytes = serde_json::to_vec(&work).expect("work serializes");
        let item = Item::new(bytes, self.expires());
        // The record and its mark in the caller's share side by side (one round trip's wait).
        // A repeat's mark is the first one's, written again: taken back below when that work
        // already ended (its end deleted the mark; a run still going deletes it at its end).
        let (kept, counted) = tokio::join!(
            self.store.put_if(WORK, id, item.clone(), None),
            self.counted(id, &work)
        );
        let kept = match kept {
            Ok(kept) => kept,
            Err(e) => {
                self.uncount(id, &work).await;
                return Err(Refused::Unavailable(e.0));
            }
        };
        if !kept {
            if !matches!(self.read(id).await, Ok(Some((first, _))) if !first.done) {
                self.uncount(id, &work).await;
            }
            return Ok(false);
        }
        counted?;
        self.begin(vec![(id.to_owned(), Some((work, item)))]).await;
        Ok(true)
    }

    /// Accepts work `id` of `kind` due only `after` from now: kept, and run by the sweep that
    /// finds it due (locally the server's, in Lambda the worker's schedule), nothing woken now.
    /// `Ok(false)`: work `id` was accepted before.
    pub(crate) async fn submit_later(
        &self,
        kind: &str,
        id: &str,
        body: Value,
        after: Duration,
    ) -> Result<bool, Refused> {
        let mut work = Work::new(kind, None, body);
        work.due_ms = now_ms() + u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        let bytes = serde_json::to_vec(&work).expect("work serializes");
        let kept = SystemTime::now() + after + self.settings.keep;
        let written = self
            .store
            .put_if(WORK, id, Item::new(bytes, Some(kept)), None)
            .await
            .map_err(|e| Refused::Unavailable(e.0))?;
        if written {
            self.active
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(written)
    }

    /// Makes each work of `ids` (of `kind`, `body` its own) due: accepted anew when there is
    /// none (or it ended), marked to run again when a runner holds it (more came while it ran),
    /// due now otherwise; then run. What brings more of a kind of work one run takes all of (a
    /// subscription's events), counted in no caller's share. How many could not be made due
    /// (the store did not answer; they are not lost when a record exists: its next run takes
    /// what came).
    pub(crate) async fn due_all(self: &Arc<Self>, kind: &str, ids: Vec<(String, Value)>) -> usize {
        let made: Vec<Result<Option<ToBegin>, StateError>> = stream::iter(ids)
            .map(|(id, body)| async move {
                let made = self.make_due(kind, &id, body).await?;
                Ok(made.map(|fresh| (id, fresh)))
            })
            .buffer_unordered(self.settings.at_once)
            .collect()
            .await;
        let mut failed = 0;
        let mut to_start = Vec::new();
        for made in made {
            match made {
                Ok(Some(start)) => to_start.push(start),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(target: "oxp::work", error = %e, "work not made due");
                    failed += 1;
                }
            }
        }
        self.begin(to_start).await;
        failed
    }

    /// Makes work `id` due (see [`Runner::due_all`]); what to start: `Some((work))` when it was
    /// accepted anew here, `Some(None)` when it is due now, `None` when a running one takes it.
    async fn make_due(
        &self,
        kind: &str,
        id: &str,
        body: Value,
    ) -> Result<Option<Option<Held>>, StateError> {
        for _ in 0..16 {
            let found = self.read(id).await?;
            let now = now_ms();
            let (next, old, start) = match &found {
                None => (self.fresh(kind, None, body.clone()), None, Some(true)),
                Some((w, item)) if w.done => {
                    (self.fresh(kind, None, body.clone()), Some(item), Some(true))
                }
                Some((w, item)) if w.running(now) => {
                    let mut next = w.clone();
                    next.again = true;
                    (next, Some(item), None)
                }
                Some((w, item)) => {
                    let mut next = w.clone();
                    next.wake();
                    (next, Some(item), Some(false))
                }
            };
            let bytes = serde_json::to_vec(&next).expect("work serializes");
            let expires = match (start, old) {
                (Some(true), _) | (_, None) => self.expires(),
                (_, Some(item)) => item.expires,
            };
            let item = Item::new(bytes, expires);
            let written = self
                .store
                .put_if(WORK, id, item.clone(), old.map(|i| i.value.as_slice()))
                .await?;
            if written {
                return Ok(start.map(|fresh| fresh.then_some((next, item))));
            }
        }
        Err(StateError("work is made due too often at once".into()))
    }

    /// Refuses when the caller of `share` holds its whole share.
    async fn within_share(&self, share: Option<&str>) -> Result<(), Refused> {
        let Some(caller) = share else {
            return Ok(());
        };
        let most = self.settings.per_caller;
        let held = self
            .store
            .list(&of_caller(caller), None, most)
            .await
            .map_err(|e| Refused::Unavailable(e.0))?;
        if held.len() >= most {
            return Err(Refused::CallerFull);
        }
        Ok(())
    }

    /// New work, held from the start by this process when it runs it here (no sweep takes it
    /// meanwhile).
    fn fresh(&self, kind: &str, share: Option<&str>, body: Value) -> Work {
        let mut work = Work::new(kind, share, body);
        if self.local() {
            work.claim(&self.owner, self.settings.lease, now_ms());
        }
        work
    }

    /// Counts work `id`, just kept, in its caller's share.
    async fn counted(&self, id: &str, work: &Work) -> Result<(), Refused> {
        let Some(caller) = &work.share else {
            return Ok(());
        };
        let mark = Item::new(Vec::new(), self.expires());
        self.store
            .put(&of_caller(caller), id, mark)
            .await
            .map_err(|e| Refused::Unavailable(e.0))
    }

    /// Takes work `id`'s mark out of its caller's share again (the work was not kept).
    async fn uncount(&self, id: &str, work: &Work) {
        if let Some(caller) = &work.share
            && let Err(e) = self.store.delete(&of_caller(caller), id).await
        {
            tracing::warn!(target: "oxp::work", error = %e, "a share's mark not taken back: it lapses with its expiry");
        }
    }

    /// Runs `work`: each id with its record when it was just accepted here (held by this
    /// process already), else claimed now if claimable; or sends the ids to the queue.
    async fn begin(self: &Arc<Self>, work: Vec<ToBegin>) {
        if work.is_empty() {
            return;
        }
        self.active
            .store(true, std::sync::atomic::Ordering::Relaxed);
        match self.wake.get() {
            Some(wake) => {
                let ids: Vec<String> = work.into_iter().map(|(id, _)| id).collect();
                for batch in ids.chunks(WAKE_BATCH) {
                    if let Err(e) = wake.wake(batch.to_vec()).await {
                        // Kept: the next sweep runs it.
                        tracing::warn!(target: "oxp::work", error = %e, "work not queued: the next sweep runs it");
                    }
                }
            }
            None => {
                for (id, held) in work {
                    let this = self.clone();
                    tokio::spawn(async move {
                        let held = match held {
                            Some(held) => Some(held),
                            None => this.claim(&id).await.ok().flatten(),
                        };
                        if let Some(held) = held {
                            this.execute(id, held, None).await;
                        }
                    });
                }
            }
        }
    }

    /// Makes work `id` due now (woken from waiting, or sooner than its retry) and runs it; a
    /// run holding it already is left alone. Whether there is such work.
    pub(crate) async fn wake(self: &Arc<Self>, id: &str) -> Result<bool, StateError> {
        let now = now_ms();
        let woken = self
            .update(id, |w| {
                let held = w.lease.as_ref().is_some_and(|l| l.until_ms > now);
                if held || (!w.waiting && w.due_ms <= now) {
                    return false;
                }
                w.wake();
                true
            })
            .await?;
        if woken.is_none() && !self.alive(id).await? {
            return Ok(false);
        }
        self.begin(vec![(id.to_owned(), None)]).await;
        Ok(true)
    }

    /// Ends work `id` this runner holds without its handler's outcome (its protocol answered it
    /// otherwise: dead-lettered at shutdown): not run again.
    pub(crate) async fn end(&self, id: &str) -> Result<(), StateError> {
        let mut share = None;
        let ended = self
            .if_mine(id, None, Some(SystemTime::now() + ENDED_KEPT), |w| {
                share = w.share.clone();
                w.again = false;
                w.end();
            })
            .await?;
        if ended.is_some()
            && let Some(caller) = share
        {
            self.store.delete(&of_caller(&caller), id).await?;
        }
        Ok(())
    }

    /// Whether any work whose id starts with `prefix` is kept (accepted and not ended).
    pub(crate) async fn alive_under(&self, prefix: &str) -> Result<bool, StateError> {
        // Ids sort as strings: the first after the prefix itself is the first that has it.
        let first = self.store.list(WORK, Some(prefix), 8).await?;
        Ok(first
            .iter()
            .take_while(|(id, _)| id.starts_with(prefix))
            .any(|(_, item)| serde_json::from_slice::<Work>(&item.value).is_ok_and(|w| !w.done)))
    }

    /// Whether work `id` is kept (accepted and not ended).
    pub(crate) async fn alive(&self, id: &str) -> Result<bool, StateError> {
        Ok(self.read(id).await?.is_some_and(|(w, _)| !w.done))
    }

    async fn read(&self, id: &str) -> Result<Option<(Work, Item)>, StateError> {
        let Some(item) = self.store.get(WORK, id).await? else {
            return Ok(None);
        };
        match serde_json::from_slice(&item.value) {
            Ok(work) => Ok(Some((work, item))),
            Err(_) => Err(StateError("a work record does not read".into())),
        }
    }

    /// `change` applied to work `id` (compare-and-swap, retried on a concurrent write); the
    /// record as written, or `None` when there is none or `change` declines.
    async fn update(
        &self,
        id: &str,
        change: impl FnMut(&mut Work) -> bool,
    ) -> Result<Option<Work>, StateError> {
        Ok(self
            .update_until(id, None, change, None)
            .await?
            .map(|(work, _)| work))
    }

    /// [`Runner::update`] starting from `known` (the record as this runner last wrote it, if
    /// it did: no read unless another process wrote since), the record then kept until
    /// `expires` when given (else as it was). The record and item as written.
    async fn update_until(
        &self,
        id: &str,
        mut known: Option<Item>,
        mut change: impl FnMut(&mut Work) -> bool,
        expires: Option<SystemTime>,
    ) -> Result<Option<Held>, StateError> {
        for _ in 0..16 {
            let (fresh, (mut work, item)) = match known.take() {
                Some(item) => match serde_json::from_slice(&item.value) {
                    Ok(work) => (false, (work, item)),
                    Err(_) => continue,
                },
                None => match self.read(id).await? {
                    Some(found) => (true, found),
                    None => return Ok(None),
                },
            };
            if !change(&mut work) {
                // A refusal counts only on the stored record, not on what this runner wrote.
                if fresh {
                    return Ok(None);
                }
                continue;
            }
            let bytes = serde_json::to_vec(&work).expect("work serializes");
            let next = Item::new(bytes, expires.or(item.expires));
            if self
                .store
                .put_if(WORK, id, next.clone(), Some(&item.value))
                .await?
            {
                return Ok(Some((work, next)));
            }
        }
        Err(StateError(
            "a work record is updated too often at once".into(),
        ))
    }

    /// [`Runner::update_until`] of work `id` only while this runner holds it: `change` made
    /// to the record if its lease is this runner's (the one rule of every outcome it writes).
    async fn if_mine(
        &self,
        id: &str,
        known: Option<Item>,
        expires: Option<SystemTime>,
        mut change: impl FnMut(&mut Work),
    ) -> Result<Option<Held>, StateError> {
        let owner = &self.owner;
        self.update_until(
            id,
            known,
            |w| {
                let mine = w.held_by(owner);
                if mine {
                    change(w);
                }
                mine
            },
            expires,
        )
        .await
    }

    /// Takes work `id` under a lease, if it is claimable now.
    async fn claim(&self, id: &str) -> Result<Option<Held>, StateError> {
        if self.stopping.is_cancelled() {
            return Ok(None);
        }
        let (owner, lease, now) = (&self.owner, self.settings.lease, now_ms());
        self.update_until(
            id,
            None,
            |w| {
                if !w.claimable(now) {
                    return false;
                }
                w.claim(owner, lease, now);
                true
            },
            None,
        )
        .await
    }

    /// Runs claimed work `id` to its outcome, renewing its lease meanwhile.
    async fn execute(self: Arc<Self>, id: String, held: Held, deadline: Option<Instant>) {
        let (work, item) = held;
        let Some(handler) = self.handler(&work.kind) else {
            tracing::error!(target: "oxp::work", kind = work.kind.as_str(), "no handler runs this kind of work here: let go");
            let later = now_ms() + self.settings.backoff(work.attempts);
            let _ = self
                .update(&id, |w| {
                    let mine = w.held_by(&self.owner);
                    if mine {
                        w.retry(later, "no handler runs this kind of work here");
                    }
                    mine
                })
                .await;
            return;
        };
        let _slot = self.slots.clone().acquire_owned().await;
        let stop = Cancellation::new();
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), stop.clone());
        if work.interrupted {
            tracing::warn!(target: "oxp::work", kind = work.kind.as_str(), attempt = work.attempts, "work taken over after its run ended unfinished");
        }
        // The record as last written here: the renewals' and then the outcome's starting point.
        let last = std::sync::Mutex::new(item);
        let renewing = self.renew(&id, stop.clone(), &last);
        let run = Run {
            deadline,
            stop: stop.clone(),
        };
        let outcome = tokio::select! {
            outcome = handler.run(&id, &work, run) => Some(outcome),
            () = renewing => None,
        };
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        match outcome {
            // Lost: another runner has it (or the process let it go at shutdown).
            None => {}
            Some(outcome) => {
                let known = last.into_inner().unwrap_or_else(|p| p.into_inner());
                if let Err(e) = self.finish(&id, &work, known, &*handler, outcome).await {
                    tracing::error!(target: "oxp::work", error = %e, "work outcome not recorded: it runs again once its lease lapses");
                }
            }
        }
        if self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
        {
            self.idle.notify_waiters();
        }
    }

    /// Renews work `id`'s lease while it runs; returns (and fires `stop`) once the lease is
    /// lost, which ends the run.
    async fn renew(&self, id: &str, stop: Cancellation, last: &std::sync::Mutex<Item>) {
        let every = self.settings.lease / 3;
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = stop.cancelled() => return,
            }
            let (owner, lease) = (&self.owner, self.settings.lease);
            let known = last.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let renewed = self
                .update_until(id, Some(known), |w| w.extend(owner, lease, now_ms()), None)
                .await;
            match renewed {
                Ok(Some((_, item))) => *last.lock().unwrap_or_else(|p| p.into_inner()) = item,
                // The store did not answer: the lease still runs; try again.
                Err(e) => {
                    tracing::warn!(target: "oxp::work", error = %e, "lease not renewed");
                }
                Ok(None) => {
                    tracing::warn!(target: "oxp::work", "lease lost: another runner has the work");
                    stop.cancel();
                    return;
                }
            }
        }
    }

    /// Ends a run as `outcome` says.
    async fn finish(
        &self,
        id: &str,
        work: &Work,
        known: Item,
        handler: &dyn Handler,
        outcome: Outcome,
    ) -> Result<(), StateError> {
        match outcome {
            Outcome::Done => {
                let mut ended = false;
                let written = self
                    .if_mine(id, Some(known), Some(SystemTime::now() + ENDED_KEPT), |w| {
                        ended = w.end();
                    })
                    .await?;
                match written {
                    Some(_) if ended => {
                        if let Some(caller) = &work.share {
                            self.store.delete(&of_caller(caller), id).await?;
                        }
                    }
                    // More came while it ran: again, at once.
                    Some(_) => self.restart(id),
                    None => {}
                }
                Ok(())
            }
            Outcome::Park => {
                self.if_mine(id, Some(known), None, |w| {
                    w.park();
                })
                .await?;
                Ok(())
            }
            Outcome::Continue => {
                self.if_mine(id, Some(known), None, |w| {
                    w.go_on(now_ms());
                })
                .await?;
                // Anywhere: here now, or on the queue for the next worker.
                self.restart(id);
                Ok(())
            }
            Outcome::After(wait) => {
                let due = now_ms() + u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                // Kept at least a full keep past when it is due (work may wait long).
                let kept = SystemTime::now() + wait + self.settings.keep;
                self.if_mine(id, Some(known), Some(kept), |w| w.go_on(due))
                    .await?;
                Ok(())
            }
            Outcome::Retry(why) if work.failures + 1 >= self.settings.max_attempts => {
                tracing::error!(target: "oxp::work", kind = work.kind.as_str(), attempts = work.attempts, reason = why.as_str(), "work given up after its last attempt");
                handler.give_up(id, work, &why).await;
                self.forget(id, work.share.as_deref()).await
            }
            Outcome::Retry(why) => {
                let due = now_ms() + self.settings.backoff(work.failures + 1);
                tracing::warn!(target: "oxp::work", kind = work.kind.as_str(), attempt = work.attempts, reason = why.as_str(), "work to be retried");
                self.if_mine(id, Some(known), None, |w| {
                    w.retry(due, &why);
                })
                .await?;
                Ok(())
            }
        }
    }

    /// Runs work `id` again at once (more came for it while it ran).
    fn restart(&self, id: &str) {
        let Some(this) = self.this.get().and_then(std::sync::Weak::upgrade) else {
            return;
        };
        let id = id.to_owned();
        tokio::spawn(async move { this.begin(vec![(id, None)]).await });
    }

    async fn forget(&self, id: &str, share: Option<&str>) -> Result<(), StateError> {
        self.store.delete(WORK, id).await?;
        match share {
            Some(caller) => self.store.delete(&of_caller(caller), id).await,
            None => Ok(()),
        }
    }

    /// Runs every record claimable now (a crash's lapsed leases, work a shutdown let go,
    /// retries that came due): spawned here, or (`deadline`: an executor that stops) run
    /// before it. How many were taken.
    pub(crate) async fn sweep(self: &Arc<Self>, deadline: Option<Instant>) -> usize {
        let mut taken = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = match self.store.list(WORK, after.as_deref(), PAGE).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(target: "oxp::work", error = %e, "work not swept");
                    break;
                }
            };
            let now = now_ms();
            for (id, item) in &page {
                let claimable =
                    serde_json::from_slice::<Work>(&item.value).is_ok_and(|w| w.claimable(now));
                if claimable && let Ok(Some(work)) = self.claim(id).await {
                    taken.push((id.clone(), work));
                }
            }
            match page.last() {
                Some((last, _)) if page.len() == PAGE => after = Some(last.clone()),
                _ => break,
            }
        }
        let count = taken.len();
        if deadline.is_some() {
            stream::iter(taken)
                .for_each_concurrent(self.settings.at_once, |(id, work)| {
                    self.clone().execute(id, work, deadline)
                })
                .await;
        } else {
            for (id, work) in taken {
                let this = self.clone();
                tokio::spawn(async move { this.execute(id, work, None).await });
            }
        }
        count
    }

    /// Runs each of `ids` claimable now before `deadline` (the worker role's messages).
    pub(crate) async fn run_now(self: &Arc<Self>, ids: &[String], deadline: Option<Instant>) {
        stream::iter(ids.iter().cloned())
            .for_each_concurrent(self.settings.at_once, |id| async move {
                if let Ok(Some(work)) = self.claim(&id).await {
                    self.clone().execute(id, work, deadline).await;
                }
            })
            .await;
    }

    /// Sweeps every [`Settings::tick`] until the process stops (a local server, a container):
    /// work a crashed process held is taken over within its lease and a tick. `now`: sweep at
    /// once too, and on every tick (an earlier run of this server, or another process sharing
    /// the store, may have left work); else only once this process accepted work.
    pub(crate) fn sweep_every_tick(self: &Arc<Self>, now: bool) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if now {
            self.active
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let this = Arc::downgrade(self);
        let tick = self.settings.tick;
        let stopping = self.stopping.clone();
        runtime.spawn(async move {
            if !now {
                tokio::select! {
                    () = tokio::time::sleep(tick) => {}
                    () = stopping.cancelled() => return,
                }
            }
            loop {
                let Some(runner) = this.upgrade() else { return };
                if runner.active.load(std::sync::atomic::Ordering::Relaxed) {
                    runner.sweep(None).await;
                }
                drop(runner);
                tokio::select! {
                    () = tokio::time::sleep(tick) => {}
                    () = stopping.cancelled() => return,
                }
            }
        });
    }

    /// At shutdown: claims nothing more, waits up to `timeout` for the work running here,
    /// then stops the rest and lets it go (due now, a takeover for whoever runs it next: a
    /// process sharing the store, or this server when it starts again). How many were let go.
    pub(crate) async fn drain(&self, timeout: Duration) -> usize {
        self.stopping.cancel();
        let all_done = async {
            loop {
                let idle = self.idle.notified();
                if self
                    .running
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_empty()
                {
                    return;
                }
                idle.await;
            }
        };
        if tokio::time::timeout(timeout, all_done).await.is_ok() {
            return 0;
        }
        let left: Vec<(String, Cancellation)> = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        for (id, stop) in &left {
            // Let go first, then stopped: the run's own ending then finds the work no longer
            // its own and records nothing over the release (a takeover).
            let owner = &self.owner;
            if let Err(e) = self
                .update(id, |w| {
                    let mine = w.held_by(owner);
                    if mine {
                        w.release();
                    }
                    mine
                })
                .await
            {
                tracing::warn!(target: "oxp::work", error = %e, "work not let go: it is taken over once its lease lapses");
            }
            stop.cancel();
        }
        if !left.is_empty() {
            tracing::warn!(target: "oxp::work", let_go = left.len(), "unfinished work let go at shutdown: it is taken over");
        }
        left.len()
    }
}

/// The worker role's messages of the runner: work to run now, or a sweep (the schedule's).
pub(crate) struct WorkRecords(pub(crate) Arc<Runner>);

impl RecordHandler for WorkRecords {
    fn handle<'a>(&'a self, body: &'a str, context: CallContext) -> BoxFuture<'a, Handled> {
        Box::pin(async move {
            let Ok(queued) = serde_json::from_str::<Queued>(body) else {
                return Handled::NotMine;
            };
            if queued.oxp_work.len() > WAKE_BATCH
                || (queued.oxp_work.is_empty() && !queued.oxp_sweep)
            {
                return Handled::NotMine;
            }
            // Work another runner holds, or that ended, needs nothing from this message: the
            // record is the truth, and a lapsed lease is the next sweep's.
            self.0.run_now(&queued.oxp_work, context.deadline).await;
            if queued.oxp_sweep {
                self.0.sweep(context.deadline).await;
            }
            Handled::Done
        })
    }

    /// The worker's schedule (template.yaml: every minute): work whose process died, retries
    /// come due, work whose queued message was lost.
    fn tick(&self, context: CallContext) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.0.sweep(context.deadline).await;
        })
    }
}

/// The body of the queued message that runs `ids`.
pub(crate) fn queued_work(ids: Vec<String>) -> String {
    serde_json::to_string(&Queued {
        oxp_work: ids,
        oxp_sweep: false,
    })
    .expect("messages serialize")
}

#[cfg(test)]
mod tests;
