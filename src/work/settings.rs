//! The runner's settings (`OXP_WORK_*`).

use crate::settings::{ConfigError, Env};
use std::time::Duration;

/// How work is leased, retried and bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// `OXP_WORK_LEASE_SECS` (default 30): how long a runner holds work without renewing it
    /// (renewed every third of it while the work runs): a crashed process's work is taken over
    /// this long after its last renewal.
    pub(crate) lease: Duration,
    /// `OXP_WORK_SWEEP_SECS` (default 5): how often a local server looks for work to take over.
    pub(crate) tick: Duration,
    /// `OXP_WORK_MAX_ATTEMPTS` (default 5): runs before work is given up (dead-lettered, its
    /// caller told).
    pub(crate) max_attempts: u32,
    /// `OXP_WORK_MAX_PER_CALLER` (default 1000): work one caller may have accepted and not
    /// ended (jobs, tasks, deliveries).
    pub(crate) per_caller: usize,
    /// Work one process runs at once.
    pub(crate) at_once: usize,
    /// How long a record is kept at most, whatever happens to it.
    pub(crate) keep: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            tick: Duration::from_secs(5),
            max_attempts: 5,
            per_caller: 1000,
            at_once: 64,
            keep: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

impl Settings {
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mut settings = Self::default();
        if let Some(secs) = env.positive::<u64>("OXP_WORK_LEASE_SECS")? {
            settings.lease = Duration::from_secs(secs);
        }
        if let Some(secs) = env.positive::<u64>("OXP_WORK_SWEEP_SECS")? {
            settings.tick = Duration::from_secs(secs);
        }
        if let Some(n) = env.positive::<u32>("OXP_WORK_MAX_ATTEMPTS")? {
            settings.max_attempts = n;
        }
        if let Some(n) = env.positive::<usize>("OXP_WORK_MAX_PER_CALLER")? {
            settings.per_caller = n;
        }
        Ok(settings)
    }

    /// The wait before attempt `attempts + 1`, in milliseconds: one second doubled per attempt
    /// up to five minutes, less up to a fifth at random (so retries of many do not come at once).
    pub(crate) fn backoff(&self, attempts: u32) -> u64 {
        let full = 1000u64
            .saturating_mul(1 << attempts.saturating_sub(1).min(20))
            .min(300_000);
        let jitter = (uuid::Uuid::new_v4().as_u128() % 1000) as u64;
        full - full / 5 * jitter / 1000
    }
}
