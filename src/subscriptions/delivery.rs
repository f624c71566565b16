//! Delivery: a subscription's accepted events sent in order by the one runner holding it.

use super::records::Keys;
use super::{Event, SubState, Subscriptions};
use governor::clock::{Clock, DefaultClock};
use oxp_lambda_core::durable::StateError;
use std::future::Future;
use std::time::Instant;

impl Subscriptions {
    /// Delivers subscription `id`'s accepted events in order through `send` until none is
    /// left or `deadline` comes (then `false`: more remain). The runner's lease makes this the
    /// one deliverer of the subscription. `send` answers once the event was delivered or
    /// dead-lettered; either way it counts as sent.
    pub(crate) async fn drain<F, Fut>(
        &self,
        id: &str,
        deadline: Option<Instant>,
        send: F,
    ) -> Result<bool, StateError>
    where
        F: Fn(Event) -> Fut,
        Fut: Future<Output = ()>,
    {
        self.drain_leased(id, deadline, &send).await
    }

    async fn drain_leased<F, Fut>(
        &self,
        id: &str,
        deadline: Option<Instant>,
        send: &F,
    ) -> Result<bool, StateError>
    where
        F: Fn(Event) -> Fut,
        Fut: Future<Output = ()>,
    {
        loop {
            let Some((sub, item)) = self.read(id).await? else {
                return Ok(true);
            };
            if sub.state != SubState::Active || sub.delivered >= sub.accepted {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            // The subscription's pace: wait for its turn (or stop at the deadline). Now and
            // then the paces back at their start are dropped: a key per subscription ever
            // delivered to would grow without bound.
            let paced = self
                .paced
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if paced % 1024 == 1023 {
                self.limiter.retain_recent();
            }
            if let Err(not_until) = self.limiter.check_key(&id.to_owned()) {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                if deadline.is_some_and(|d| Instant::now() + wait >= d) {
                    return Ok(false);
                }
                tokio::time::sleep(wait).await;
                continue;
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
                send(Event {
                    sub: sub.clone(),
                    id: id.to_owned(),
                    text,
                    last,
                })
                .await;
            }
            // Counted over the record as read (read again only if an event came meanwhile),
            // and the event's row gone, side by side.
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
                return Ok(true);
            }
        }
    }
}
