//! Running work: claimed under a lease, renewed while its handler runs, ended as the handler's
//! outcome says (done, parked, retried with a backoff, given up after the last attempt).

use super::*;
use std::sync::atomic::Ordering::Relaxed;

impl Runner {
    /// Ends work `id` this runner holds without its handler's outcome (its protocol answered it
    /// otherwise: dead-lettered at shutdown): not run again.
    pub(crate) async fn end(&self, id: &str) -> Result<(), StateError> {
        // Written already expired: the record goes.
        let ended = self
            .if_mine(id, None, Some(SystemTime::now()), |w| {
                w.again = false;
                w.end();
            })
            .await?;
        match ended {
            Some((work, _)) => self.uncounted(id, &work).await,
            None => Ok(()),
        }
    }

    /// Takes work `id` under a lease, if it is claimable now.
    pub(super) async fn claim(&self, id: &str) -> Result<Option<Held>, StateError> {
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
    pub(super) async fn execute(
        self: Arc<Self>,
        id: String,
        held: Held,
        deadline: Option<Instant>,
    ) {
        let (work, item) = held;
        let Some(handler) = self.handler(&work.kind) else {
            tracing::error!(target: "oxp::work", kind = work.kind.as_str(), "no handler runs this kind of work here: let go");
            let later = now_ms() + self.settings.backoff(work.attempts);
            let _ = self
                .if_mine(&id, Some(item), None, |w| {
                    w.retry(later, "no handler runs this kind of work here");
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
    pub(super) async fn finish(
        &self,
        id: &str,
        work: &Work,
        known: Item,
        handler: &dyn Handler,
        outcome: Outcome,
    ) -> Result<(), StateError> {
        match outcome {
            Outcome::Done => {
                // Ended: the record goes (written already expired), so no sweep reads it again;
                // or (more came while it ran) due again, kept as any work is.
                let ended = std::sync::atomic::AtomicBool::new(false);
                let end = self.if_mine_then(
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
                // Its slot in the caller's share is given back once the record ended; kept
                // when more came while it ran (it runs again at once), and left to whoever
                // holds the record when it was taken over meanwhile (its end gives it back).
                let Some(_) = end.await? else {
                    return Ok(());
                };
                if !ended.load(Relaxed) {
                    self.restart(id);
                    return Ok(());
                }
                self.uncounted(id, work).await
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
                self.forget(id, work).await
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
    pub(super) fn restart(&self, id: &str) {
        let Some(this) = self.this.get().and_then(std::sync::Weak::upgrade) else {
            return;
        };
        let id = id.to_owned();
        tokio::spawn(async move { this.begin(vec![(id, None)]).await });
    }

    /// Deletes work `id` and gives back its slot in its caller's share, side by side.
    pub(super) async fn forget(&self, id: &str, work: &Work) -> Result<(), StateError> {
        let (record, mark) = tokio::join!(self.store.delete(WORK, id), self.uncounted(id, work));
        record.and(mark)
    }
}
