//! Delivering callback messages, one attempt at a time: a network error, 5xx, 408 and 429
//! (with its `Retry-After`) are worth another attempt, other statuses are not. A call's answer
//! and a subscription's events are retried by the runner (their record due again after the
//! backoff, holding nothing meanwhile); the messages a running call sends on its way (a view,
//! progress, a question) are tried again in place, within the call's own time. Both wait by
//! the runner's one backoff, under RAP's numbers ([`RetryPolicy`]).

use crate::http_client;
use crate::rap::callback::{CallbackPolicy, Refused};
use crate::work::Retries;
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
    /// These numbers as the runner's retries of a kind of work.
    pub(crate) fn retries(&self) -> Retries {
        Retries {
            max_attempts: self.max_attempts,
            base: self.base,
            max_delay: self.max_delay,
            total: Some(self.total),
        }
    }
}

/// How one attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// The callback answered 2xx.
    Delivered,
    /// Not taken, and worth another attempt (not before `after`, when the callback said).
    Again {
        reason: String,
        after: Option<Duration>,
    },
    /// Not taken, and another attempt would not be (the URL or address refused, a 4xx).
    Refused(String),
}

/// How a delivery ended: given up, why (for operators, never the message itself); the
/// message must then go to the dead-letter store.
pub(crate) type Delivery = Result<(), String>;

/// Sends callback messages under a [`CallbackPolicy`] and a [`RetryPolicy`].
#[derive(Debug, Clone)]
pub(crate) struct Deliverer {
    /// Built by the first delivery (building it loads the system's TLS roots, which a server
    /// that never delivers should not pay at start); a failed build is not kept, so the next
    /// delivery tries again (a passing failure must not stop every delivery until a restart).
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
        let client = crate::http_client::builder()
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

    /// The runner's retries of a call's answer and a subscription's events.
    pub(crate) fn retries(&self) -> Retries {
        self.retry.retries()
    }

    /// POSTs `body` (JSON) to `url` once, within one attempt's time and `deadline`; with the
    /// invocation's `traceparent`, so the message joins the caller's trace.
    pub(crate) async fn attempt(
        &self,
        url: &str,
        body: Bytes,
        traceparent: Option<&str>,
        deadline: Option<Instant>,
    ) -> Attempt {
        let url = match self.policy.check_url(url) {
            Ok(url) => url,
            Err(refused) => return Attempt::Refused(format!("callback URL refused: {refused}")),
        };
        let client = match self.client() {
            Ok(client) => client,
            Err(why) => return Attempt::Refused(why),
        };
        let place = place(&url);
        let left = deadline.map_or(self.retry.attempt_timeout, |d| {
            d.saturating_duration_since(Instant::now())
        });
        let mut post = client.post(url).header(CONTENT_TYPE, "application/json");
        if let Some(traceparent) = traceparent {
            post = post.header("traceparent", traceparent);
        }
        let sent = post
            .body(body)
            .timeout(
                self.retry
                    .attempt_timeout
                    .min(left)
                    .max(Duration::from_millis(1)),
            )
            .send()
            .await;
        match sent {
            Ok(response) if response.status().is_success() => Attempt::Delivered,
            Ok(response) if retryable(response.status()) => Attempt::Again {
                reason: format!("callback {place} answered {}", response.status()),
                after: retry_after(response.headers()),
            },
            Ok(response) => Attempt::Refused(format!(
                "callback {place} answered {}; not retried (only 408, 429 and 5xx are)",
                response.status()
            )),
            Err(e) => match refusal(&e) {
                Some(refused) => Attempt::Refused(format!("callback address refused: {refused}")),
                None => Attempt::Again {
                    reason: format!("callback {place} unreachable: {}", http_client::cause(e)),
                    after: None,
                },
            },
        }
    }

    /// Delivers `message` (JSON) to `job`'s callback with its `traceparent`, as [`Self::deliver`].
    pub(crate) async fn send(
        &self,
        job: &crate::rap::job::Job,
        message: &impl serde::Serialize,
        deadline: Option<Instant>,
    ) -> Delivery {
        let body = Bytes::from(serde_json::to_vec(message).expect("messages serialize"));
        let (url, traceparent) = (&job.reply_to.callback_url, job.traceparent.as_deref());
        self.deliver(url, body, traceparent, deadline).await
    }

    /// POSTs `body` to `url` until it is accepted, a status says retrying is useless, or the
    /// attempts or `deadline` run out, waiting by the one backoff in between: for the messages
    /// of a call on its way (a call's answer and its subscriptions' events are the runner's).
    pub(crate) async fn deliver(
        &self,
        url: &str,
        body: Bytes,
        traceparent: Option<&str>,
        deadline: Option<Instant>,
    ) -> Delivery {
        let retries = self.retries();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let (reason, after) = match self.attempt(url, body.clone(), traceparent, deadline).await
            {
                Attempt::Delivered => return Ok(()),
                Attempt::Refused(reason) => return Err(reason),
                Attempt::Again { reason, after } => (reason, after),
            };
            let wait = retries.backoff(attempts).max(after.unwrap_or_default());
            let late = deadline.is_some_and(|d| Instant::now() + wait >= d);
            if attempts >= retries.max_attempts || wait > retries.max_delay || late {
                return Err(reason);
            }
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

/// Where `url` points, for the reasons operators read (a receiver down among many): its host
/// (at most 64 characters) and port, never its path or query, which may carry a token.
fn place(url: &reqwest::Url) -> String {
    let host = oxp_lambda_core::naming::shown(url.host_str().unwrap_or_default());
    match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
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
    fn the_runners_backoff_under_raps_numbers_grows_exponentially_with_jitter_and_is_capped() {
        let p = RetryPolicy {
            base: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            ..RetryPolicy::default()
        }
        .retries();
        for _ in 0..100 {
            let first = p.backoff(1);
            assert!(first >= Duration::from_millis(80) && first <= Duration::from_millis(100));
            let third = p.backoff(3);
            assert!(third >= Duration::from_millis(320) && third <= Duration::from_millis(400));
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
            .attempt("http://127.0.0.1:9/results", Bytes::new(), None, None)
            .await;
        assert!(matches!(sent, Attempt::Again { .. }), "{sent:?}");
        assert!(shared.client.get().is_some(), "built once, shared");
    }

    #[tokio::test]
    async fn a_failed_attempt_names_the_callbacks_host_and_what_failed_never_its_path_or_query() {
        let policy = CallbackPolicy {
            allow_http: true,
            ..CallbackPolicy::default()
        };
        let deliverer = Deliverer::new(policy, RetryPolicy::default());
        // Nothing listens on port 9.
        let sent = deliverer
            .attempt(
                "http://127.0.0.1:9/cb/secret-path?token=t0k",
                Bytes::new(),
                None,
                None,
            )
            .await;
        let Attempt::Again { reason, .. } = sent else {
            panic!("{sent:?}")
        };
        assert!(
            reason.starts_with("callback 127.0.0.1:9 unreachable: "),
            "{reason}"
        );
        assert!(
            reason.contains("refused"),
            "the cause, not reqwest's own words: {reason}"
        );
        assert!(
            !reason.contains("secret-path") && !reason.contains("t0k"),
            "{reason}"
        );
        // A receiver that answers: its status, with where it is.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut request).await;
            let answer = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
            tokio::io::AsyncWriteExt::write_all(&mut socket, answer)
                .await
                .unwrap();
        });
        let url = format!("http://127.0.0.1:{port}/cb?token=t0k");
        let Attempt::Refused(reason) = deliverer.attempt(&url, Bytes::new(), None, None).await
        else {
            panic!("a 404 is not retried")
        };
        assert_eq!(
            reason,
            format!(
                "callback 127.0.0.1:{port} answered 404 Not Found; not retried (only 408, 429 and 5xx are)"
            )
        );
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
