//! Ending a run as its handler's outcome says: done (the record, its slot and its kept result
//! go), parked, retried after a backoff, or given up after the last attempt.

use super::*;
use futures_util::FutureExt;

impl Runner {
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
            Some(format!("{why}; gave up after {}", attempts(failures)))
        } else if at_least.is_some_and(|w| w > retries.max_delay) {
            Some(format!(
                "{why} with Retry-After {} s, beyond the longest wait",
                wait.as_secs()
            ))
        } else if out_of_time {
            Some(format!(
                "{why}; delivery time ran out after {}",
                attempts(failures)
            ))
        } else {
            None
        };
        if let Some(reason) = gave_up {
            return self.give_up(id, work, handler, &reason).await;
        }
        let due = now + wait.as_millis() as u64;
        tracing::warn!(target: "oxp::work", work_id = id, kind = work.kind.as_str(), attempt = failures, reason = why, "work to be retried");
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
        tracing::error!(target: "oxp::work", work_id = id, kind = work.kind.as_str(), attempts = work.attempts, reason, "work given up");
        let result = match &work.result {
            Some(kept) => kept.read(&*self.store).await.ok(),
            None => None,
        };
        let told = handler.give_up(id, work, reason, result.as_deref());
        let goes_on = std::panic::AssertUnwindSafe(told)
            .catch_unwind()
            .await
            .unwrap_or_else(|_| {
                tracing::error!(target: "oxp::work", work_id = id, kind = work.kind.as_str(), "giving up a work panicked");
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

/// `n` attempts, as a reason says it ("1 attempt", "3 attempts").
fn attempts(n: u32) -> String {
    match n {
        1 => "1 attempt".to_owned(),
        n => format!("{n} attempts"),
    }
}
