//! Subscription events as RAP delivers them: a `subscription_event` to the subscribing call's
//! callback, through the same delivery as results (retries, then the dead-letter store), in
//! order ([`Subscriptions::drain`]). Delivering a subscription's events is work of the one
//! runner ([`crate::work`], kind [`EVENTS`]): run at once where the event was accepted (in
//! Lambda by the worker role, from its queue), one run at a time per subscription, taken over
//! when its process dies.

use crate::rap::dead_letter::{DeadLetter, DeadLetters};
use crate::rap::deliver::{Deliverer, Delivery};
use crate::rap::job::{rfc3339, unix_ms};
use crate::rap::messages::SubscriptionEvent;
use crate::server::BoxFuture;
use crate::subscriptions::{EVENTS, Event, Subscriptions};
use crate::work::{Handler, Outcome, Run, Work};
use axum::body::Bytes;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// RAP's delivery of subscription events.
pub(crate) struct EventDelivery {
    subscriptions: Arc<Subscriptions>,
    deliverer: Deliverer,
    dead_letters: Arc<DeadLetters>,
}

impl std::fmt::Debug for EventDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventDelivery").finish_non_exhaustive()
    }
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

    /// Delivers one event, or dead-letters it.
    async fn send(&self, event: Event, deadline: Option<Instant>) {
        let owner = &event.sub.owner;
        let message = SubscriptionEvent {
            kind: "subscription_event",
            group_id: owner.group_id.clone(),
            tool_call_id: owner.tool_call_id.clone(),
            text: event.text,
            associative: false,
            last: event.last,
        };
        let body = Bytes::from(serde_json::to_vec(&message).expect("messages serialize"));
        let delivery = self
            .deliverer
            .deliver(
                &owner.callback_url,
                body,
                owner.traceparent.as_deref(),
                deadline,
            )
            .await;
        let (attempts, reason) = match delivery {
            Delivery::Delivered { attempts } => (attempts, None),
            Delivery::Failed { attempts, reason } => (attempts, Some(reason)),
        };
        let mut recorded = Ok(());
        if let Some(reason) = &reason {
            let now = rfc3339(unix_ms(SystemTime::now()));
            let letter = DeadLetter {
                reason: reason.clone(),
                attempts,
                callback_url: owner.callback_url.clone(),
                operation: None,
                received_at: now.clone(),
                failed_at: now,
                message: serde_json::to_value(&message).expect("messages serialize"),
            };
            recorded = self.dead_letters.record(&letter).await;
        }
        let delivery = match (&reason, &recorded) {
            (None, _) => "delivered",
            (Some(_), Ok(())) => "dead_lettered",
            (Some(_), Err(_)) => "not_recorded",
        };
        tracing::info!(
            target: "oxp::rap::audit",
            subscription = event.id.as_str(),
            tool_call_id = owner.tool_call_id.as_str(),
            group_id = owner.group_id.as_str(),
            last = event.last,
            delivery,
            attempts,
            reason = reason.as_deref(),
            "subscription_event"
        );
    }
}

impl Handler for EventDelivery {
    fn run<'a>(&'a self, _: &'a str, work: &'a Work, run: Run) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(id) = work.body.get("sub").and_then(|s| s.as_str()) else {
                return Outcome::Done;
            };
            match self
                .subscriptions
                .drain(id, run.deadline, |event| self.send(event, run.deadline))
                .await
            {
                Ok(true) => Outcome::Done,
                // This executor's time is up with events left: on, at once, anywhere.
                Ok(false) => Outcome::Continue,
                Err(e) => Outcome::Retry(e.0),
            }
        })
    }

    fn give_up<'a>(&'a self, _: &'a str, work: &'a Work, reason: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // The events stay kept: the subscription's next event makes its delivery due again.
            tracing::error!(target: "oxp::rap", subscription = ?work.body.get("sub"), reason, "subscription events not delivered: the state store keeps failing");
        })
    }
}
