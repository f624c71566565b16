//! Expiry: a subscription that took no event for its lifetime ends with a last event.

use super::records::Keys;
use super::{SubState, Subscriptions, ms, now_ms};
use oxp_lambda_core::durable::StateError;
use serde_json::json;
use std::time::Duration;

/// Ends subscription `id` if it took no event for its lifetime: a last event, `final`, tells
/// its caller (delivered after those it holds); else it is looked at again when its lifetime
/// would end.
pub(super) struct Expiries(pub(super) std::sync::Weak<Subscriptions>);

impl crate::work::Handler for Expiries {
    fn run<'a>(
        &'a self,
        _: &'a str,
        work: &'a crate::work::Work,
        _: crate::work::Run,
    ) -> crate::server::BoxFuture<'a, crate::work::Outcome> {
        use crate::work::Outcome;
        Box::pin(async move {
            let (Some(subscriptions), Some(id)) = (
                self.0.upgrade(),
                work.body.get("sub").and_then(|s| s.as_str()),
            ) else {
                return Outcome::Done;
            };
            match subscriptions.expire(id).await {
                Ok(None) => Outcome::Done,
                Ok(Some(left)) => Outcome::After(left),
                Err(e) => Outcome::Retry(e.0),
            }
        })
    }

    fn give_up<'a>(
        &'a self,
        _: &'a str,
        _: &'a crate::work::Work,
        reason: &'a str,
        _: Option<&'a [u8]>,
    ) -> crate::server::BoxFuture<'a, bool> {
        Box::pin(async move {
            tracing::error!(target: "oxp::subscriptions", reason, "a subscription's expiry not run: it is forgotten without a final event");
            false
        })
    }
}

/// The text of the last event of a subscription that ended because no event came.
fn expired_text(keep: Duration) -> String {
    json!({
        "ended": "expired",
        "message": format!(
            "The subscription ended: no event came for {}",
            humantime::format_duration(keep)
        ),
    })
    .to_string()
}

impl Subscriptions {
    /// Ends subscription `id` with a final event if it took no event for its lifetime (`None`:
    /// it ended, or had ended before); else how long until it would.
    async fn expire(&self, id: &str) -> Result<Option<Duration>, StateError> {
        let keep = ms(self.keep);
        let text = expired_text(self.keep);
        let left = std::sync::Mutex::new(None);
        let change = |sub: &mut super::Sub| {
            if !matches!(sub.state, SubState::Pending | SubState::Active) {
                return false;
            }
            let (now, ends) = (now_ms(), sub.renewed_ms.saturating_add(keep));
            if now < ends {
                *left.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(Duration::from_millis(ends - now));
                return false;
            }
            // Its last event: after those it holds, and nothing after it.
            sub.accepted += 1;
            sub.max_events = Some(sub.accepted);
            true
        };
        if let Some(sub) = self.take_event(id, &text, change).await? {
            self.store
                .delete(&Keys::of_topic(&sub.source, &sub.topic), id)
                .await?;
            self.schedule(vec![(id.to_owned(), sub.owner.caller_key())])
                .await;
        }
        Ok(left.into_inner().unwrap_or_else(|p| p.into_inner()))
    }
}
