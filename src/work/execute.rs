//! Running work: claimed under a lease, renewed while its handler runs (each run taking a turn
//! of its caller's), its result kept in the record before its first delivery, then ended as
//! the handler's outcome says (`end.rs`). A handler that panics gives its work up, with a
//! status its caller sees.

use super::*;
use crate::state::large::{self, Kept};
use crate::state::share::Full;
use futures_util::FutureExt;
use std::future::Future;

/// Why a result was not kept: its caller's room has no space for it.
pub(super) const NO_ROOM: &str =
    "no room for the result in its caller's share (OXP_WORK_MAX_BYTES_PER_CALLER)";

/// `run`, a handler's future, with a panic caught: the work is given up (the panic's text
/// stays in the log).
async fn caught(id: &str, kind: &str, run: impl Future<Output = Outcome>) -> Outcome {
    match std::panic::AssertUnwindSafe(run).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(_) => {
            tracing::error!(target: "oxp::work", work_id = id, kind, "the handler of a work panicked: the work is given up");
            Outcome::GiveUp("the server failed unexpectedly".into())
        }
    }
}

impl Runner {
    /// Takes work `id` under a lease, if it is claimable now.
    pub(super) async fn claim(&self, id: &str) -> Result<Option<Held>, StateError> {
        if self.stopping.is_cancelled() {
            return Ok(None);
        }
        let (owner, lease, now) = (&self.owner, self.settings.lease, now_ms());
        let sole = self.sole.load(Relaxed);
        self.update_then(
            id,
            None,
            |w| {
                if !w.claimable(now, owner, sole) {
                    return false;
                }
                w.claim(owner, lease, now);
                true
            },
            |_| None,
        )
        .await
    }

    /// Runs claimed work `id` to its outcome, renewing its lease meanwhile.
    pub(super) async fn execute(
        self: Arc<Self>,
        id: String,
        held: Held,
        deadline: Option<Instant>,
    ) {
        let (work, item) = held;
        let Some(handler) = self.handler(&work.kind) else {
            return self.put_off_unhandled(&id, &work, item).await;
        };
        // The record as last written here: the renewals' and then the outcome's starting point.
        let last = Arc::new(std::sync::Mutex::new(item));
        let going = Going {
            stop: Cancellation::new(),
            cancel: Cancellation::new(),
            settle: handler.settle(),
            last: last.clone(),
        };
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), going.clone());
        // Taken from a runner whose run did not end (its lease lapsed, or it let the work go
        // unfinished); a retry of a failed delivery is no takeover.
        if work.interrupted && work.result.is_some() {
            tracing::info!(target: "oxp::work", work_id = id, kind = work.kind.as_str(), attempt = work.attempts, "work taken over: its kept result is delivered");
        } else if work.interrupted {
            tracing::warn!(target: "oxp::work", work_id = id, kind = work.kind.as_str(), attempt = work.attempts, "work taken over after its run ended unfinished");
        }
        let renewing = self.renew(&id, going.stop.clone(), &last);
        let run = Run {
            deadline,
            stop: going.stop,
            cancel: going.cancel,
        };
        // Nobody's work and the anonymous caller's take no share of the turns (`turns.rs`).
        let caller = work.caller.clone().filter(|c| *c != *super::ANONYMOUS);
        let turned = async {
            // A turn of its caller's, or (an executor that stops) on elsewhere.
            let until = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 30));
            let Ok(_turn) =
                tokio::time::timeout_at(until.into(), self.turns.take(caller.as_deref())).await
            else {
                return Some((Outcome::Continue, work.clone()));
            };
            self.run_to_end(&id, work.clone(), &last, &*handler, run)
                .await
        };
        let outcome = tokio::select! {
            outcome = turned => outcome,
            () = renewing => None,
        };
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        // `None`: lost, another runner has it (or the process let it go at shutdown).
        if let Some((outcome, work)) = outcome {
            let known = last.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if let Err(e) = self.finish(&id, &work, known, &*handler, outcome).await {
                tracing::error!(target: "oxp::work", work_id = id.as_str(), error = %e, "work outcome not recorded: it runs again once its lease lapses");
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

    /// Work `id` of a kind no handler here runs, let go to be tried again after its backoff
    /// (by a process that has one).
    async fn put_off_unhandled(&self, id: &str, work: &Work, item: Item) {
        tracing::error!(target: "oxp::work", work_id = id, kind = work.kind.as_str(), "no handler runs this kind of work here: let go");
        let due = now_ms() + self.settings.retries.backoff(work.attempts).as_millis() as u64;
        let put_off = self.if_mine(
            id,
            Some(item),
            |_| None,
            |w| {
                w.retry(due, "no handler runs this kind of work here");
            },
        );
        if let Ok(Some(_)) = put_off.await {
            self.later(id, due).await;
        }
    }

    /// Runs work `id` (unless its result is kept already), keeps its result, and delivers it:
    /// the outcome, and the record as it then is; `None` when the lease was lost meanwhile.
    async fn run_to_end(
        &self,
        id: &str,
        mut work: Work,
        last: &std::sync::Mutex<Item>,
        handler: &dyn Handler,
        run: Run,
    ) -> Option<(Outcome, Work)> {
        if work.result.is_none() {
            let outcome = caught(id, &work.kind, handler.run(id, &work, run.clone())).await;
            let Outcome::Result(bytes) = outcome else {
                return Some((outcome, work));
            };
            let (kept, bytes) = match self.keep_value(id, &work, bytes, handler).await {
                Ok(kept) => kept,
                Err(outcome) => return Some((outcome, work)),
            };
            let written = self.keep_result(id, kept, last).await;
            if !matches!(written, Ok(Some(_))) {
                // Not delivered by this run: what its handler holds for the delivery goes.
                handler.not_kept(id, &work, &bytes).await;
            }
            match written {
                Ok(Some(kept)) => work = kept,
                Ok(None) => return None,
                // Not kept: the run is tried again (a RAP call's idempotency record answers it).
                Err(e) => return Some((Outcome::Retry(format!("result not kept: {e}")), work)),
            }
        }
        let result = match &work.result {
            Some(kept) => kept.read(&*self.store).await,
            None => return Some((Outcome::Done, work)),
        };
        let outcome = match result {
            Ok(bytes) => caught(id, &work.kind, handler.deliver(id, &work, &bytes, run)).await,
            Err(e) => Outcome::Retry(e.0),
        };
        Some((outcome, work))
    }

    /// Keeps `bytes`, work `id`'s result, in the store (its parts in its caller's room), or what
    /// its handler answers instead when the room has no space for it: what was kept, and its
    /// bytes; `Err`: what becomes of the work, its result not kept (and let go by its handler).
    async fn keep_value(
        &self,
        id: &str,
        work: &Work,
        bytes: Vec<u8>,
        handler: &dyn Handler,
    ) -> Result<(Kept, Vec<u8>), Outcome> {
        let room = self.room(work.caller.as_deref());
        let bytes = match large::keep(&*self.store, &bytes, self.expires(), room).await {
            Ok(kept) => return Ok((kept, bytes)),
            Err(Full::Caller) => {
                match caught(id, &work.kind, handler.unkept(id, work, &bytes)).await {
                    Outcome::Result(instead) => instead,
                    other => return Err(other),
                }
            }
            Err(Full::Unavailable(e)) => {
                handler.not_kept(id, work, &bytes).await;
                return Err(Outcome::Retry(format!("result not kept: {e}")));
            }
        };
        match large::keep(&*self.store, &bytes, self.expires(), room).await {
            Ok(kept) => Ok((kept, bytes)),
            Err(full) => {
                handler.not_kept(id, work, &bytes).await;
                Err(Outcome::Retry(match full {
                    Full::Caller => NO_ROOM.into(),
                    Full::Unavailable(e) => format!("result not kept: {e}"),
                }))
            }
        }
    }

    /// Keeps `kept`, the result of work `id`'s run, in its record (this runner's): the record
    /// as written, or `None` when the lease was lost.
    async fn keep_result(
        &self,
        id: &str,
        kept: Kept,
        last: &std::sync::Mutex<Item>,
    ) -> Result<Option<Work>, StateError> {
        let known = last.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let now = now_ms();
        let written = self
            .if_mine(
                id,
                Some(known),
                |_| None,
                |w| {
                    w.result = Some(kept.clone());
                    w.delivering_since_ms = Some(now);
                },
            )
            .await;
        match written {
            Ok(Some((work, item))) => {
                *last.lock().unwrap_or_else(|p| p.into_inner()) = item;
                Ok(Some(work))
            }
            other => {
                let _ = kept.forget(&*self.store).await;
                other.map(|_| None)
            }
        }
    }

    /// Renews work `id`'s lease while it runs; returns (and fires `stop`) once the lease is
    /// lost, which ends the run.
    pub(super) async fn renew(&self, id: &str, stop: Cancellation, last: &std::sync::Mutex<Item>) {
        let every = self.settings.lease / 3;
        loop {
            tokio::select! {
                () = tokio::time::sleep(every) => {}
                () = stop.cancelled() => return,
            }
            let (owner, lease) = (&self.owner, self.settings.lease);
            let known = last.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let renewed = self
                .update_then(
                    id,
                    Some(known),
                    |w| w.extend(owner, lease, now_ms()),
                    |_| None,
                )
                .await;
            match renewed {
                Ok(Some((_, item))) => *last.lock().unwrap_or_else(|p| p.into_inner()) = item,
                // The store did not answer: the lease still runs; try again.
                Err(e) => {
                    tracing::warn!(target: "oxp::work", work_id = id, error = %e, "lease not renewed");
                }
                Ok(None) => {
                    tracing::warn!(target: "oxp::work", work_id = id, "lease lost: another runner has the work");
                    stop.cancel();
                    return;
                }
            }
        }
    }
}
