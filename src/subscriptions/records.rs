//! What the store keeps of a subscription, and under which keys. Keys that name a caller, a
//! thread or a call hold a hash of them, never the ids themselves.

pub(crate) use crate::state::key_of;
use oxp_lambda_core::talk::Subscribe;
use serde::{Deserialize, Serialize};

/// Who opened a subscription and where its events go: the call's caller, thread and id, and
/// its callback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Owner {
    /// The authenticated caller (`None` without authentication).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) caller: Option<String>,
    /// The call's thread (`group_id`).
    pub(crate) group_id: String,
    /// The call's id (RAP's invocation `id`: the `tool_call_id` of every event).
    pub(crate) tool_call_id: String,
    /// Where events go.
    pub(crate) callback_url: String,
    /// The caller's W3C trace context, carried on with every event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) traceparent: Option<String>,
}

impl Owner {
    /// The key of the owner's call.
    pub(crate) fn call_key(&self) -> String {
        key_of(&[
            self.caller.as_deref().unwrap_or_default(),
            &self.group_id,
            &self.tool_call_id,
        ])
    }

    /// The key of the owner's caller (its share of subscriptions, its turns of the runner).
    pub(crate) fn caller_key(&self) -> String {
        crate::state::caller_key(self.caller.as_deref())
    }

    /// The key of the owner's thread.
    pub(crate) fn thread_key(&self) -> String {
        key_of(&[self.caller.as_deref().unwrap_or_default(), &self.group_id])
    }
}

/// Where a subscription is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SubState {
    /// Opened by a call whose answer has not reached the caller yet: no event yet.
    Pending,
    /// Receiving events.
    Active,
    /// Its last event was sent.
    Done,
    /// Cancelled (by the caller, or by its thread's closure), or its call failed.
    Cancelled,
}

/// A subscription as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Sub {
    pub(crate) owner: Owner,
    pub(crate) source: String,
    pub(crate) topic: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_events: Option<u32>,
    /// Events accepted so far (numbered 1, 2, ...).
    pub(crate) accepted: u32,
    /// Events delivered (or dead-lettered) so far, in order.
    pub(crate) delivered: u32,
    pub(crate) state: SubState,
    /// When it last took an event (or was opened), Unix milliseconds: it lives
    /// `OXP_SUBSCRIPTION_TTL_SECS` past this.
    #[serde(default)]
    pub(crate) renewed_ms: u64,
    /// When its index entries were last written (they are renewed as it lives).
    #[serde(default)]
    pub(crate) indexed_ms: u64,
    /// The marks ([`event_mark`]) of the last events it took, newest last, at most
    /// [`RECENT`]: a source's resend of one of them (its fan-out interrupted, or a backlog
    /// full elsewhere) is not taken again. Kept in the record rather than a row per event, so
    /// an event to thousands of subscriptions writes nothing that outlives its delivery.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) recent: Vec<String>,
    /// The slot of its caller's share it holds (`crate::state::share`), renewed as it lives,
    /// given back when it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slot: Option<String>,
}

impl crate::state::record::Record for Sub {}

/// How many of its last events' marks a subscription keeps.
pub(crate) const RECENT: usize = 16;

impl Sub {
    pub(crate) fn new(owner: Owner, subscribe: &Subscribe) -> Self {
        Self {
            owner,
            source: subscribe.source.clone(),
            topic: subscribe.topic.clone(),
            max_events: subscribe.max_events,
            accepted: 0,
            delivered: 0,
            state: SubState::Pending,
            renewed_ms: 0,
            indexed_ms: 0,
            recent: Vec::new(),
            slot: None,
        }
    }

    /// Whether it took the event marked `mark` among its last [`RECENT`].
    pub(crate) fn took(&self, mark: &str) -> bool {
        self.recent.iter().any(|m| m == mark)
    }

    /// Remembers that it took the event marked `mark`, forgetting the oldest beyond
    /// [`RECENT`].
    pub(crate) fn remember(&mut self, mark: String) {
        if self.recent.len() >= RECENT {
            self.recent.drain(..=self.recent.len() - RECENT);
        }
        self.recent.push(mark);
    }
}

/// An event's mark in a subscription's record: the first 64 bits of the SHA-256 of its id, in
/// hex (a subscription keeps a few, so two ids sharing one is a 2^-60 chance).
pub(crate) fn event_mark(event_id: &str) -> String {
    key_of(&[event_id])[..16].to_owned()
}

/// The partitions.
pub(crate) struct Keys;

impl Keys {
    /// Subscription records, by id.
    pub(crate) const SUB: &'static str = "sub";

    /// The active subscriptions of a topic of a source.
    pub(crate) fn of_topic(source: &str, topic: &str) -> String {
        format!("sub-topic#{}", key_of(&[source, topic]))
    }

    /// The subscriptions a call opened.
    pub(crate) fn of_call(call: &str) -> String {
        format!("sub-call#{call}")
    }

    /// The prefix of the partitions of the callers' shares of subscriptions.
    pub(crate) const SHARE: &'static str = "sub-of";

    /// The subscriptions opened in a thread.
    pub(crate) fn of_thread(thread: &str) -> String {
        format!("sub-thread#{thread}")
    }

    /// A subscription's accepted, undelivered events, by sequence number.
    pub(crate) fn events(id: &str) -> String {
        format!("sub-events#{id}")
    }

    /// The events a source had taken lately, by digest (a copy is a replay).
    pub(crate) fn taken(source: &str) -> String {
        format!("webhook-taken#{}", key_of(&[source]))
    }

    /// A sequence number as a key that sorts as the number does.
    pub(crate) fn seq(seq: u32) -> String {
        format!("{seq:010}")
    }
}
