//! Subscriptions that outlive the call that opened them, kept in the durable state store so any
//! process (any execution environment) can serve them: opened by a tool (`ctx.subscribe`),
//! active once the call's answer reached the caller, fed by event sources (`publish`), and
//! ended by a cancellation, their thread's closure, or their last event.
//!
//! Every event a subscription accepts is written before the source is answered, numbered, and
//! delivered in order ([`Subscriptions::drain`]) by the one runner of acknowledged work
//! ([`crate::work`]): a subscription with events to deliver is a piece of work
//! ([`EVENTS`]) that one runner holds under a lease at a time, taken over when its process dies
//! or lets it go, so a crash, a restart or a shutdown loses none and stalls none, and nothing
//! follows the `final` event or a cancellation. The delivery itself (the message, its retries,
//! the dead letter) is the protocol's: it registers the handler of [`EVENTS`].
//!
//! Knows no protocol and no transport.

mod delivery;
mod expiry;
mod fan_out;
mod index;
mod limits;
mod marks;
mod records;

pub(crate) use delivery::{Drained, Sent};
pub(crate) use limits::Limits;
pub(crate) use records::{Owner, Sub, SubState, key_of};

use crate::settings::{ConfigError, Env};
use crate::state::record::Records;
use crate::work::Runner;
use expiry::Expiries;
use governor::{DefaultKeyedRateLimiter, Quota};
use oxp_lambda_core::durable::{Item, StateError, StateStore};
use oxp_lambda_core::talk::{Subscribe, Subscription};
use records::Keys;
use serde_json::json;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Most subscriptions one topic fans an event out to in one page of the store.
const PAGE: usize = 500;

/// Subscriptions one publish works on at once: the store's round trips overlap (DynamoDB's
/// milliseconds each), so a fan-out to thousands answers in seconds.
pub(crate) const AT_ONCE: usize = 32;

/// The kind of work that delivers a subscription's accepted events (its body names the
/// subscription: `{"sub": id}`); the protocol that carries subscriptions runs it.
pub(crate) const EVENTS: &str = "subscription-events";

/// The kind of work that ends a subscription that took no event for its lifetime, with a final
/// event telling its caller (its body: `{"sub": id}`).
pub(crate) const EXPIRY: &str = "subscription-expiry";
/// How long a subscription's records outlive its lifetime: time for its expiry to run.
const GRACE: Duration = Duration::from_secs(24 * 3600);

/// The work that delivers subscription `id`'s events.
fn events_work(id: &str) -> (String, serde_json::Value) {
    (format!("events:{id}"), serde_json::json!({"sub": id}))
}

/// One event to deliver to one subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// The subscription's record (where to deliver).
    pub(crate) sub: Sub,
    /// Its id.
    pub(crate) id: String,
    /// The event (JSON text, as the source gave it).
    pub(crate) text: String,
    /// Whether it is the subscription's last.
    pub(crate) last: bool,
}

/// How `publish` went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Published {
    /// Subscriptions that accepted the event (or had it already).
    pub(crate) accepted: usize,
    /// Subscriptions whose backlog is full: the source should send the event again later.
    pub(crate) full: usize,
}

/// The subscriptions of this server.
pub(crate) struct Subscriptions {
    store: Arc<dyn StateStore>,
    runner: Arc<Runner>,
    /// Each subscription's pace, by id; pruned of idle ones as it is used, so it holds about
    /// the subscriptions being delivered to, not every one that ever was.
    limiter: DefaultKeyedRateLimiter<String>,
    paced: std::sync::atomic::AtomicU64,
    max_backlog: u32,
    keep: Duration,
    /// Each caller's share of live subscriptions (`OXP_SUBSCRIPTION_MAX_PER_CALLER` slots).
    share: crate::state::share::Share,
    /// The slots of each source's table of event marks (`OXP_EVENT_MARKS_PER_SOURCE`).
    marks_per_source: u64,
}

/// Why a subscription was not opened.
#[derive(Debug)]
pub(crate) enum NotOpened {
    /// The caller holds its whole share (`OXP_SUBSCRIPTION_MAX_PER_CALLER`).
    CallerFull,
    /// The store did not answer.
    Unavailable(StateError),
}

impl From<StateError> for NotOpened {
    fn from(e: StateError) -> Self {
        Self::Unavailable(e)
    }
}

impl std::fmt::Debug for Subscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriptions")
            .field("max_backlog", &self.max_backlog)
            .finish_non_exhaustive()
    }
}

/// The subscriptions over `store`, their events delivered by `runner`, paced as the variables
/// say (`OXP_SUBSCRIPTION_*`); none without a store.
pub(crate) fn build(
    store: Option<&Arc<dyn StateStore>>,
    runner: Option<&Arc<Runner>>,
    env: &Env<'_>,
) -> Result<Option<Arc<Subscriptions>>, ConfigError> {
    let limits = Limits::from_env(env)?;
    Ok(store.zip(runner).map(|(store, runner)| {
        let subscriptions = Arc::new(Subscriptions::new(store.clone(), runner.clone(), &limits));
        runner.register(EXPIRY, Arc::new(Expiries(Arc::downgrade(&subscriptions))));
        subscriptions
    }))
}

impl Subscriptions {
    pub(crate) fn new(store: Arc<dyn StateStore>, runner: Arc<Runner>, limits: &Limits) -> Self {
        // A second's worth at once, then the pace.
        let rate = NonZeroU32::new(limits.per_minute).unwrap_or(NonZeroU32::MIN);
        let burst = NonZeroU32::new(limits.per_minute / 60).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::per_minute(rate).allow_burst(burst);
        Self {
            store,
            runner,
            limiter: DefaultKeyedRateLimiter::keyed(quota),
            paced: std::sync::atomic::AtomicU64::new(0),
            max_backlog: limits.max_backlog.max(1),
            keep: limits.keep,
            share: crate::state::share::Share::new(Keys::SHARE, limits.per_caller),
            marks_per_source: limits.marks_per_source,
        }
    }

    /// Records written now are kept through the subscription's lifetime and time for its
    /// expiry to run.
    fn expires(&self) -> Option<SystemTime> {
        Some(SystemTime::now() + self.keep + GRACE)
    }

    /// The subscription records, each changed by compare-and-swap.
    fn records(&self) -> Records<'_> {
        Records::new(&*self.store, Keys::SUB, "a subscription record")
    }

    async fn read(&self, id: &str) -> Result<Option<(Sub, Item)>, StateError> {
        self.records().read(id).await
    }

    /// How long a record of `sub` is kept. An ended one only a while (a redelivered job
    /// opening it again finds it ended), so a month of subscriptions opened and closed does
    /// not stay in the store.
    fn kept(&self, sub: &Sub) -> Option<SystemTime> {
        match sub.state {
            SubState::Pending | SubState::Active => self.expires(),
            SubState::Done | SubState::Cancelled => Some(SystemTime::now() + self.keep.min(GRACE)),
        }
    }

    /// Changes subscription `id` with `change` (retrying on a concurrent write); the record as
    /// written, or `None` when there is none or `change` declines.
    async fn update(
        &self,
        id: &str,
        change: impl Fn(&mut Sub) -> bool,
    ) -> Result<Option<Sub>, StateError> {
        self.update_from(id, None, change).await
    }

    /// [`Self::update`] starting from `known`, the record as just read (no read again unless
    /// it changed since).
    async fn update_from(
        &self,
        id: &str,
        known: Option<(Sub, Item)>,
        change: impl Fn(&mut Sub) -> bool,
    ) -> Result<Option<Sub>, StateError> {
        let written = self
            .records()
            .update(id, known, change, |sub, _| self.kept(sub))
            .await?;
        Ok(written.map(|(sub, _)| sub))
    }

    /// Opens subscription number `seq` of `owner`'s call (pending until [`Self::activate`]),
    /// holding a slot of its caller's share. The same call opening it again (a redelivered job)
    /// gets the same subscription; a caller holding its whole share opens none.
    pub(crate) async fn open(
        &self,
        owner: &Owner,
        subscribe: &Subscribe,
        seq: u32,
    ) -> Result<Subscription, NotOpened> {
        let id = format!("sub_{}", key_of(&[&owner.call_key(), &seq.to_string()]));
        let caller = owner.caller_key();
        let mut sub = Sub::new(owner.clone(), subscribe);
        sub.renewed_ms = now_ms();
        sub.indexed_ms = sub.renewed_ms;
        sub.slot = Some(self.share.guess());
        let guess = sub.slot.clone().unwrap_or_default();
        // The slot, the record and its index side by side: one wait (one commit in the
        // embedded store). Events are taken from the topic's index on, and delivered once the
        // call's answer confirmed the subscription: none falls between the two. A record not
        // yet written when an event comes takes none, as if the event came just before.
        let records = self.records();
        let (slot, created, indexed) = tokio::join!(
            self.share
                .take(&*self.store, &caller, &id, &guess, self.expires()),
            records.write(&id, &sub, None, self.expires()),
            self.index(&id, &sub, false)
        );
        let opened = match (created, slot) {
            // Opened before by this call (a redelivered job): the slot taken now goes back
            // unless it is the one it holds.
            (Ok(None), slot) => {
                if let Ok(slot) = slot {
                    let found = self.read(&id).await?;
                    if found.is_none_or(|(s, _)| s.slot.as_deref() != Some(&slot)) {
                        self.share
                            .give_back(&*self.store, &caller, &slot, &id)
                            .await?;
                    }
                }
                return indexed.map(|()| Subscription { id }).map_err(Into::into);
            }
            (Ok(Some(_)), Ok(slot)) if slot == guess => Ok(()),
            // Another slot than the one guessed (that one was held): the record names it.
            (Ok(Some(_)), Ok(slot)) => self
                .update(&id, |s| {
                    s.slot = Some(slot.clone());
                    true
                })
                .await
                .map(drop),
            (Ok(Some(_)), Err(full)) => {
                // No slot: nothing of it stays.
                sub.slot = None;
                let (unindexed, deleted) =
                    tokio::join!(self.unindex(&id, &sub), self.store.delete(Keys::SUB, &id));
                unindexed.and(deleted)?;
                return Err(match full {
                    crate::state::share::Full::Caller => NotOpened::CallerFull,
                    crate::state::share::Full::Unavailable(e) => {
                        NotOpened::Unavailable(StateError(e))
                    }
                });
            }
            (Err(e), slot) => {
                if let Ok(slot) = slot {
                    let _ = self
                        .share
                        .give_back(&*self.store, &caller, &slot, &id)
                        .await;
                }
                Err(e)
            }
        };
        opened.and(indexed)?;
        Ok(Subscription { id })
    }

    /// Activates the pending subscriptions `ids` of a call ([`Self::of_call`]), once its
    /// answer reached the caller: the events they took meanwhile, and all that follow, are
    /// delivered.
    pub(crate) async fn activate(&self, ids: Vec<String>) -> Result<(), StateError> {
        let mut backlogged = Vec::new();
        for id in ids {
            // It ends, with a final event, once it took no event for its lifetime: that work
            // is kept beside the activation (for one already active or ended, it exists
            // already or finds nothing to end).
            let expiry = async {
                let work = json!({"sub": id});
                let kept = self
                    .runner
                    .submit_later(EXPIRY, &format!("expiry:{id}"), work, self.keep)
                    .await;
                if let Err(e) = kept {
                    tracing::warn!(target: "oxp::subscriptions", error = ?e, "a subscription's expiry not kept: it is forgotten without a final event");
                }
            };
            let activate = self.update(&id, |s| {
                let pending = s.state == SubState::Pending;
                if pending {
                    s.state = SubState::Active;
                }
                pending
            });
            let (activated, ()) = tokio::join!(activate, expiry);
            if let Some(sub) = activated?
                && sub.delivered < sub.accepted
            {
                backlogged.push((id, sub.owner.caller_key()));
            }
        }
        self.schedule(backlogged).await;
        Ok(())
    }

    /// Drops the pending subscriptions `ids` of a call ([`Self::of_call`]): its answer was an
    /// error, so the caller knows of none.
    pub(crate) async fn discard(&self, ids: Vec<String>) -> Result<(), StateError> {
        for id in ids {
            if let Some((sub, _)) = self.read(&id).await?
                && sub.state == SubState::Pending
            {
                self.end(&id, SubState::Cancelled).await?;
            }
        }
        Ok(())
    }

    /// Cancels the subscriptions `owner`'s call opened (RAP `/cancel_tool_call` naming it):
    /// nothing more is sent. Whether there were any.
    pub(crate) async fn cancel_call(&self, owner: &Owner) -> Result<bool, StateError> {
        let ids = self.of_call(owner).await?;
        for id in &ids {
            self.end(id, SubState::Cancelled).await?;
        }
        Ok(!ids.is_empty())
    }

    /// Cancels every subscription opened in `owner`'s thread (its closure).
    pub(crate) async fn cancel_thread(&self, owner: &Owner) -> Result<usize, StateError> {
        let partition = Keys::of_thread(&owner.thread_key());
        let mut ended = 0;
        let mut after: Option<String> = None;
        loop {
            let page = self.store.list(&partition, after.as_deref(), PAGE).await?;
            for (id, _) in &page {
                self.end(id, SubState::Cancelled).await?;
                ended += 1;
            }
            match page.last() {
                Some((last, _)) if page.len() == PAGE => after = Some(last.clone()),
                _ => return Ok(ended),
            }
        }
    }

    /// Ends subscription `id` (`state`: cancelled or done): out of its topic's fan-out, its
    /// undelivered events forgotten.
    async fn end(&self, id: &str, state: SubState) -> Result<(), StateError> {
        let ended = self
            .update(id, |s| {
                let live = matches!(s.state, SubState::Pending | SubState::Active);
                if live {
                    s.state = state;
                }
                live
            })
            .await?;
        if let Some(sub) = ended {
            self.unindex(id, &sub).await?;
            for seq in sub.delivered + 1..=sub.accepted {
                self.store
                    .delete(&Keys::events(id), &Keys::seq(seq))
                    .await?;
            }
        }
        Ok(())
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    ms(SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default())
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
