//! Accepting work: kept (holding a slot of its caller's share) before the caller is answered,
//! then begun here or sent to the queue; made due again when more comes or someone answers.

use super::*;
use record::State;

impl Runner {
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
        self.submit_beside(kind, id, share, body, async { Ok(()) })
            .await
    }

    /// [`Runner::submit`] with `first` (what the work's run reads: its protocol's own record)
    /// written beside the work's record, so its caller waits once, not twice. The work begins
    /// only once `first` is done; when `first` fails or the work is refused, the work is not
    /// kept (what `first` wrote is its caller's to take back).
    pub(crate) async fn submit_beside(
        self: &Arc<Self>,
        kind: &str,
        id: &str,
        share: Option<&str>,
        body: Value,
        first: impl Future<Output = Result<(), Refused>>,
    ) -> Result<bool, Refused> {
        // Here, new work is held by this runner from its first write (no other process takes
        // it meanwhile): its slot in the caller's share is taken beside the writes, and the
        // work taken back when the share was full. Work that goes to a queue is written
        // unheld, for a worker (or its sweep) to take at once: its slot is taken first.
        let beside = self.local();
        let mut work = self.fresh(kind, share, body);
        // The slot to try first; taken already when the work goes to a queue.
        work.slot = share.map(|_| self.share.guess());
        if let (Some(caller), Some(guess), false) = (share, &work.slot, beside) {
            work.slot = Some(self.take_slot(caller, id, guess).await?);
        }
        // The record, what its run reads and (here) its slot, side by side: one round trip's
        // wait (on the embedded store, one commit). The record names the slot tried first;
        // when another was taken, it is written again below.
        let records = self.records();
        let (first, kept, slot) = tokio::join!(
            first,
            records.write(id, &work, None, self.expires()),
            async {
                match (share, &work.slot) {
                    (Some(caller), Some(guess)) if beside => {
                        self.take_slot(caller, id, guess).await.map(Some)
                    }
                    _ => Ok(work.slot.clone()),
                }
            },
        );
        // What this call holds of the share: only that is given back.
        let (taken, room) = match slot {
            Ok(taken) => (taken, Ok(())),
            Err(refused) => (None, Err(refused)),
        };
        let item = match kept {
            Ok(item) => item,
            Err(e) => {
                self.give_back(share, id, taken.as_deref()).await;
                return Err(Refused::Unavailable(e.0));
            }
        };
        let Some(item) = item else {
            // A repeat: the first holds a slot of its own (and has its record). Ended work
            // leaves no record: its id coming again is new work.
            self.give_back(share, id, taken.as_deref()).await;
            return first.map(|()| false);
        };
        let first_kept = first.is_ok();
        if let Err(refused) = first.and(room) {
            // Not accepted after all: nothing of it is kept.
            work.slot = taken;
            let Err(e) = self.forget(id, &work).await else {
                return Err(refused);
            };
            // Its record stays, and it will run (once its lease lapses): when what its run
            // reads was kept too, its caller is told what is true, that it was accepted (it
            // holds no slot of its share), not refused and then answered anyway.
            if first_kept {
                tracing::warn!(target: "oxp::work", error = %e, "work its share refused not taken back: accepted after all, it runs once its lease lapses");
                return Ok(true);
            }
            tracing::warn!(target: "oxp::work", error = %e, "refused work not taken back: its run finds nothing to do");
            return Err(refused);
        }
        let mut held = (work, item);
        if taken != held.0.slot {
            match self.name_slot(id, share, held, taken).await {
                Some(named) => held = named,
                None => return Ok(true),
            }
        }
        self.begin(vec![(id.to_owned(), Some(held))]).await;
        Ok(true)
    }

    /// Work `id`, `held` as first written, took another slot of `share` than the one tried
    /// first (`taken`): its record names the one it holds. `None`: it ended meanwhile (a
    /// shutdown's end), its slot given back.
    async fn name_slot(
        &self,
        id: &str,
        share: Option<&str>,
        held: (Work, Item),
        taken: Option<String>,
    ) -> Option<(Work, Item)> {
        let named = self
            .update_then(
                id,
                Some(held.1.clone()),
                |w| {
                    w.slot.clone_from(&taken);
                    true
                },
                |_| None,
            )
            .await;
        match named {
            Ok(Some(named)) => Some(named),
            Ok(None) => {
                self.give_back(share, id, taken.as_deref()).await;
                None
            }
            Err(e) => {
                tracing::warn!(target: "oxp::work", error = %e, "work's slot not named in its record: it counts until it expires");
                Some(held)
            }
        }
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
        work.go_on(now_ms() + u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
        let kept = SystemTime::now() + after + self.settings.keep;
        let written = self
            .records()
            .write(id, &work, None, Some(kept))
            .await
            .map_err(|e| Refused::Unavailable(e.0))?
            .is_some();
        if written {
            self.active.store(true, Relaxed);
        }
        Ok(written)
    }

    /// Makes each work of `ids` (of `kind`, `body` its own) due: accepted anew when there is
    /// none (or it ended), marked to run again when a runner holds it (more came while it ran),
    /// left as it is when it waits to be retried (a callback's `Retry-After` or the backoff
    /// is kept: what came goes with it then), due now otherwise; then run. What brings more of a kind of work one run takes all of (a
    /// subscription's events), counted in no caller's share. How many could not be made due
    /// (the store did not answer; they are not lost when a record exists: its next run takes
    /// what came).
    pub(crate) async fn due_all(
        self: &Arc<Self>,
        kind: &str,
        ids: Vec<(String, Value, Option<String>)>,
    ) -> usize {
        let made: Vec<Result<Option<ToBegin>, StateError>> = stream::iter(ids)
            .map(|(id, body, caller)| async move {
                let made = self.make_due(kind, &id, body, caller.as_deref()).await?;
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

    /// Makes work `id` due (see [`Runner::due_all`]); what to start: `Some(Some(held))` when
    /// it was accepted anew here, `Some(None)` when it is due now, `None` when a running one
    /// takes it or it waits to be retried.
    pub(super) async fn make_due(
        &self,
        kind: &str,
        id: &str,
        body: Value,
        caller: Option<&str>,
    ) -> Result<Option<Option<Held>>, StateError> {
        let (created, running) = (AtomicBool::new(false), AtomicBool::new(false));
        let put_off = AtomicBool::new(false);
        let made = self
            .records()
            .upsert(
                id,
                None,
                || {
                    // Each try says afresh what it found: a record seen running by a try
                    // whose write lost may have ended before this one.
                    created.store(true, Relaxed);
                    running.store(false, Relaxed);
                    put_off.store(false, Relaxed);
                    Some(self.fresh(kind, caller, body.clone()))
                },
                |w| {
                    let now = now_ms();
                    created.store(false, Relaxed);
                    running.store(w.running(now), Relaxed);
                    put_off.store(w.put_off(now), Relaxed);
                    if running.load(Relaxed) {
                        w.again = true;
                    } else if put_off.load(Relaxed) {
                        // Not woken sooner than its retry: a callback that asked for time (or
                        // is failing) gets it, however many events come meanwhile.
                        return false;
                    } else {
                        w.wake();
                    }
                    true
                },
                |_, old| old.map_or_else(|| self.expires(), |old| old.expires),
            )
            .await?;
        Ok(match made {
            _ if running.load(Relaxed) || put_off.load(Relaxed) => None,
            Some(held) if created.load(Relaxed) => Some(Some(held)),
            _ => Some(None),
        })
    }

    /// New work of `caller`'s, held from the start by this process when it runs it here (no
    /// sweep takes it meanwhile).
    pub(super) fn fresh(&self, kind: &str, caller: Option<&str>, body: Value) -> Work {
        let mut work = Work::new(kind, caller, body);
        if self.local() {
            work.claim(&self.owner, self.settings.lease, now_ms());
        }
        work
    }

    /// Runs `work`: each id with its record when it was just accepted here (held by this
    /// process already), else claimed now if claimable; or sends the ids to the queue.
    pub(super) async fn begin(self: &Arc<Self>, work: Vec<ToBegin>) {
        if work.is_empty() {
            return;
        }
        self.active.store(true, Relaxed);
        match self.wake.get() {
            Some(wake) => {
                let ids: Vec<String> = work.into_iter().map(|(id, _)| id).collect();
                for batch in ids.chunks(WAKE_BATCH) {
                    if let Err(e) = wake.wake(batch.to_vec(), Duration::ZERO).await {
                        // Kept: the next sweep runs it.
                        tracing::warn!(target: "oxp::work", error = %e, "work not queued: the next sweep runs it");
                    }
                }
            }
            None => {
                for (id, held) in work {
                    let this = self.clone();
                    self.in_hand.fetch_add(1, Relaxed);
                    tokio::spawn(async move {
                        let held = match held {
                            Some(held) => Some(held),
                            None => this.claim(&id).await.ok().flatten(),
                        };
                        if let Some(held) = held {
                            this.clone().execute(id, held, None).await;
                        }
                        this.out_of_hand();
                    });
                }
            }
        }
    }

    /// Makes work `id` due now (woken from waiting, or sooner than its retry) and runs it; a
    /// run holding it already is left alone. Whether there is such work.
    pub(crate) async fn wake(self: &Arc<Self>, id: &str) -> Result<bool, StateError> {
        let now = now_ms();
        // Run here: woken and claimed in one write (not a second read and write to claim).
        let here = self.local() && !self.stopping.is_cancelled();
        let (owner, lease) = (&self.owner, self.settings.lease);
        let woken = self
            .update_then(
                id,
                None,
                |w| {
                    let queued_now = matches!(w.state, State::Queued { due_ms } if due_ms <= now);
                    if w.running(now) || (!here && queued_now) {
                        return false;
                    }
                    w.wake();
                    if here {
                        w.claim(owner, lease, now);
                    }
                    true
                },
                |_| None,
            )
            .await?;
        let held = match woken {
            Some(held) if here => Some(held),
            Some(_) => None,
            None if !self.alive(id).await? => return Ok(false),
            None => None,
        };
        self.begin(vec![(id.to_owned(), held)]).await;
        Ok(true)
    }
}

impl Runner {
    /// Has work `id`, put off until `due_ms`, run then: here, the sweeper wakes for it (it
    /// reads what is due then); in Lambda, the queue's message is delayed until then. Either
    /// way no turn is held meanwhile, and the sweep finds it if this process dies first.
    pub(super) async fn later(&self, id: &str, due_ms: u64) {
        let wait = Duration::from_millis(due_ms.saturating_sub(now_ms()));
        match self.wake.get() {
            Some(wake) => {
                if let Err(e) = wake.wake(vec![id.to_owned()], wait).await {
                    tracing::warn!(target: "oxp::work", work_id = id, error = %e, "work put off not queued: the next sweep runs it");
                }
            }
            None => {
                if self.next_due.fetch_min(due_ms, Relaxed) > due_ms {
                    self.sooner.notify_one();
                }
            }
        }
    }
}
