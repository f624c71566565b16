//! The runner's settings (`OXP_WORK_*`), and how a kind of work is retried.

use crate::settings::{ConfigError, Env};
use std::time::Duration;

/// How a kind of work's failed runs and deliveries are tried again: the one backoff of the
/// runner, with its kind's numbers (the runner's own, or a protocol's: RAP's deliveries take
/// `OXP_RAP_DELIVERY_ATTEMPTS` and `OXP_RAP_RETRY_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Retries {
    /// Attempts in all, the first included: given up after the last.
    pub(crate) max_attempts: u32,
    /// The wait after the first failure; it doubles with each.
    pub(crate) base: Duration,
    /// The longest wait between two attempts (a `Retry-After` longer than this gives up).
    pub(crate) max_delay: Duration,
    /// The longest a delivery may go on from its first attempt (`None`: no bound but the
    /// attempts).
    pub(crate) total: Option<Duration>,
}

impl Retries {
    /// The wait before attempt `failures + 1`: the base doubled per failure up to the longest
    /// wait, less up to a fifth at random (so retries of many that failed together spread out).
    pub(crate) fn backoff(&self, failures: u32) -> Duration {
        let full = self
            .base
            .saturating_mul(1 << failures.saturating_sub(1).min(20))
            .min(self.max_delay);
        let jitter = (uuid::Uuid::new_v4().as_u128() % 1000) as u32;
        full - full / 5 * jitter / 1000
    }
}

/// How work is leased, run, retried and bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// `OXP_WORK_LEASE_SECS` (default 30): how long a runner holds work without renewing it
    /// (renewed every third of it while the work runs): a crashed process's work is taken over
    /// this long after its last renewal.
    pub(crate) lease: Duration,
    /// `OXP_WORK_SWEEP_SECS` (default 5): how often a local server looks for work to take over
    /// (work this process put off to a later time is run when due, without waiting for it).
    pub(crate) tick: Duration,
    /// `OXP_WORK_MAX_ATTEMPTS` (default 5), with one second doubled per failure up to five
    /// minutes: how the kinds without retries of their own are retried.
    pub(crate) retries: Retries,
    /// `OXP_WORK_MAX_PER_CALLER` (default 256): work one caller may have accepted and not
    /// ended (jobs, tasks and their kept records).
    pub(crate) per_caller: usize,
    /// `OXP_WORK_MAX_BYTES_PER_CALLER` (default 64 MiB): what one caller's kept results larger
    /// than a record holds may take of the store beside their records, counted by the part.
    pub(crate) bytes_per_caller: usize,
    /// `OXP_WORK_RUNNING_MAX` (default 64): work one process runs at once.
    pub(crate) at_once: usize,
    /// `OXP_WORK_RUNNING_PER_CALLER` (default 8): work of one caller one process runs at once;
    /// the rest of that caller's waits its turn, and other callers' runs go first.
    pub(crate) at_once_per_caller: usize,
    /// `OXP_WORK_DRAIN_SECS` (default 30): at shutdown, how long the work running here may
    /// still run before it is asked to stop (then given its grace) and let go.
    pub(crate) drain: Duration,
    /// How long a record is kept at most, whatever happens to it.
    pub(crate) keep: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            tick: Duration::from_secs(5),
            retries: Retries {
                max_attempts: 5,
                base: Duration::from_secs(1),
                max_delay: Duration::from_secs(300),
                total: None,
            },
            per_caller: 256,
            bytes_per_caller: 64 << 20,
            at_once: 64,
            at_once_per_caller: 8,
            drain: Duration::from_secs(30),
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
            settings.retries.max_attempts = n;
        }
        if let Some(n) = env.positive::<usize>("OXP_WORK_MAX_PER_CALLER")? {
            settings.per_caller = n;
        }
        if let Some(n) = env.positive::<usize>("OXP_WORK_MAX_BYTES_PER_CALLER")? {
            settings.bytes_per_caller = n;
        }
        if let Some(n) = env.positive::<usize>("OXP_WORK_RUNNING_MAX")? {
            settings.at_once = n;
        }
        if let Some(n) = env.positive::<usize>("OXP_WORK_RUNNING_PER_CALLER")? {
            settings.at_once_per_caller = n;
        }
        if let Some(secs) = env.parsed::<u64>("OXP_WORK_DRAIN_SECS")? {
            settings.drain = Duration::from_secs(secs);
        }
        Ok(settings)
    }
}
