//! Finding work without a request: the sweep (what is due by the store's index of due work:
//! lapsed leases, retries come due; a process's first sweep reads every record, for what a
//! dead holder of its store or an earlier version left), the worker role's runs, and the
//! shutdown that lets unfinished work go for a takeover.

use super::*;
use oxp_lambda_core::invoke::CANCEL_GRACE;

impl Runner {
    /// Runs every record claimable now: spawned here, or (`deadline`: an executor that stops)
    /// run before it. How many were taken.
    pub(crate) async fn sweep(self: &Arc<Self>, deadline: Option<Instant>) -> usize {
        let first = !self.swept.swap(true, Relaxed);
        let found = if first {
            self.every_record().await
        } else {
            self.store.due(WORK, SystemTime::now(), PAGE).await
        };
        let found = found.unwrap_or_else(|e| {
            tracing::warn!(target: "oxp::work", error = %e, "work not swept");
            Vec::new()
        });
        let (now, sole) = (now_ms(), self.sole.load(Relaxed));
        let mut taken = Vec::new();
        for (id, item) in &found {
            let claimable = serde_json::from_slice::<Work>(&item.value)
                .is_ok_and(|w| w.claimable(now, &self.owner, sole));
            if claimable && let Ok(Some(work)) = self.claim(id).await {
                taken.push((id.clone(), work));
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
                self.in_hand.fetch_add(1, Relaxed);
                tokio::spawn(async move {
                    this.clone().execute(id, work, None).await;
                    this.out_of_hand();
                });
            }
        }
        self.next_sweep().await;
        count
    }

    /// Every work record, page by page (a process's first sweep).
    async fn every_record(&self) -> Result<Vec<(String, Item)>, StateError> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.store.list(WORK, after.as_deref(), PAGE).await?;
            let last = (page.len() == PAGE).then(|| page.last().map(|(id, _)| id.clone()));
            all.extend(page);
            match last.flatten() {
                Some(last) => after = Some(last),
                None => return Ok(all),
            }
        }
    }

    /// When the sweeper wakes next: for the soonest work due before the next tick (a retry, a
    /// lease that lapses), else at the tick. After every sweep, the first too: a retry put off
    /// while the sweeper waited for an earlier one is known only to the store's index once
    /// the sweeper has woken.
    async fn next_sweep(&self) {
        if !self.local() {
            return;
        }
        let until = SystemTime::now() + self.settings.tick;
        let Ok(soonest) = self.store.due(WORK, until, 1).await else {
            return;
        };
        let now = now_ms();
        let due = soonest
            .first()
            .and_then(|(_, item)| serde_json::from_slice::<Work>(&item.value).ok())
            .and_then(|w| w.due_at())
            .map(record::ms)
            .filter(|due| *due > now && *due < record::ms(until));
        if let Some(due) = due {
            self.next_due.fetch_min(due, Relaxed);
        }
    }

    /// Runs each of `ids` claimable now before `deadline` (the worker role's messages). How
    /// many could not be claimed for a store error: the message is then delivered again (SQS
    /// in seconds), not left to the schedule's sweep (a minute).
    pub(crate) async fn run_now(
        self: &Arc<Self>,
        ids: &[String],
        deadline: Option<Instant>,
    ) -> usize {
        let unread = AtomicUsize::new(0);
        stream::iter(ids.iter().cloned())
            .for_each_concurrent(self.settings.at_once, |id| {
                let unread = &unread;
                async move {
                    match self.claim(&id).await {
                        Ok(Some(work)) => self.clone().execute(id, work, deadline).await,
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(target: "oxp::work", work_id = id, error = %e, "a queued piece of work could not be claimed: its message is delivered again");
                            unread.fetch_add(1, Relaxed);
                        }
                    }
                }
            })
            .await;
        unread.into_inner()
    }

    /// Sweeps every [`Settings::tick`], and when work this process put off comes due, until
    /// the process stops (a local server, a container): work a crashed process held is taken
    /// over within its lease and a tick. `now`: sweep at once too (an earlier run of this
    /// server, or another process sharing the store, may have left work); else only once this
    /// process accepted work.
    pub(crate) fn sweep_every_tick(self: &Arc<Self>, now: bool) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if now {
            self.active.store(true, Relaxed);
        }
        let this = Arc::downgrade(self);
        let tick = self.settings.tick;
        let (stopping, sooner) = (self.stopping.clone(), self.sooner.clone());
        runtime.spawn(async move {
            let mut wait = if now { Duration::ZERO } else { tick };
            loop {
                let until = Instant::now() + wait;
                loop {
                    let Some(runner) = this.upgrade() else { return };
                    let due = runner.next_due.load(Relaxed).saturating_sub(now_ms());
                    let wake = until.min(Instant::now() + Duration::from_millis(due.min(1 << 40)));
                    drop(runner);
                    tokio::select! {
                        () = tokio::time::sleep_until(wake.into()) => break,
                        () = sooner.notified() => {}
                        () = stopping.cancelled() => return,
                    }
                }
                let Some(runner) = this.upgrade() else { return };
                runner.next_due.store(u64::MAX, Relaxed);
                if runner.active.load(Relaxed) {
                    runner.sweep(None).await;
                }
                wait = tick;
            }
        });
    }

    /// At shutdown: waits up to `timeout` for the work running here, a run whose tool ended
    /// until its end is written (and, with a store that ends with this process, for every piece
    /// of work it holds, retries included), then claims nothing more, asks what still runs to
    /// stop (a tool's cancellation: what it returns is kept and delivered) and waits its grace,
    /// then lets the rest go (due now, a takeover for whoever runs it next: a process sharing
    /// the store, or this server when it starts again; a result already kept is only
    /// delivered). A store that ends with this process keeps nothing: each piece of work left
    /// is given up through its protocol (a RAP result dead-lettered, its real one when it was
    /// kept). How many were let go or given up.
    pub(crate) async fn drain(&self, timeout: Duration) -> usize {
        if self.idle_within(timeout).await {
            return 0;
        }
        self.stopping.cancel();
        for going in self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            going.cancel.cancel();
        }
        self.idle_within(CANCEL_GRACE + self.settle()).await;
        let left: Vec<(String, Going)> = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        for (id, going) in &left {
            // Let go first, then stopped: the run's own ending then finds the work no longer
            // its own and records nothing over the release (a takeover).
            if let Err(e) = self.if_mine(id, None, |_| None, Work::release).await {
                tracing::warn!(target: "oxp::work", work_id = id, error = %e, "work not let go: it is taken over once its lease lapses");
            }
            going.stop.cancel();
        }
        if !left.is_empty() {
            tracing::warn!(target: "oxp::work", let_go = left.len(), "unfinished work let go at shutdown: it is taken over");
        }
        if self.durable.load(Relaxed) {
            return left.len();
        }
        self.give_up_all("the server shut down before the work finished")
            .await
    }

    /// Whether the work running here ended within `timeout` (with a store that ends with this
    /// process, every piece of work it holds).
    async fn idle_within(&self, timeout: Duration) -> bool {
        let durable = self.durable.load(Relaxed);
        let all_done = async {
            loop {
                let idle = self.idle.notified();
                // A run that ended is in hand until its outcome is kept and delivered and its
                // slot given back: what it does then is waited for too.
                let running = self.in_hand() > 0
                    || !self
                        .running
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .is_empty();
                let held = !durable
                    && !running
                    && self
                        .store
                        .list(WORK, None, 1)
                        .await
                        .is_ok_and(|w| !w.is_empty());
                if !running && !held {
                    return;
                }
                // Work waiting to be retried ends without a wake-up here: looked at again.
                let _ = tokio::time::timeout(Duration::from_millis(50), idle).await;
            }
        };
        tokio::time::timeout(timeout, all_done).await.is_ok()
    }

    /// Gives up every piece of work of a store that ends with this process; how many.
    async fn give_up_all(&self, reason: &str) -> usize {
        let Ok(all) = self.every_record().await else {
            return 0;
        };
        let mut given_up = 0;
        for (id, item) in all {
            let (Ok(work), Ok(Some(_))) = (
                serde_json::from_slice::<Work>(&item.value),
                self.store.get(WORK, &id).await,
            ) else {
                continue;
            };
            let Some(handler) = self.handler(&work.kind) else {
                continue;
            };
            if let Err(e) = self.give_up(&id, &work, &*handler, reason).await {
                tracing::warn!(target: "oxp::work", error = %e, "work not given up at shutdown");
            }
            given_up += 1;
        }
        given_up
    }
}
