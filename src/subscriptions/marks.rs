//! The marks of the events a source had taken, so that a copy within the replay window is known
//! for one (a resend, a replay with fresh headers): a subscription opened since gets no old
//! event. Each source's marks are a table of `OXP_EVENT_MARKS_PER_SOURCE` slots in the store,
//! an event's mark in one of the few slots its digest names (`PROBES`, looked at side by side).
//! A source whose slots are all taken by live marks (a sender holding its key and flooding it
//! with distinct events) has its next event refused until marks expire: every event taken is
//! marked, so the rule keeps holding, and a source holds at most its table.

use super::Subscriptions;
use super::records::{Keys, key_of};
use futures_util::future::try_join_all;
use oxp_lambda_core::durable::{Item, StateError};
use std::time::{Duration, SystemTime};

/// The slots an event's mark may take.
const PROBES: u64 = 8;

/// A mark's value: whether every subscription took the event yet, and its id.
fn mark(done: bool, event_id: &str) -> Vec<u8> {
    format!("{}:{event_id}", if done { "done" } else { "pending" }).into_bytes()
}

impl Subscriptions {
    /// The slots of `source`'s table event `event_id` may be marked in.
    fn slots(&self, event_id: &str) -> Vec<String> {
        let digest = key_of(&[event_id]);
        let first = u64::from_str_radix(&digest[..15], 16).unwrap_or(0);
        let size = self.marks_per_source.max(1);
        (0..PROBES.min(size))
            .map(|i| ((first + i) % size).to_string())
            .collect()
    }

    /// Whether `source` had the event `event_id` taken (by every subscription that could take
    /// it) within its replay window.
    pub(crate) async fn replayed(&self, source: &str, event_id: &str) -> Result<bool, StateError> {
        let partition = Keys::taken(source);
        let done = mark(true, event_id);
        let slots = self.slots(event_id);
        let found = try_join_all(slots.iter().map(|slot| self.store.get(&partition, slot))).await?;
        Ok(found.iter().flatten().any(|item| item.value == done))
    }

    /// Reserves a mark for `source`'s event `event_id` until `window` from now, before it is
    /// handed to any subscription: whether there was room (its mark, pending, is there now).
    pub(crate) async fn reserve(
        &self,
        source: &str,
        event_id: &str,
        window: Duration,
    ) -> Result<bool, StateError> {
        let partition = Keys::taken(source);
        let pending = mark(false, event_id);
        for slot in self.slots(event_id) {
            let item = Item::new(pending.clone(), Some(SystemTime::now() + window));
            if self.store.put_if(&partition, &slot, item, None).await? {
                return Ok(true);
            }
            // Its own, from a send cut short before.
            let there = self.store.get(&partition, &slot).await?;
            if there.is_some_and(|item| item.value == pending || item.value == mark(true, event_id))
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Marks `source`'s event `event_id` taken for `window`: a copy within it is a replay.
    pub(crate) async fn taken(
        &self,
        source: &str,
        event_id: &str,
        window: Duration,
    ) -> Result<(), StateError> {
        let partition = Keys::taken(source);
        let pending = mark(false, event_id);
        for slot in self.slots(event_id) {
            let done = Item::new(mark(true, event_id), Some(SystemTime::now() + window));
            if self
                .store
                .put_if(&partition, &slot, done, Some(&pending))
                .await?
            {
                return Ok(());
            }
        }
        Ok(())
    }
}
