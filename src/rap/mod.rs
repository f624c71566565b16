//! The async tool invocation adapter (RAP): the same [`Registry`] served as a toolset whose
//! invocations are acknowledged at once and answered later, by POSTing a `tool_result` to
//! the caller's callback URL.
//!
//! | route | answer |
//! |---|---|
//! | `GET /.well-known/rap-toolset` | the toolset definition ([`wire::Toolset`]) |
//! | `POST /invoke` | 200 `{"status":"accepted"}`; the result goes to `callback_url` |
//! | `POST /close_thread` | 200 `{"status":"ok"}`, logged |
//!
//! The path of an invocation: [`routes`] checks what must be right to accept it at all (a
//! JSON object with `id`, `group_id` and a permitted `callback_url`), notes everything else
//! that is wrong as a [`job::Rejection`], and puts a [`job::Job`] on the [`queue::Queue`]
//! before answering 200. A [`worker::Worker`] runs the tool (arguments validated against its
//! schema first), and [`deliver::Deliverer`] POSTs the result with retries; what cannot be
//! delivered is recorded by [`dead_letter::DeadLetters`].

pub mod callback;
pub mod dead_letter;
pub mod deliver;
pub mod job;
pub mod queue;
pub mod routes;
pub mod toolset;
pub mod wire;
pub mod worker;

use crate::config::{Config, RapConfig};
use crate::registry::Registry;
use crate::secrets::Secrets;
use callback::CallbackPolicy;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use queue::{InProcessQueue, Queue};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use toolset::ServedToolset;
use worker::Worker;

/// The RAP adapter's state.
#[derive(Debug)]
pub struct Rap {
    toolset: Arc<ServedToolset>,
    queue: Queue,
    policy: CallbackPolicy,
    limiter: Option<Limiter>,
    lambda: bool,
}

#[derive(Debug)]
struct Limiter {
    per_user: DefaultKeyedRateLimiter<String>,
    checks: AtomicU64,
}

impl Rap {
    /// The adapter for `toolset`, enqueuing to `queue`, with the rules of `config`.
    pub fn new(toolset: Arc<ServedToolset>, queue: Queue, config: &RapConfig) -> Self {
        let limiter = config.rate_limit.map(|limit| {
            let burst = NonZeroU32::new(limit.invocations).unwrap_or(NonZeroU32::MIN);
            let quota = Quota::with_period(limit.per / burst.get())
                .unwrap_or_else(|| Quota::per_second(burst))
                .allow_burst(burst);
            Limiter {
                per_user: DefaultKeyedRateLimiter::keyed(quota),
                checks: AtomicU64::new(0),
            }
        });
        Self {
            toolset,
            queue,
            policy: config.callbacks.clone(),
            limiter,
            lambda: config.callbacks.lambda,
        }
    }

    /// The served toolset.
    pub fn toolset(&self) -> &Arc<ServedToolset> {
        &self.toolset
    }

    /// The queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Waits for the in-process queue to empty, up to `timeout`, then dead-letters what is
    /// left; see [`InProcessQueue::drain`]. Nothing to do for SQS.
    pub async fn drain(&self, timeout: Duration) -> usize {
        match &self.queue {
            Queue::InProcess(queue) => queue.drain(timeout).await,
            Queue::Sqs { .. } => 0,
        }
    }

    /// `Err(wait)` when `user` is over the rate limit. Invocations without a user share one
    /// allowance.
    fn check_rate(&self, user: Option<&str>) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        // Forget users idle for a full period now and then, so memory stays bounded.
        if limiter.checks.fetch_add(1, Ordering::Relaxed) % 1024 == 1023 {
            limiter.per_user.retain_recent();
        }
        limiter
            .per_user
            .check_key(&user.unwrap_or_default().to_owned())
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

/// Builds the worker `config` describes: the served toolset, the deliverer and the
/// dead-letter store (the SQS one when `OXP_RAP_DEAD_LETTER_QUEUE_URL` is set, with `sqs`).
pub fn build_worker(
    registry: &Registry,
    config: &Config,
    secrets: Secrets,
    sqs: Option<&aws_sdk_sqs::Client>,
) -> Result<Worker, String> {
    let toolset = Arc::new(ServedToolset::new(registry, &config.rap)?);
    let deliverer =
        deliver::Deliverer::new(config.rap.callbacks.clone(), config.rap.retry.clone())?;
    let dead_letters = match (&config.rap.dead_letter_queue_url, sqs) {
        (Some(url), Some(client)) => dead_letter::DeadLetters::Sqs {
            client: client.clone(),
            queue_url: url.clone(),
        },
        (Some(_), None) => {
            return Err("OXP_RAP_DEAD_LETTER_QUEUE_URL: no AWS configuration was loaded".into());
        }
        (None, _) => dead_letter::DeadLetters::file(&config.rap.dead_letter_file),
    };
    Ok(Worker::new(
        toolset,
        secrets,
        deliverer,
        dead_letters,
        config.rap.tool_timeout,
        config.max_concurrent_calls,
    ))
}

/// Builds the adapter `config` describes: enqueuing to SQS when `OXP_RAP_QUEUE_URL` is set
/// (with `sqs`), else to an in-process queue with its own worker.
pub fn build(
    registry: &Registry,
    config: &Config,
    secrets: Secrets,
    sqs: Option<&aws_sdk_sqs::Client>,
) -> Result<Rap, String> {
    let (toolset, queue) = match (&config.rap.queue_url, sqs) {
        (Some(url), Some(client)) => (
            Arc::new(ServedToolset::new(registry, &config.rap)?),
            Queue::Sqs {
                client: client.clone(),
                queue_url: url.clone(),
            },
        ),
        (Some(_), None) => return Err("OXP_RAP_QUEUE_URL: no AWS configuration was loaded".into()),
        (None, _) => {
            let worker = Arc::new(build_worker(registry, config, secrets, sqs)?);
            (
                worker.toolset().clone(),
                Queue::InProcess(InProcessQueue::new(worker)),
            )
        }
    };
    Ok(Rap::new(toolset, queue, &config.rap))
}
