//! Publishing: an event handed to every live subscription of its topic, each taking it once.

use super::records::Keys;
use super::{
    AT_ONCE, EVENTS, PAGE, Published, SubState, Subscriptions, events_work, ms, now_ms, records,
};
use futures_util::{StreamExt, TryStreamExt, stream};
use oxp_lambda_core::durable::{Item, StateError};
use std::time::{Duration, SystemTime};

impl Subscriptions {
    /// Hands `text` (an event of `topic` from `source`, identified by `event_id` so a source
    /// sending it again is not delivered twice) to every active subscription of the topic,
    /// and schedules their delivery.
    pub(crate) async fn publish(
        &self,
        source: &str,
        topic: &str,
        event_id: &str,
        text: &str,
    ) -> Result<Published, StateError> {
        let partition = Keys::of_topic(source, topic);
        let mut published = Published::default();
        let mut after: Option<String> = None;
        loop {
            let page = self.store.list(&partition, after.as_deref(), PAGE).await?;
            // Each subscription's record is its own: they are written side by side.
            let ids: Vec<String> = page.iter().map(|(id, _)| id.clone()).collect();
            let outcomes: Vec<(String, Accepted)> = stream::iter(ids)
                .map(|id| async move {
                    let accepted = self.accept(&id, event_id, text).await?;
                    Ok::<_, StateError>((id, accepted))
                })
                .buffer_unordered(AT_ONCE)
                .try_collect()
                .await?;
            let mut due = Vec::new();
            for (id, accepted) in outcomes {
                match accepted {
                    Accepted::Yes => {
                        published.accepted += 1;
                        due.push(id);
                    }
                    Accepted::Already => published.accepted += 1,
                    Accepted::Full => published.full += 1,
                    Accepted::No => {}
                }
            }
            self.schedule(due).await;
            match page.last() {
                Some((last, _)) if page.len() == PAGE => after = Some(last.clone()),
                _ => return Ok(published),
            }
        }
    }

    /// Whether `source` had the event `event_id` taken within its replay window.
    pub(crate) async fn replayed(&self, source: &str, event_id: &str) -> Result<bool, StateError> {
        Ok(self
            .store
            .get(&Keys::taken(source), event_id)
            .await?
            .is_some())
    }

    /// Marks `source`'s event `event_id` taken for `window`: a copy within it is a replay.
    pub(crate) async fn taken(
        &self,
        source: &str,
        event_id: &str,
        window: Duration,
    ) -> Result<(), StateError> {
        let mark = Item::new(Vec::new(), Some(SystemTime::now() + window));
        self.store.put(&Keys::taken(source), event_id, mark).await
    }

    /// Has the events of subscriptions `ids` delivered: each one's delivery is work, taken at
    /// once (here, or by the worker in Lambda) unless a run holds it, which then runs again.
    pub(crate) async fn schedule(&self, ids: Vec<String>) {
        if ids.is_empty() {
            return;
        }
        let work = ids.iter().map(|id| events_work(id)).collect();
        let failed = self.runner.due_all(EVENTS, work).await;
        if failed > 0 {
            // The events are kept: the subscription's next event makes its delivery due.
            tracing::warn!(target: "oxp::subscriptions", failed, "deliveries not made due");
        }
    }

    /// Writes the event as the next of subscription `id`, unless it had it already, is no
    /// longer active, or holds its whole backlog.
    pub(super) async fn accept(
        &self,
        id: &str,
        event_id: &str,
        text: &str,
    ) -> Result<Accepted, StateError> {
        let mark = records::event_mark(event_id);
        for _ in 0..16 {
            let Some((mut sub, old)) = self.read(id).await? else {
                return Ok(Accepted::No);
            };
            // Its mark is written with the count, in one compare-and-swap: two copies of an
            // event racing to one subscription are taken once.
            if sub.took(&mark) {
                return Ok(Accepted::Already);
            }
            let live = matches!(sub.state, SubState::Pending | SubState::Active);
            if !live || sub.max_events.is_some_and(|m| sub.accepted >= m) {
                return Ok(Accepted::No);
            }
            if sub.accepted - sub.delivered >= self.max_backlog {
                // Not taken: the source's retry is accepted once there is room.
                return Ok(Accepted::Full);
            }
            sub.remember(mark.clone());
            sub.accepted += 1;
            let seq = sub.accepted;
            // It lives on while events come: its lifetime counts from now, and its index
            // entries are written again before they could lapse.
            let now = now_ms();
            sub.renewed_ms = now;
            let reindex = now.saturating_sub(sub.indexed_ms) > ms(self.keep) / 4;
            if reindex {
                sub.indexed_ms = now;
            }
            // The event first, then the count: a count never names a missing event.
            let item = Item::new(text.as_bytes().to_vec(), self.expires());
            self.store
                .put(&Keys::events(id), &Keys::seq(seq), item)
                .await?;
            if self.swap(id, &sub, &old).await? {
                if reindex {
                    self.index(id, &sub).await?;
                }
                return Ok(Accepted::Yes);
            }
        }
        Err(StateError(
            "a subscription is updated too often at once".into(),
        ))
    }
}

/// Whether a subscription took an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Accepted {
    Yes,
    Already,
    Full,
    No,
}
