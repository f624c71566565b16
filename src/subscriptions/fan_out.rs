//! Publishing: an event handed to every live subscription of its topic, each taking it once.

use super::records::{Keys, Sub};
use super::{
    AT_ONCE, EVENTS, PAGE, Published, SubState, Subscriptions, events_work, ms, now_ms, records,
};
use futures_util::{StreamExt, TryStreamExt, stream};
use oxp_lambda_core::durable::{Item, StateError};

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
                    Accepted::Yes(caller) => {
                        published.accepted += 1;
                        due.push((id, caller));
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

    /// Has the events of subscriptions `ids` (each with its caller's key) delivered: each
    /// one's delivery is work done for its caller, taken at once (here, or by the worker in
    /// Lambda) unless a run holds it, which then runs again.
    pub(crate) async fn schedule(&self, ids: Vec<(String, String)>) {
        if ids.is_empty() {
            return;
        }
        let work = ids
            .into_iter()
            .map(|(id, caller)| {
                let (work, body) = events_work(&id);
                (work, body, Some(caller))
            })
            .collect();
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
        let declined = std::sync::Mutex::new(Accepted::No);
        let reindex = std::sync::atomic::AtomicBool::new(false);
        let change = |sub: &mut Sub| {
            // Its mark is written with the count, in one compare-and-swap: two copies of an
            // event racing to one subscription are taken once.
            let live = matches!(sub.state, SubState::Pending | SubState::Active);
            let refused = if sub.took(&mark) {
                Some(Accepted::Already)
            } else if !live || sub.max_events.is_some_and(|m| sub.accepted >= m) {
                Some(Accepted::No)
            } else if sub.accepted - sub.delivered >= self.max_backlog {
                // Not taken: the source's retry is accepted once there is room.
                Some(Accepted::Full)
            } else {
                None
            };
            if let Some(refused) = refused {
                *declined.lock().unwrap_or_else(|p| p.into_inner()) = refused;
                return false;
            }
            sub.remember(mark.clone());
            sub.accepted += 1;
            // It lives on while events come: its lifetime counts from now, and its index
            // entries are written again before they could lapse.
            let now = now_ms();
            sub.renewed_ms = now;
            let renew = now.saturating_sub(sub.indexed_ms) > ms(self.keep) / 4;
            reindex.store(renew, std::sync::atomic::Ordering::Relaxed);
            if renew {
                sub.indexed_ms = now;
            }
            true
        };
        let Some(sub) = self.take_event(id, text, change).await? else {
            return Ok(declined.into_inner().unwrap_or_else(|p| p.into_inner()));
        };
        if reindex.load(std::sync::atomic::Ordering::Relaxed) {
            self.index(id, &sub, true).await?;
        }
        Ok(Accepted::Yes(sub.owner.caller_key()))
    }

    /// `change` made to subscription `id` (it counts one more event), and `text` written as
    /// that event first: the event's row, then the count (a count never names a missing event),
    /// in the one compare-and-swap loop. The record as written, or `None` when `change`
    /// declines.
    pub(super) async fn take_event(
        &self,
        id: &str,
        text: &str,
        change: impl FnMut(&mut Sub) -> bool,
    ) -> Result<Option<Sub>, StateError> {
        let written = self
            .records()
            .upsert_after(
                id,
                None,
                || None,
                change,
                |sub| self.event_row(id, sub.accepted, text),
                |sub, _| self.kept(sub),
            )
            .await?;
        Ok(written.map(|(sub, _)| sub))
    }

    /// Writes `text` as event `seq` of subscription `id` where no other event is: whether it
    /// is there now (`false`: another event took the number; the count is read again).
    async fn event_row(&self, id: &str, seq: u32, text: &str) -> Result<bool, StateError> {
        let (events, key) = (Keys::events(id), Keys::seq(seq));
        let item = Item::new(text.as_bytes().to_vec(), self.expires());
        if self.store.put_if(&events, &key, item, None).await? {
            return Ok(true);
        }
        // Written by this very change before a concurrent count moved (or the same text):
        // it is this event's.
        let there = self.store.get(&events, &key).await?;
        Ok(there.is_some_and(|row| row.value == text.as_bytes()))
    }
}

/// Whether a subscription took an event (and whose it is, when it did).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) enum Accepted {
    Yes(String),
    Already,
    Full,
    #[default]
    No,
}
