//! Finding work without a request: the sweep (lapsed leases, retries come due), the worker
//! role's runs, and the shutdown that lets unfinished work go for a takeover.

use super::*;

impl Runner {
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
            if let Err(e) = self.if_mine(id, None, None, |w| w.release()).await {
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
