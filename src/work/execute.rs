//! Running work: claimed under a lease, renewed while its handler runs (each run taking a turn
//! of its caller's), its result kept in the record before its first delivery, ended as the
//! handler's outcome says (done, parked, retried with a backoff, given up after the last
//! attempt). A handler that panics gives its work up, with a status its caller sees.

use super::*;
use futures_util::FutureExt;
use std::future::Future;

/// `run`, a handler's future, with a panic caught: the work is given up (the panic's text
/// stays in the log).
async fn caught(kind: &str, run: impl Future<Output = Outcome>) -> Outcome {
    match std::panic::AssertUnwindSafe(run).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(_) => {
            tracing::error!(target: "oxp::work", kind, "the handler of a work panicked: the work is given up");
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
            tracing::error!(target: "oxp::work", kind = work.kind.as_str(), "no handler runs this kind of work here: let go");
            let due = now_ms() + self.settings.retries.backoff(work.attempts).as_millis() as u64;
            let put_off = self.if_mine(
                &id,
                Some(item),
                |_| None,
                |w| {
                    w.retry(due, "no handler runs this kind of work here");
                },
            );
            if let Ok(Some(_)) = put_off.await {
                self.later(&id, due).await;
            }
            return;
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
        if work.result.is_some() && work.attempts > 1 {
            tracing::info!(target: "oxp::work", kind = work.kind.as_str(), attempt = work.attempts, "work taken over: its kept result is delivered");
        } else if work.interrupted {
            tracing::warn!(target: "oxp::work", kind = work.kind.as_str(), attempt = work.attempts, "work taken over after its run ended unfinished");
        }
        let renewing = self.renew(&id, going.stop.clone(), &last);
        let run = Run {
            deadline,
            stop: going.stop,
            cancel: going.cancel,
        };
        let caller = work.caller.clone().unwrap_or_default();
        let turned = async {
            // A turn of its caller's, or (an executor that stops) on elsewhere.
            let until = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 30));
            let Ok(_turn) = tokio::time::timeout_at(until.into(), self.turns.take(&caller)).await
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
                tracing::error!(target: "oxp::work", error = %e, "work outcome not recorded: it runs again once its lease lapses");
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
            let outcome = caught(&work.kind, handler.run(id, &work, run.clone())).await;
            let Outcome::Result(bytes) = outcome else {
                return Some((outcome, work));
            };
            match self.keep_result(id, bytes, last).await {
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
            Ok(bytes) => caught(&work.kind, handler.deliver(id, &work, &bytes, run)).await,
            Err(e) => Outcome::Retry(e.0),
        };
        Some((outcome, work))
    }

    /// Keeps `bytes`, the result of work `id`'s run, in its record (this runner's): the record
    /// as written, or `None` when the lease was lost.
    async fn keep_result(
        &self,
        id: &str,
        bytes: Vec<u8>,
        last: &std::sync::Mutex<Item>,
    ) -> Result<Option<Work>, StateError> {
        let kept = crate::state::large::keep(&*self.store, bytes, self.expires()).await?;
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
    pub(super) async fn finish(
        &self,
        id: &str,
        work: &Work,
        known: Item,
        handler: &dyn Handler,
        outcome: Outcome,
    ) -> Result<(), StateError> {
        let now = now_ms();
        let after = |wait: Duration| now + u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
        match outcome {
            Outcome::Done | Outcome::Result(_) => self.ended(id, work, known, None).await,
            Outcome::Kept(until) => self.ended(id, work, known, Some(until)).await,
            Outcome::Park => {
                self.if_mine(id, Some(known), |_| None, Work::park).await?;
                Ok(())
            }
            Outcome::Continue => {
                self.if_mine(
                    id,
                    Some(known),
                    |_| None,
                    |w| {
                        w.failures = 0;
                        w.go_on(now);
                    },
                )
                .await?;
                // Anywhere: here now, or on the queue for the next worker.
                self.restart(id);
                Ok(())
            }
            Outcome::After(wait) => {
                // Kept at least a full keep past when it is due (work may wait long).
                let kept = SystemTime::now() + wait + self.settings.keep;
                let due = after(wait);
                self.if_mine(
                    id,
                    Some(known),
                    |_| Some(kept),
                    |w| {
                        w.failures = 0;
                        w.go_on(due);
                    },
                )
                .await?;
                self.later(id, due).await;
                Ok(())
            }
            Outcome::GiveUp(why) => self.give_up(id, work, handler, &why).await,
            Outcome::Retry(why) => self.failed(id, work, known, handler, &why, None).await,
            Outcome::RetryAfter(why, wait) => {
                self.failed(id, work, known, handler, &why, Some(wait))
                    .await
            }
        }
    }

    /// A run or delivery of work `id` failed (`why`; not to be tried before `at_least`): due
    /// again after the backoff of its kind, or given up after its last attempt, past the
    /// longest wait, or past its delivery's total time.
    async fn failed(
        &self,
        id: &str,
        work: &Work,
        known: Item,
        handler: &dyn Handler,
        why: &str,
        at_least: Option<Duration>,
    ) -> Result<(), StateError> {
        let retries = self.retries(handler);
        let failures = work.failures + 1;
        let wait = retries.backoff(failures).max(at_least.unwrap_or_default());
        let now = now_ms();
        let out_of_time =
            retries
                .total
                .zip(work.delivering_since_ms)
                .is_some_and(|(total, since)| {
                    now + wait.as_millis() as u64 > since + total.as_millis() as u64
                });
        let gave_up = if failures >= retries.max_attempts {
            Some(format!("{why}; gave up after {failures} attempts"))
        } else if at_least.is_some_and(|w| w > retries.max_delay) {
            Some(format!(
                "{why} with Retry-After {} s, beyond the longest wait",
                wait.as_secs()
            ))
        } else if out_of_time {
            Some(format!(
                "{why}; delivery time ran out after {failures} attempts"
            ))
        } else {
            None
        };
        if let Some(reason) = gave_up {
            return self.give_up(id, work, handler, &reason).await;
        }
        let due = now + wait.as_millis() as u64;
        tracing::warn!(target: "oxp::work", kind = work.kind.as_str(), attempt = failures, reason = why, "work to be retried");
        if self
            .if_mine(id, Some(known), |_| None, |w| w.retry(due, why))
            .await?
            .is_some()
        {
            self.later(id, due).await;
        }
        Ok(())
    }

    /// Gives work `id` up (`reason`) through its handler, with its kept result, and forgets it.
    pub(super) async fn give_up(
        &self,
        id: &str,
        work: &Work,
        handler: &dyn Handler,
        reason: &str,
    ) -> Result<(), StateError> {
        tracing::error!(target: "oxp::work", kind = work.kind.as_str(), attempts = work.attempts, reason, "work given up");
        let result = match &work.result {
            Some(kept) => kept.read(&*self.store).await.ok(),
            None => None,
        };
        let told = handler.give_up(id, work, reason, result.as_deref());
        let goes_on = std::panic::AssertUnwindSafe(told)
            .catch_unwind()
            .await
            .unwrap_or_else(|_| {
                tracing::error!(target: "oxp::work", kind = work.kind.as_str(), "giving up a work panicked");
                false
            });
        if !goes_on {
            return self.forget(id, work).await;
        }
        // What failed was given up; the rest goes on at once, its failures counted anew.
        let now = now_ms();
        let on = self.if_mine(
            id,
            None,
            |_| None,
            |w| {
                w.failures = 0;
                w.go_on(now);
            },
        );
        if on.await?.is_some() {
            self.restart(id);
        }
        Ok(())
    }

    /// Work `id` this runner holds ended: its record goes (written already expired) and its
    /// slot in its caller's share is given back (or kept `until`, for what it left); or, when
    /// more came for it while it ran, it is due again at once, kept as any work is.
    async fn ended(
        &self,
        id: &str,
        work: &Work,
        known: Item,
        until: Option<SystemTime>,
    ) -> Result<(), StateError> {
        let ended = AtomicBool::new(false);
        let end = self.if_mine(
            id,
            Some(known),
            |_| {
                let kept = if ended.load(Relaxed) {
                    Duration::ZERO
                } else {
                    self.settings.keep
                };
                Some(SystemTime::now() + kept)
            },
            |w| ended.store(w.end(), Relaxed),
        );
        // Left to whoever holds the record when it was taken over meanwhile (its end gives
        // the slot back).
        let Some(_) = end.await? else {
            return Ok(());
        };
        if !ended.load(Relaxed) {
            self.restart(id);
            return Ok(());
        }
        let (slot, parts) = tokio::join!(self.uncounted(id, work, until), async {
            match &work.result {
                Some(kept) => kept.forget(&*self.store).await,
                None => Ok(()),
            }
        });
        slot.and(parts)
    }

    /// Runs work `id` again at once (more came for it while it ran).
    pub(super) fn restart(&self, id: &str) {
        let Some(this) = self.this.get().and_then(std::sync::Weak::upgrade) else {
            return;
        };
        let id = id.to_owned();
        tokio::spawn(async move { this.begin(vec![(id, None)]).await });
    }

    /// Deletes work `id`, gives back its slot in its caller's share and deletes its kept
    /// result, side by side.
    pub(super) async fn forget(&self, id: &str, work: &Work) -> Result<(), StateError> {
        let (record, slot, parts) = tokio::join!(
            self.store.delete(WORK, id),
            self.uncounted(id, work, None),
            async {
                match &work.result {
                    Some(kept) => kept.forget(&*self.store).await,
                    None => Ok(()),
                }
            }
        );
        record.and(slot).and(parts)
    }
}
