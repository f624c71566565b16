//! Delivery: a subscription's accepted events sent in order by the one runner holding it. An
//! event the receiver did not take ends the run (the runner tries again after its backoff,
//! holding nothing meanwhile) and stays the next to send; one given up is dead-lettered and
//! the next follows.

use super::records::Keys;
use super::{Event, SubState, Subscriptions};
use governor::clock::{Clock, DefaultClock};
use oxp_lambda_core::durable::StateError;
use std::future::Future;
use std::time::{Duration, Instant};

/// What became of one event handed to the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Delivered, or dead-lettered: it counts as sent.
    Done,
    /// Not taken, and worth another attempt (not before `after`, when the receiver said).
    Again {
        reason: String,
        after: Option<Duration>,
    },
}

/// How a run of deliveries ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Drained {
    /// Nothing is left to send.
    All,
    /// The executor's time is up with events left.
    More,
    /// The next event was not taken (`progress`: this run sent others before it).
    Again {
        reason: String,
        after: Option<Duration>,
        progress: bool,
    },
}

/// One step of a delivery.
enum Step {
    /// Nothing is left.
    Empty,
    /// An event was sent.
    Sent,
    /// Not before this long (the subscription's pace).
    Paced(Duration),
    /// The next event was not taken.
    Again(String, Option<Duration>),
}

impl Subscriptions {
    /// Delivers subscription `id`'s accepted events in order through `send` until none is
    /// left, `deadline` comes, or one is not taken. The runner's lease makes this the one
    /// deliverer of the subscription.
    pub(crate) async fn drain<F, Fut>(
        &self,
        id: &str,
        deadline: Option<Instant>,
        send: F,
    ) -> Result<Drained, StateError>
    where
        F: Fn(Event) -> Fut,
        Fut: Future<Output = Sent>,
    {
        let mut progress = false;
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(Drained::More);
            }
            match self.next(id, &send).await? {
                Step::Empty => return Ok(Drained::All),
                Step::Sent => progress = true,
                Step::Paced(wait) => {
                    if deadline.is_some_and(|d| Instant::now() + wait >= d) {
                        return Ok(Drained::More);
                    }
                    tokio::time::sleep(wait).await;
                }
                Step::Again(reason, after) => {
                    return Ok(Drained::Again {
                        reason,
                        after,
                        progress,
                    });
                }
            }
        }
    }

    /// Gives subscription `id`'s next event up through `send` (it dead-letters it); whether
    /// more are left to deliver.
    pub(crate) async fn pass<F, Fut>(&self, id: &str, send: F) -> Result<bool, StateError>
    where
        F: Fn(Event) -> Fut,
        Fut: Future<Output = Sent>,
    {
        loop {
            match self.next(id, &send).await? {
                Step::Empty => return Ok(false),
                Step::Paced(wait) => tokio::time::sleep(wait).await,
                Step::Sent | Step::Again(..) => break,
            }
        }
        Ok(self
            .read(id)
            .await?
            .is_some_and(|(s, _)| s.state == SubState::Active && s.delivered < s.accepted))
    }

    /// Sends subscription `id`'s next event, at its pace.
    async fn next<F, Fut>(&self, id: &str, send: &F) -> Result<Step, StateError>
    where
        F: Fn(Event) -> Fut,
        Fut: Future<Output = Sent>,
    {
        let Some((sub, item)) = self.read(id).await? else {
            return Ok(Step::Empty);
        };
        if sub.state != SubState::Active || sub.delivered >= sub.accepted {
            return Ok(Step::Empty);
        }
        // The subscription's pace. Now and then the paces back at their start are dropped: a
        // key per subscription ever delivered to would grow without bound.
        let paced = self
            .paced
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if paced % 1024 == 1023 {
            self.limiter.retain_recent();
        }
        if let Err(not_until) = self.limiter.check_key(&id.to_owned()) {
            return Ok(Step::Paced(
                not_until.wait_time_from(DefaultClock::default().now()),
            ));
        }
        let seq = sub.delivered + 1;
        let events = Keys::events(id);
        let text = self
            .store
            .get(&events, &Keys::seq(seq))
            .await?
            .map(|i| String::from_utf8_lossy(&i.value).into_owned());
        let last = sub.max_events == Some(seq);
        if let Some(text) = text {
            let event = Event {
                sub: sub.clone(),
                id: id.to_owned(),
                text,
                last,
            };
            if let Sent::Again { reason, after } = send(event).await {
                return Ok(Step::Again(reason, after));
            }
        }
        // Counted over the record as read (read again only if an event came meanwhile), and
        // the event's row gone, side by side.
        let key = Keys::seq(seq);
        let (counted, ()) = tokio::try_join!(
            self.update_from(id, Some((sub, item)), |s| {
                let next = s.delivered + 1 == seq;
                if next {
                    s.delivered = seq;
                    if last {
                        s.state = SubState::Done;
                    }
                }
                next
            }),
            self.store.delete(&events, &key),
        )?;
        if let Some(sub) = counted
            && sub.state == SubState::Done
        {
            self.unindex(id, &sub).await?;
            return Ok(Step::Empty);
        }
        Ok(Step::Sent)
    }
}
