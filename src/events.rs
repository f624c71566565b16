//! Where an event source hands its events: [`Events`], which a protocol's build finds in
//! [`Assembly::events`](crate::protocol::Assembly::events). The built-in webhooks
//! (`POST /webhooks/{source}`) are one such source; a program's own (a queue consumer, a
//! schedule, another signed endpoint) is a [`Protocol`](crate::protocol::Protocol) value written
//! with nothing but this and the rest of the public API.
//!
//! Each live subscription of a topic takes an event once, in order, whichever process publishes
//! it: the event is written before `publish` returns, and the one runner of acknowledged work
//! delivers it through the protocol that opened the subscription (RAP's `subscription_event`).

use crate::subscriptions::Subscriptions;
use oxp_lambda_core::talk::MAX_NAME_CHARS;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How long an event id, once every subscription that could take it did, is refused as a
/// replay (a source's resend, or a copy sent again on purpose): longer than senders resend.
pub const REPLAY_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);
/// The longest event id.
pub const MAX_EVENT_ID_CHARS: usize = 256;
/// The largest text an event carries to a subscription: what the state store keeps in one item.
pub const MAX_EVENT_BYTES: usize = oxp_lambda_core::durable::MAX_VALUE_BYTES;

/// The subscriptions, as an event source sees them.
#[derive(Clone)]
pub struct Events(pub(crate) Arc<Subscriptions>);

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

/// What publishing an event did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Published {
    /// Subscriptions that took it (now, or before: a resend counts once for each).
    pub accepted: usize,
    /// Subscriptions that did not take it: their backlog of undelivered events is full. Publish
    /// it again later; those that took it do not take it twice.
    pub full: usize,
    /// The id was taken within [`REPLAY_WINDOW`]: no subscription took it again.
    pub replayed: bool,
}

/// Why an event was not published. Holds nothing of the event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublishError {
    /// The event can never be kept as given: a source, topic or id empty or too long
    /// ([`MAX_NAME_CHARS`], [`MAX_EVENT_ID_CHARS`]), or a text over [`MAX_EVENT_BYTES`].
    Invalid(&'static str),
    /// The state store did not answer: publish it again (nothing is taken twice).
    Unavailable,
    /// The source holds as many marks of events taken as it may
    /// (`OXP_EVENT_MARKS_PER_SOURCE`, each kept [`REPLAY_WINDOW`]): publish it again later.
    SourceFull,
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(why) => f.write_str(why),
            Self::Unavailable => f.write_str("the event could not be kept; publish it again"),
            Self::SourceFull => {
                f.write_str("the source sent too many events lately; publish it again later")
            }
        }
    }
}

impl std::error::Error for PublishError {}

impl Events {
    /// Hands event `id` of `source` to the live subscriptions of each topic of `topics`, each
    /// with its text (one event may concern several topics: a repository and its kind of
    /// event). `id` names the event for good: the same id again is taken by no subscription
    /// that took it among its last 16 events (a fan-out cut short, sent again), and once every
    /// subscription that could take it did, by none for [`REPLAY_WINDOW`]. Make it what the source vouches for (the digest of a signed body),
    /// never something a sender chooses freely.
    pub async fn publish<T: AsRef<str>, X: AsRef<str>>(
        &self,
        source: &str,
        id: &str,
        topics: &[(T, X)],
    ) -> Result<Published, PublishError> {
        let named = |s: &str| !s.is_empty() && s.chars().count() <= MAX_NAME_CHARS;
        if !named(source) || topics.iter().any(|(t, _)| !named(t.as_ref())) {
            return Err(PublishError::Invalid(
                "a source and each topic are 1 to 128 characters",
            ));
        }
        if id.is_empty() || id.chars().count() > MAX_EVENT_ID_CHARS {
            return Err(PublishError::Invalid("an event id is 1 to 256 characters"));
        }
        if topics
            .iter()
            .any(|(_, x)| x.as_ref().len() > MAX_EVENT_BYTES)
        {
            return Err(PublishError::Invalid("an event's text is at most 256 KiB"));
        }
        let unavailable = |e: oxp_lambda_core::durable::StateError| {
            tracing::error!(target: "oxp::events", source, error = %e, "event not published");
            PublishError::Unavailable
        };
        let subscriptions = &self.0;
        if subscriptions
            .replayed(source, id)
            .await
            .map_err(unavailable)?
        {
            tracing::info!(target: "oxp::events", source, "event taken before: not taken again");
            return Ok(Published {
                replayed: true,
                ..Published::default()
            });
        }
        // Marked before any subscription takes it: a source may hold only so many marks, and
        // an event taken unmarked would reach a subscription opened since on a replay.
        if !subscriptions
            .reserve(source, id, REPLAY_WINDOW)
            .await
            .map_err(unavailable)?
        {
            tracing::warn!(target: "oxp::events", source, "event refused: the source holds as many marks of events as it may (OXP_EVENT_MARKS_PER_SOURCE)");
            return Err(PublishError::SourceFull);
        }
        let mut published = Published::default();
        for (topic, text) in topics {
            let one = subscriptions
                .publish(source, topic.as_ref(), id, text.as_ref())
                .await
                .map_err(unavailable)?;
            published.accepted += one.accepted;
            published.full += one.full;
        }
        // Every subscription that could take it did: a copy now is a replay. (With a backlog
        // full, the source's resend is what the others wait for, and each takes it once.)
        if published.full == 0
            && let Err(e) = subscriptions.taken(source, id, REPLAY_WINDOW).await
        {
            tracing::warn!(target: "oxp::events", source, error = %e, "event not marked taken: a replay reaches only new subscriptions");
        }
        Ok(published)
    }
}
