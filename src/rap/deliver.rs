//! Delivering callback messages: retries with exponential backoff and jitter on network
//! errors, 5xx, 408 and 429 (honouring `Retry-After`), none on other statuses, bounded in
//! attempts and in total time.

use crate::rap::callback::{CallbackPolicy, Refused};
use axum::body::Bytes;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// How hard delivery tries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (`OXP_RAP_DELIVERY_ATTEMPTS`, default 8).
    pub max_attempts: u32,
    /// Backoff before the second attempt; it doubles each time (`OXP_RAP_RETRY_BASE_MS`,
    /// default 500).
    pub base: Duration,
    /// Longest wait between two attempts, `Retry-After` included (`OXP_RAP_RETRY_MAX_MS`,
    /// default 60000).
    pub max_delay: Duration,
    /// Longest time from the first attempt to giving up (`OXP_RAP_DELIVERY_TIMEOUT_SECS`,
    /// default 600).
    pub total: Duration,
    /// Bound on one attempt (`OXP_RAP_ATTEMPT_TIMEOUT_MS`, default 10000).
    pub attempt_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            base: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
            total: Duration::from_secs(600),
            attempt_timeout: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt `attempt` (1-based): "equal jitter", half of the
    /// exponential step plus a random share of the other half, so retries of many results
    /// that failed together spread out without ever retrying at once.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let step = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(20))
            .min(self.max_delay);
        let half = step / 2;
        half + half.mul_f64(fastrand::f64())
    }
}

/// How a delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The callback answered 2xx.
    Delivered {
        /// Attempts made.
        attempts: u32,
    },
    /// Given up; the message must go to the dead-letter store.
    Failed {
        /// Attempts made (0: none could be made: the URL was refused or no client could be
        /// built).
        attempts: u32,
        /// Why, for operators (never the message itself).
        reason: String,
    },
}

/// Sends callback messages under a [`CallbackPolicy`] and a [`RetryPolicy`].
#[derive(Debug, Clone)]
pub(crate) struct Deliverer {
    /// Built at the first delivery: building it loads the system's TLS roots (milliseconds of
    /// file reads), which a server that never delivers, or has not yet, should not pay at start.
    /// Built by the first delivery; a failed build is not kept, so the next delivery tries
    /// again (a passing failure must not stop every delivery until a restart).
    client: Arc<OnceLock<reqwest::Client>>,
    policy: Arc<CallbackPolicy>,
    retry: RetryPolicy,
}

impl Deliverer {
    /// A deliverer with its own HTTP client: no redirects (a redirect could lead past the
    /// policy), no proxy from the environment, and DNS answers filtered by `policy`.
    pub(crate) fn new(policy: CallbackPolicy, retry: RetryPolicy) -> Self {
        Self {
            client: Arc::default(),
            policy: Arc::new(policy),
            retry,
        }
    }

    /// The HTTP client, built by the first call.
    fn client(&self) -> Result<&reqwest::Client, String> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(self.policy.resolver())
            .connect_timeout(self.retry.attempt_timeout)
            .user_agent(concat!("oxp-lambda/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("callback HTTP client: {e}"))?;
        Ok(self.client.get_or_init(|| client))
    }

    /// The longest a whole delivery (every attempt) may take.
    pub(crate) fn longest(&self) -> Duration {
        self.retry.total + self.retry.attempt_timeout
    }

    /// The bound on one attempt.
    pub(crate) fn attempt_timeout(&self) -> Duration {
        self.retry.attempt_timeout
    }

    /// POSTs `body` (JSON) to `url` until it is accepted, a status says retrying is useless,
    /// or the attempts, the total time or `deadline` run out; with the invocation's
    /// `traceparent`, so the result joins the caller's trace.
    pub(crate) async fn deliver(
        &self,
        url: &str,
        body: Bytes,
        traceparent: Option<&str>,
        deadline: Option<Instant>,
    ) -> Delivery {
        let url = match self.policy.check_url(url) {
            Ok(url) => url,
            Err(refused) => {
                return Delivery::Failed {
                    attempts: 0,
                    reason: format!("callback URL refused: {refused}"),
                };
            }
        };
        let client = match self.client() {
            Ok(client) => client,
            Err(why) => {
                return Delivery::Failed {
                    attempts: 0,
                    reason: why,
                };
            }
        };
        let mut give_up_at = Instant::now() + self.retry.total;
        if let Some(deadline) = deadline {
            give_up_at = give_up_at.min(deadline);
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let remaining = give_up_at.saturating_duration_since(Instant::now());
            let mut post = client
                .post(url.clone())
                .header(CONTENT_TYPE, "application/json");
            if let Some(traceparent) = traceparent {
                post = post.header("traceparent", traceparent);
            }
            let sent = post
                .body(body.clone())
                .timeout(self.retry.attempt_timeout.min(remaining))
                .send()
                .await;
            let (reason, retry_after) = match sent {
                Ok(response) if response.status().is_success() => {
                    return Delivery::Delivered { attempts: attempt };
                }
                Ok(response) if retryable(response.status()) => (
                    format!("callback answered {}", response.status()),
                    retry_after(response.headers()),
                ),
                Ok(response) => {
                    return Delivery::Failed {
                        attempts: attempt,
                        reason: format!(
                            "callback answered {}; not retried (only 408, 429 and 5xx are)",
                            response.status()
                        ),
                    };
                }
                Err(e) => {
                    if let Some(refused) = refusal(&e) {
                        return Delivery::Failed {
                            attempts: attempt,
                            reason: format!("callback address refused: {refused}"),
                        };
                    }
                    // Without the URL: a callback URL may carry a token in its query.
                    (format!("callback unreachable: {}", e.without_url()), None)
                }
            };
            if attempt >= self.retry.max_attempts {
                return Delivery::Failed {
                    attempts: attempt,
                    reason: format!("{reason}; gave up after {attempt} attempts"),
                };
            }
            let wait = match retry_after {
                Some(wait) if wait > self.retry.max_delay => {
                    return Delivery::Failed {
                        attempts: attempt,
                        reason: format!(
                            "{reason} with Retry-After {} s, beyond the longest wait (OXP_RAP_RETRY_MAX_MS)",
                            wait.as_secs()
                        ),
                    };
                }
                Some(wait) => wait,
                None => self.retry.backoff(attempt),
            };
            if Instant::now() + wait >= give_up_at {
                return Delivery::Failed {
                    attempts: attempt,
                    reason: format!("{reason}; delivery time ran out after {attempt} attempts"),
                };
            }
            tracing::debug!(target: "oxp::rap", attempt, wait_ms = wait.as_millis() as u64, %reason, "callback delivery will be retried");
            tokio::time::sleep(wait).await;
        }
    }
}

fn retryable(status: StatusCode) -> bool {
    status.is_server_error()
        || status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
}

/// `Retry-After` as delay-seconds or an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
}

fn refusal(e: &reqwest::Error) -> Option<&Refused> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(refused) = err.downcast_ref::<Refused>() {
            return Some(refused);
        }
        source = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_with_jitter_and_is_capped() {
        let p = RetryPolicy {
            base: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            ..RetryPolicy::default()
        };
        for _ in 0..100 {
            let first = p.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = p.backoff(3);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            assert!(p.backoff(30) <= Duration::from_millis(1000));
        }
        let spread: std::collections::HashSet<_> = (0..20).map(|_| p.backoff(4)).collect();
        assert!(spread.len() > 1, "backoff is jittered");
    }

    #[test]
    fn retry_after_takes_seconds_and_http_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        let later = SystemTime::now() + Duration::from_secs(120);
        headers.insert(RETRY_AFTER, httpdate::fmt_http_date(later).parse().unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(wait > Duration::from_secs(100) && wait <= Duration::from_secs(120));
        headers.insert(RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[tokio::test]
    async fn the_http_client_is_built_by_the_first_delivery_not_with_the_deliverer() {
        let retry = RetryPolicy {
            max_attempts: 1,
            attempt_timeout: Duration::from_millis(500),
            ..RetryPolicy::default()
        };
        let policy = CallbackPolicy {
            allow_http: true,
            ..CallbackPolicy::default()
        };
        let deliverer = Deliverer::new(policy, retry);
        let shared = deliverer.clone();
        assert!(deliverer.client.get().is_none(), "no TLS roots loaded yet");
        // Nothing listens on port 9: the attempt fails, but the client was built for it.
        let sent = deliverer
            .deliver("http://127.0.0.1:9/results", Bytes::new(), None, None)
            .await;
        assert!(
            matches!(sent, Delivery::Failed { attempts: 1, .. }),
            "{sent:?}"
        );
        assert!(shared.client.get().is_some(), "built once, shared");
    }

    #[test]
    fn only_transient_statuses_are_retried() {
        for status in [500, 502, 503, 504, 429, 408] {
            assert!(retryable(StatusCode::from_u16(status).unwrap()), "{status}");
        }
        for status in [400, 401, 403, 404, 409, 410, 422, 301, 302] {
            assert!(
                !retryable(StatusCode::from_u16(status).unwrap()),
                "{status}"
            );
        }
    }
}
