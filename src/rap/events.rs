//! Subscription events as RAP delivers them: a `subscription_event` to the subscribing call's
//! callback, through the same delivery as results (retries, then the dead-letter store), in
//! order ([`Subscriptions::drain`]). Delivering a subscription's events is work of the one
//! runner ([`crate::work`], kind [`EVENTS`]): run at once where the event was accepted (in
//! Lambda by the worker role, from its queue), one run at a time per subscription, taken over
//! when its process dies.

use crate::rap::dead_letter::{DeadLetter, DeadLetters};
use crate::rap::deliver::{Attempt, Deliverer};
use crate::rap::job::{rfc3339, unix_ms};
use crate::rap::messages::SubscriptionEvent;
use crate::server::BoxFuture;
use crate::subscriptions::{Drained, EVENTS, Event, Sent, Subscriptions};
use crate::work::{Handler, Outcome, Retries, Run, Work};
use axum::body::Bytes;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// RAP's delivery of subscription events.
pub(crate) struct EventDelivery {
    subscriptions: Arc<Subscriptions>,
    deliverer: Deliverer,
    dead_letters: Arc<DeadLetters>,
}

impl EventDelivery {
    /// The delivery of `subscriptions`' events, registered with the runner as the handler of
    /// [`EVENTS`].
    pub(crate) fn register(
        subscriptions: Arc<Subscriptions>,
        deliverer: Deliverer,
        dead_letters: Arc<DeadLetters>,
        runner: &crate::work::Runner,
    ) {
        let events = Arc::new(Self {
            subscriptions,
            deliverer,
            dead_letters,
        });
        runner.register(EVENTS, events);
    }

    /// The `subscription_event` of `event`, as sent.
    fn message(event: &Event) -> SubscriptionEvent {
        let owner = &event.sub.owner;
        SubscriptionEvent {
            kind: "subscription_event",
            group_id: owner.group_id.clone(),
            tool_call_id: owner.tool_call_id.clone(),
            text: event.text.clone(),
            associative: false,
            last: event.last,
        }
    }

    /// One attempt to deliver `event`; refused for good, it is dead-lettered.
    async fn send(&self, event: Event, deadline: Option<Instant>) -> Sent {
        let owner = &event.sub.owner;
        let body = serde_json::to_vec(&Self::message(&event)).expect("messages serialize");
        let attempt = self
            .deliverer
            .attempt(
                &owner.callback_url,
                Bytes::from(body),
                owner.traceparent.as_deref(),
                deadline,
            )
            .await;
        match attempt {
            Attempt::Delivered => {
                audit(&event, "delivered", None);
                Sent::Done
            }
            Attempt::Again { reason, after } => Sent::Again { reason, after },
            Attempt::Refused(reason) => self.dead_letter(event, &reason).await,
        }
    }

    /// Dead-letters `event` (`reason`): it counts as sent.
    async fn dead_letter(&self, event: Event, reason: &str) -> Sent {
        let now = rfc3339(unix_ms(SystemTime::now()));
        let letter = DeadLetter {
            reason: reason.to_owned(),
            attempts: 0,
            callback_url: event.sub.owner.callback_url.clone(),
            operation: None,
            received_at: now.clone(),
            failed_at: now,
            message: serde_json::to_value(Self::message(&event)).expect("messages serialize"),
        };
        let caller = event.sub.owner.caller_key();
        let delivery = match self.dead_letters.record(&letter, &caller).await {
            Ok(()) => "dead_lettered",
            Err(_) => "not_recorded",
        };
        audit(&event, delivery, Some(reason));
        Sent::Done
    }
}

/// The audit line of one event.
fn audit(event: &Event, delivery: &str, reason: Option<&str>) {
    tracing::info!(
        target: "oxp::rap::audit",
        subscription = event.id.as_str(),
        tool_call_id = event.sub.owner.tool_call_id.as_str(),
        group_id = event.sub.owner.group_id.as_str(),
        last = event.last,
        delivery,
        reason,
        "subscription_event"
    );
}

impl Handler for EventDelivery {
    fn run<'a>(&'a self, _: &'a str, work: &'a Work, run: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(id) = work.body.get("sub").and_then(|s| s.as_str()) else {
                return Outcome::Done;
            };
            let drained = self
                .subscriptions
                .drain(id, run.deadline, |event| self.send(event, run.deadline))
                .await;
            match drained {
                Ok(Drained::All) => Outcome::Done,
                // This executor's time is up with events left: on, at once, anywhere.
                Ok(Drained::More) => Outcome::Continue,
                // Events went out before the one not taken: no failure, tried again later.
                Ok(Drained::Again {
                    after,
                    progress: true,
                    ..
                }) => Outcome::After(after.unwrap_or(self.deliverer.retries().base)),
                Ok(Drained::Again {
                    reason,
                    after: Some(after),
                    ..
                }) => Outcome::RetryAfter(reason, after),
                Ok(Drained::Again { reason, .. }) => Outcome::Retry(reason),
                Err(e) => Outcome::Retry(e.0),
            }
        })
    }

    /// The event not taken after the last attempt is dead-lettered, and the next follow.
    fn give_up<'a>(
        &'a self,
        _: &'a str,
        work: &'a Work,
        reason: &'a str,
        _: Option<&'a [u8]>,
    ) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let Some(id) = work.body.get("sub").and_then(|s| s.as_str()) else {
                return false;
            };
            let passed = self
                .subscriptions
                .pass(id, |event| self.dead_letter(event, reason))
                .await;
            passed.unwrap_or_else(|e| {
                // The events stay kept: the subscription's next event makes its delivery due.
                tracing::error!(target: "oxp::rap", error = %e, "subscription events not delivered: the state store keeps failing");
                false
            })
        })
    }

    fn retries(&self) -> Option<Retries> {
        Some(self.deliverer.retries())
    }

    fn settle(&self) -> Duration {
        self.deliverer.attempt_timeout()
    }
}
