//! The async adapter's settings (`OXP_RAP_*`).

use crate::rap::callback::CallbackPolicy;
use crate::rap::deliver::RetryPolicy;
use crate::settings::{ConfigError, Env, invalid};
use oxp_lambda_core::invoke::rate::RateLimit;
use std::time::Duration;

/// Settings of the async tool invocation (RAP) adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct RapConfig {
    /// `OXP_RAP` (`on` or `off`): serve `/invoke`, `/close_thread` and
    /// `/.well-known/rap-toolset`. Default: on locally; in Lambda, on when a queue is set.
    pub enabled: bool,
    /// `OXP_RAP_QUEUE_URL`: in Lambda, the SQS queue that wakes the worker role for an
    /// accepted invocation (kept in `OXP_STATE_TABLE`; required there, where nothing may run
    /// after the response). Unset locally: invocations run in the process that accepted them.
    pub queue_url: Option<String>,
    /// `OXP_RAP_DEAD_LETTER_QUEUE_URL`: the SQS queue undeliverable results are recorded in
    /// (required in Lambda).
    pub dead_letter_queue_url: Option<String>,
    /// `OXP_RAP_DEAD_LETTER_FILE` (default `oxp-dead-letters.jsonl`): where undeliverable
    /// results are recorded, one JSON object per line, when no dead-letter queue is set.
    pub dead_letter_file: std::path::PathBuf,
    /// `OXP_RAP_DEAD_LETTER_MAX_BYTES` (default 64 MiB): the dead-letter file is moved to
    /// `<file>.1` before it grows past this.
    pub dead_letter_max_bytes: u64,
    /// `OXP_RAP_DEAD_LETTER_MAX_BYTES_PER_CALLER` (default a quarter of
    /// `dead_letter_max_bytes`; all of it where every call is anonymous): what one caller's
    /// letters may take of the dead-letter file before it is rotated. Past it the caller's next
    /// letters are not recorded (an error line each), so one caller whose callbacks all fail can
    /// never rotate another caller's letters away.
    pub dead_letter_max_bytes_per_caller: u64,
    /// `OXP_RAP_TOOLSET_NAME` (default `oxp-lambda`): the toolset's `name`.
    pub toolset_name: String,
    /// `OXP_RAP_TOOLSET_DESCRIPTION`: the toolset's `description`.
    pub toolset_description: Option<String>,
    /// `OXP_RAP_ENDPOINT`: the invocation URL the toolset advertises. Default: derived from
    /// the discovery request (`X-Forwarded-Proto`, `Host`, stage and base path) plus `/invoke`.
    pub endpoint: Option<String>,
    /// `OXP_RAP_TOOLS`: comma-separated `Name@x.y.z` pins; other tools serve their latest
    /// release.
    pub pins: Vec<String>,
    /// Callback URL rules (`OXP_RAP_CALLBACK_HOSTS`, `OXP_RAP_ALLOW_HTTP`,
    /// `OXP_RAP_ALLOW_PRIVATE_CALLBACKS`, `OXP_RAP_ALLOW_LOOPBACK_CALLBACKS`).
    pub callbacks: CallbackPolicy,
    /// Callback delivery retries (`OXP_RAP_DELIVERY_ATTEMPTS`, `OXP_RAP_RETRY_BASE_MS`,
    /// `OXP_RAP_RETRY_MAX_MS`, `OXP_RAP_DELIVERY_TIMEOUT_SECS`, `OXP_RAP_ATTEMPT_TIMEOUT_MS`).
    pub retry: RetryPolicy,
    /// `OXP_RAP_RATE_LIMIT` (`N/s`, `N/min` or `N/h`): invocations per user (per execution
    /// environment in Lambda); unset: no limit.
    pub rate_limit: Option<RateLimit>,
    /// `OXP_RAP_MAX_PENDING` (default 1024): invocations one local server runs or waits to run
    /// at once; more are refused with 503 and `Retry-After`. (One caller's share of the work
    /// every process shares is `OXP_WORK_MAX_PER_CALLER`, then 429.)
    pub max_pending: usize,
    /// `OXP_RAP_TOOL_TIMEOUT_MS` (default: `OXP_TOOL_TIMEOUT_MS`; `0` disables): longest an
    /// async tool run may take. In Lambda the worker's deadline bounds it too.
    pub tool_timeout: Option<Duration>,
    /// `OXP_RAP_CHOICE_TIMEOUT_SECS` (default 600): how long a question to the user
    /// (`user_choice`) waits for the answer, counted from the invocation's arrival. Locally the
    /// call's own time limit (`OXP_RAP_TOOL_TIMEOUT_MS`) bounds it too; in Lambda a call still
    /// waiting when its worker's time is up waits on in a later delivery of the job.
    pub choice_timeout: Duration,
}

impl Default for RapConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            queue_url: None,
            dead_letter_queue_url: None,
            dead_letter_file: "oxp-dead-letters.jsonl".into(),
            dead_letter_max_bytes: 64 * 1024 * 1024,
            dead_letter_max_bytes_per_caller: 16 * 1024 * 1024,
            toolset_name: "oxp-lambda".into(),
            toolset_description: None,
            endpoint: None,
            pins: Vec::new(),
            callbacks: Default::default(),
            retry: Default::default(),
            rate_limit: None,
            max_pending: 1024,
            tool_timeout: Some(Duration::from_secs(30)),
            choice_timeout: Duration::from_secs(600),
        }
    }
}

impl RapConfig {
    /// `tool_timeout` is the server's (`OXP_TOOL_TIMEOUT_MS`), the default of async runs;
    /// `host` is where a local server listens (loopback callbacks follow it); `anonymous`, that
    /// callers do not authenticate (every call the one anonymous caller's: no share to keep).
    pub(crate) fn from_env(
        env: &Env<'_>,
        tool_timeout: Option<Duration>,
        host: std::net::IpAddr,
        anonymous: bool,
    ) -> Result<Self, ConfigError> {
        let lambda = env.in_lambda();
        let mut c = RapConfig {
            tool_timeout,
            queue_url: env.get("OXP_RAP_QUEUE_URL"),
            dead_letter_queue_url: env.get("OXP_RAP_DEAD_LETTER_QUEUE_URL"),
            toolset_description: env.get("OXP_RAP_TOOLSET_DESCRIPTION"),
            endpoint: env.get("OXP_RAP_ENDPOINT"),
            ..RapConfig::default()
        };
        c.enabled = match env.get("OXP_RAP").as_deref().map(str::trim) {
            None => !lambda || c.queue_url.is_some(),
            Some("on") => true,
            Some("off") => false,
            Some(_) => return Err(invalid("OXP_RAP", "must be 'on' or 'off'")),
        };
        if c.enabled && lambda {
            queues_in_lambda(&c)?;
        }
        dead_letters_from_env(env, &mut c, anonymous)?;
        if let Some(v) = env.get("OXP_RAP_TOOLSET_NAME") {
            let v = v.trim().to_owned();
            if v.chars().count() > 128 {
                return Err(invalid(
                    "OXP_RAP_TOOLSET_NAME",
                    "must be 1 to 128 characters",
                ));
            }
            c.toolset_name = v;
        }
        if let Some(v) = &c.endpoint
            && !(v.starts_with("https://") || v.starts_with("http://"))
        {
            return Err(invalid("OXP_RAP_ENDPOINT", "must be an http(s) URL"));
        }
        c.pins = env.list("OXP_RAP_TOOLS");
        if let Some(secs) = env.positive::<u64>("OXP_RAP_CHOICE_TIMEOUT_SECS")? {
            c.choice_timeout = Duration::from_secs(secs);
        }
        c.callbacks = CallbackPolicy {
            lambda,
            allowed_hosts: env.list("OXP_RAP_CALLBACK_HOSTS"),
            allow_http: env.flag("OXP_RAP_ALLOW_HTTP")?,
            allow_private: env.flag("OXP_RAP_ALLOW_PRIVATE_CALLBACKS")?,
            allow_loopback: env.flag("OXP_RAP_ALLOW_LOOPBACK_CALLBACKS")?
                || (!lambda && host.is_loopback()),
        };
        retry_from_env(env, &mut c.retry)?;
        c.rate_limit = env.rate("OXP_RAP_RATE_LIMIT")?;
        if let Some(limit) = env.limit_ms("OXP_RAP_TOOL_TIMEOUT_MS")? {
            c.tool_timeout = limit;
        }
        if let Some(n) = env.positive("OXP_RAP_MAX_PENDING")? {
            c.max_pending = n;
        }
        refuse_retired(env)?;
        Ok(c)
    }
}

/// The local dead-letter file's settings: its path, its size and each caller's share of it (the
/// whole file where every call is the one anonymous caller's).
fn dead_letters_from_env(
    env: &Env<'_>,
    c: &mut RapConfig,
    anonymous: bool,
) -> Result<(), ConfigError> {
    if let Some(v) = env.get("OXP_RAP_DEAD_LETTER_FILE") {
        c.dead_letter_file = v.into();
    }
    if let Some(n) = env.positive("OXP_RAP_DEAD_LETTER_MAX_BYTES")? {
        c.dead_letter_max_bytes = n;
    }
    let whole = c.dead_letter_max_bytes;
    c.dead_letter_max_bytes_per_caller =
        match env.positive::<u64>("OXP_RAP_DEAD_LETTER_MAX_BYTES_PER_CALLER")? {
            Some(n) => n.min(whole),
            None if anonymous => whole,
            None => (whole / 4).max(1),
        };
    Ok(())
}

/// In Lambda RAP needs its queue and its dead-letter queue: the function freezes once it has
/// answered, and no file outlives it.
fn queues_in_lambda(c: &RapConfig) -> Result<(), ConfigError> {
    if c.queue_url.is_none() {
        return Err(invalid(
            "OXP_RAP_QUEUE_URL",
            "must be set for RAP in Lambda (the function freezes once it has answered)",
        ));
    }
    if c.dead_letter_queue_url.is_none() {
        return Err(invalid(
            "OXP_RAP_DEAD_LETTER_QUEUE_URL",
            "must be set for RAP in Lambda, where no file outlives the function",
        ));
    }
    Ok(())
}

/// The delivery retries' settings (`OXP_RAP_DELIVERY_*`, `OXP_RAP_RETRY_*`,
/// `OXP_RAP_ATTEMPT_TIMEOUT_MS`) over `r`'s defaults.
fn retry_from_env(env: &Env<'_>, r: &mut RetryPolicy) -> Result<(), ConfigError> {
    let millis = |name: &'static str| -> Result<Option<Duration>, ConfigError> {
        Ok(env.positive::<u64>(name)?.map(Duration::from_millis))
    };
    if let Some(n) = env.positive("OXP_RAP_DELIVERY_ATTEMPTS")? {
        r.max_attempts = n;
    }
    if let Some(d) = millis("OXP_RAP_RETRY_BASE_MS")? {
        r.base = d;
    }
    if let Some(d) = millis("OXP_RAP_RETRY_MAX_MS")? {
        r.max_delay = d;
    }
    if let Some(secs) = env.positive::<u64>("OXP_RAP_DELIVERY_TIMEOUT_SECS")? {
        r.total = Duration::from_secs(secs);
    }
    if let Some(d) = millis("OXP_RAP_ATTEMPT_TIMEOUT_MS")? {
        r.attempt_timeout = d;
    }
    Ok(())
}

/// Settings since retired stop the start, naming what took their place.
fn refuse_retired(env: &Env<'_>) -> Result<(), ConfigError> {
    for retired in ["OXP_RAP_MAX_PENDING_PER_CALLER", "OXP_RAP_DRAIN_SECS"] {
        if env.get(retired).is_some() {
            let instead = if retired.ends_with("CALLER") {
                "is retired: one caller's share is OXP_WORK_MAX_PER_CALLER"
            } else {
                "is retired: the runner drains for OXP_WORK_DRAIN_SECS"
            };
            return Err(invalid(retired, instead));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
