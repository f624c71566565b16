//! The subscriptions' settings (`OXP_SUBSCRIPTION_*`, `OXP_EVENT_MARKS_PER_SOURCE`).

use crate::settings::{ConfigError, Env};
use std::time::Duration;

/// The settings of [`Subscriptions`](super::Subscriptions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Events per minute delivered to one subscription (more wait their turn; a second's worth
    /// go at once).
    pub(crate) per_minute: u32,
    /// Events one subscription holds undelivered; beyond, a source is told to retry.
    pub(crate) max_backlog: u32,
    /// How long a subscription lives without an event; then it ends, with a final event.
    pub(crate) keep: Duration,
    /// Live subscriptions one caller may hold.
    pub(crate) per_caller: usize,
    /// The marks of events taken one source may hold (each kept the replay window).
    pub(crate) marks_per_source: u64,
}

impl Limits {
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            per_minute: env
                .positive("OXP_SUBSCRIPTION_EVENTS_PER_MINUTE")?
                .unwrap_or(600),
            max_backlog: env
                .positive("OXP_SUBSCRIPTION_MAX_BACKLOG")?
                .unwrap_or(1000),
            keep: Duration::from_secs(
                env.positive("OXP_SUBSCRIPTION_TTL_SECS")?
                    .unwrap_or(30 * 24 * 3600),
            ),
            per_caller: env
                .positive("OXP_SUBSCRIPTION_MAX_PER_CALLER")?
                .unwrap_or(100),
            marks_per_source: env
                .positive("OXP_EVENT_MARKS_PER_SOURCE")?
                .unwrap_or(100_000),
        })
    }
}
