//! Each caller's allowance of calls per period: MCP's "Servers MUST rate limit tool
//! invocations", kept by the one invoker for every protocol it runs calls of
//! (`OXP_RATE_LIMIT`), and by RAP for its invocations as it accepts them.

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use std::hash::{BuildHasher, RandomState};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A number of invocations per period, per caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Invocations allowed per period (also the burst).
    pub invocations: u32,
    /// The period.
    pub per: Duration,
}

impl RateLimit {
    /// `N/s`, `N/min` or `N/h` (N above 0), as the settings write it.
    pub fn parse(text: &str) -> Option<Self> {
        let (count, per) = text.trim().split_once('/')?;
        let invocations: u32 = count.trim().parse().ok().filter(|n| *n > 0)?;
        let per = match per.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return None,
        };
        Some(Self { invocations, per })
    }
}

/// Each caller's allowance under one [`RateLimit`]: a burst of `invocations`, refilled evenly
/// over the period. Callers idle for a whole period are forgotten now and then, so the table
/// stays bounded by the callers of one period.
///
/// A caller is keyed by a 64-bit hash of its subject under this process's random keys, so a
/// check copies nothing: two callers share an allowance only if their hashes collide, which
/// no caller can aim at without the keys.
#[derive(Debug)]
pub struct CallRate {
    per_caller: DefaultKeyedRateLimiter<u64>,
    keys: RandomState,
    checks: AtomicU64,
}

impl CallRate {
    /// The allowance `limit` gives each caller.
    pub fn new(limit: RateLimit) -> Self {
        let burst = NonZeroU32::new(limit.invocations).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(limit.per / burst.get())
            .unwrap_or_else(|| Quota::per_second(burst))
            .allow_burst(burst);
        Self {
            per_caller: DefaultKeyedRateLimiter::keyed(quota),
            keys: RandomState::new(),
            checks: AtomicU64::new(0),
        }
    }

    /// Counts one invocation of `caller` (an authenticated subject; `None`, the one anonymous
    /// caller every unauthenticated request is): `Err(wait)` when it is over its allowance, the
    /// time until its next one.
    pub fn check(&self, caller: Option<&str>) -> Result<(), Duration> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % 1024 == 1023 {
            self.per_caller.retain_recent();
        }
        self.per_caller
            .check_key(&self.keys.hash_one(caller.unwrap_or_default()))
            .map_err(|not_until| {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                wait.max(Duration::from_millis(1))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_n_per_second_minute_or_hour() {
        let limit = |n, secs| {
            Some(RateLimit {
                invocations: n,
                per: Duration::from_secs(secs),
            })
        };
        assert_eq!(RateLimit::parse("5/s"), limit(5, 1));
        assert_eq!(RateLimit::parse(" 100 / min "), limit(100, 60));
        assert_eq!(RateLimit::parse("1/h"), limit(1, 3600));
        for bad in ["0/s", "5", "5/day", "-1/s", "x/min", ""] {
            assert_eq!(RateLimit::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn each_caller_has_its_own_allowance_and_is_told_how_long_to_wait() {
        let rate = CallRate::new(RateLimit::parse("2/min").unwrap());
        assert!(rate.check(Some("alice")).is_ok());
        assert!(rate.check(Some("alice")).is_ok());
        let wait = rate.check(Some("alice")).unwrap_err();
        assert!(
            wait > Duration::from_secs(20) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert!(
            rate.check(Some("bob")).is_ok(),
            "another caller's allowance is its own"
        );
        assert!(rate.check(None).is_ok() && rate.check(None).is_ok());
        assert!(
            rate.check(None).is_err(),
            "the anonymous caller is one caller"
        );
    }
}
