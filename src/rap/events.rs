//! Subscription events as RAP delivers them: a `subscription_event` to the subscribing call's
//! callback, through the same delivery as results (retries, then the dead-letter store), in
//! order, one subscription at a time ([`Subscriptions::drain`]).
//!
//! Locally a task drains a subscription as soon as an event is accepted; in Lambda the HTTP
//! function queues a record (`{"events_of": [<subscription>, ...]}`) that the worker role drains, so
//! a delivery outlives the request that accepted the event. One
//! schedule names up to [`SCHEDULE_BATCH`] subscriptions, drained [`AT_ONCE`] at a time, so an
//! event fanned out to thousands is a few queued records, not thousands.

use crate::rap::dead_letter::{DeadLetter, DeadLetters};
use crate::rap::deliver::{Deliverer, Delivery};
use crate::rap::job::{rfc3339, unix_ms};
use crate::rap::messages::SubscriptionEvent;
use crate::server::{BoxFuture, CallContext, Handled, RecordHandler};
use crate::sqs::Sqs;
use crate::subscriptions::{AT_ONCE, Deliver, Event, SCHEDULE_BATCH, Subscriptions};
use axum::body::Bytes;
use futures_util::{StreamExt, stream};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Weak};
use std::time::{Instant, SystemTime};

/// The queued record that asks the worker to drain subscriptions (at most
/// [`SCHEDULE_BATCH`] of them).
#[derive(Debug, Serialize, Deserialize)]
struct EventsOf {
    events_of: Vec<String>,
}

/// RAP's delivery of subscription events.
pub(crate) struct EventDelivery {
    subscriptions: Arc<Subscriptions>,
    deliverer: Deliverer,
    dead_letters: Arc<DeadLetters>,
    /// The worker's queue, in Lambda; `None`: drained by a task of this process.
    queue: Option<(Sqs, String)>,
    this: Weak<EventDelivery>,
}

impl std::fmt::Debug for EventDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventDelivery")
            .field("queued", &self.queue.is_some())
            .finish_non_exhaustive()
    }
}

impl EventDelivery {
    pub(crate) fn new(
        subscriptions: Arc<Subscriptions>,
        deliverer: Deliverer,
        dead_letters: Arc<DeadLetters>,
        queue: Option<(Sqs, String)>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            subscriptions,
            deliverer,
            dead_letters,
            queue,
            this: this.clone(),
        })
    }

    /// Delivers subscription `id`'s accepted events until none is left or `deadline` comes;
    /// whether none is left.
    pub(crate) async fn drain(&self, id: &str, deadline: Option<Instant>) -> bool {
        let drained = self
            .subscriptions
            .drain(id, deadline, |event| self.send(event, deadline))
            .await;
        drained.unwrap_or_else(|e| {
            tracing::warn!(target: "oxp::rap", error = %e, "subscription events not drained");
            false
        })
    }

    /// Drains each of `ids`, [`AT_ONCE`] at a time (each in its own order); whether every one
    /// was drained.
    pub(crate) async fn drain_all(&self, ids: &[String], deadline: Option<Instant>) -> bool {
        stream::iter(ids.iter().cloned())
            .map(|id| async move { self.drain(&id, deadline).await })
            .buffer_unordered(AT_ONCE)
            .fold(true, |all, drained| async move { all && drained })
            .await
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

impl Deliver for EventDelivery {
    fn schedule(&self, subscriptions: Vec<String>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            match &self.queue {
                Some((sqs, url)) => {
                    let body = serde_json::to_string(&EventsOf {
                        events_of: subscriptions,
                    })
                    .expect("records serialize");
                    sqs.send(url, body).await
                }
                None => {
                    let Some(this) = self.this.upgrade() else {
                        return Err("the delivery is shutting down".into());
                    };
                    tokio::spawn(async move { this.drain_all(&subscriptions, None).await });
                    Ok(())
                }
            }
        })
    }
}

/// The worker role's records that name a subscription to drain.
pub(crate) struct EventRecords(pub(crate) Arc<EventDelivery>);

impl RecordHandler for EventRecords {
    fn handle<'a>(&'a self, body: &'a str, context: CallContext) -> BoxFuture<'a, Handled> {
        Box::pin(async move {
            let Ok(record) = serde_json::from_str::<EventsOf>(body) else {
                return Handled::NotMine;
            };
            if record.events_of.len() > SCHEDULE_BATCH {
                return Handled::NotMine;
            }
            if self.0.drain_all(&record.events_of, context.deadline).await {
                Handled::Done
            } else {
                Handled::Retry("events of the subscription remain".into())
            }
        })
    }
}
