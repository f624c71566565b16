//! Configuration from `OXP_*` environment variables, read once at start.
//!
//! Every variable is listed in the README's configuration table. An invalid value is an error
//! naming the variable, so a bad deployment fails at init rather than at the first request.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

/// Server configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Local server address (`OXP_HOST`, default `127.0.0.1`).
    pub host: IpAddr,
    /// Local server port (`OXP_PORT` or `--port`, default 8080).
    pub port: u16,
    /// Largest accepted request body in bytes (`OXP_MAX_BODY_BYTES`, default 1 MiB); larger is 413.
    pub max_body_bytes: usize,
    /// Longest a tool may run (`OXP_TOOL_TIMEOUT_MS`, default 30000; `0` disables).
    pub tool_timeout: Option<Duration>,
    /// Path prefix to strip before routing, e.g. `/api` behind a custom domain mapping
    /// (`OXP_BASE_PATH`, default none). API Gateway stage prefixes are stripped regardless.
    pub base_path: Option<String>,
    /// Log filter in `tracing` syntax (`OXP_LOG`, default `info`).
    pub log_filter: String,
    /// Log format (`OXP_LOG_FORMAT`: `json` or `text`; default `json` in Lambda, `text` locally).
    pub log_format: LogFormat,
    /// Where server-held secrets come from.
    pub secrets: SecretsConfig,
    /// How callers of the server authenticate.
    pub auth: AuthConfig,
    /// Idempotency of calls by `call_id`.
    pub idempotency: IdempotencyConfig,
    /// `OXP_MAX_CONCURRENT_CALLS` (default 256): tool runs at once; more wait for a free slot
    /// within their time limit.
    pub max_concurrent_calls: usize,
    /// `OXP_DEADLINE_MARGIN_MS` (default 500): in Lambda, tools must finish this long before the
    /// invocation deadline so the caller gets an answer before Lambda stops the function.
    pub deadline_margin: Duration,
    /// The async tool invocation (RAP) adapter.
    pub rap: RapConfig,
    /// `OXP_LAMBDA_ROLE`: what a Lambda function built from this binary handles.
    pub lambda_role: LambdaRole,
}

/// What a Lambda function handles (`OXP_LAMBDA_ROLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LambdaRole {
    /// HTTP events from API Gateway, Function URLs or ALB (`http`, the default).
    Http,
    /// SQS batches of RAP invocations (`worker`).
    Worker,
}

/// Settings of the async tool invocation (RAP) adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct RapConfig {
    /// `OXP_RAP` (`on` or `off`): serve `/invoke`, `/close_thread` and
    /// `/.well-known/rap-toolset`. Default: on locally; in Lambda, on when a queue is set.
    pub enabled: bool,
    /// `OXP_RAP_QUEUE_URL`: the SQS queue invocations are enqueued to (required in Lambda,
    /// where nothing may run after the response). Unset locally: an in-process queue.
    pub queue_url: Option<String>,
    /// `OXP_RAP_DEAD_LETTER_QUEUE_URL`: the SQS queue undeliverable results are recorded in
    /// (required in Lambda).
    pub dead_letter_queue_url: Option<String>,
    /// `OXP_RAP_DEAD_LETTER_FILE` (default `oxp-dead-letters.jsonl`): where undeliverable
    /// results are recorded, one JSON object per line, when no dead-letter queue is set.
    pub dead_letter_file: std::path::PathBuf,
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
    /// `OXP_RAP_ALLOW_PRIVATE_CALLBACKS`).
    pub callbacks: crate::rap::callback::CallbackPolicy,
    /// Callback delivery retries (`OXP_RAP_DELIVERY_ATTEMPTS`, `OXP_RAP_RETRY_BASE_MS`,
    /// `OXP_RAP_RETRY_MAX_MS`, `OXP_RAP_DELIVERY_TIMEOUT_SECS`, `OXP_RAP_ATTEMPT_TIMEOUT_MS`).
    pub retry: crate::rap::deliver::RetryPolicy,
    /// `OXP_RAP_RATE_LIMIT` (`N/s`, `N/min` or `N/h`): invocations per `user_id` (per
    /// execution environment in Lambda); unset: no limit.
    pub rate_limit: Option<RateLimit>,
    /// `OXP_RAP_DRAIN_SECS` (default 30): on shutdown of the local server, how long accepted
    /// invocations may still run before the rest are dead-lettered.
    pub drain_timeout: Duration,
    /// `OXP_RAP_TOOL_TIMEOUT_MS` (default: `OXP_TOOL_TIMEOUT_MS`; `0` disables): longest an
    /// async tool run may take. In Lambda the worker's deadline bounds it too.
    pub tool_timeout: Option<Duration>,
}

/// A number of invocations per period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Invocations allowed per period (also the burst).
    pub invocations: u32,
    /// The period.
    pub per: Duration,
}

impl Default for RapConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            queue_url: None,
            dead_letter_queue_url: None,
            dead_letter_file: "oxp-dead-letters.jsonl".into(),
            toolset_name: "oxp-lambda".into(),
            toolset_description: None,
            endpoint: None,
            pins: Vec::new(),
            callbacks: Default::default(),
            retry: Default::default(),
            rate_limit: None,
            drain_timeout: Duration::from_secs(30),
            tool_timeout: Some(Duration::from_secs(30)),
        }
    }
}

/// Where idempotency records live.
#[derive(Debug, Clone, PartialEq)]
pub struct IdempotencyConfig {
    /// `OXP_IDEMPOTENCY`: `memory` (default), `dynamodb` (default when a table is set) or `off`.
    pub mode: IdempotencyMode,
    /// `OXP_IDEMPOTENCY_TABLE`: DynamoDB table name.
    pub table: Option<String>,
    /// `OXP_IDEMPOTENCY_TTL_SECS` (default 3600): how long a stored outcome answers repeats.
    pub ttl: Duration,
    /// `OXP_IDEMPOTENCY_MAX_ENTRIES` (default 10000): bound of the in-memory store.
    pub max_entries: usize,
}

/// Kinds of idempotency store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdempotencyMode {
    /// In process memory (per Lambda instance in Lambda).
    Memory,
    /// A DynamoDB table shared by every instance.
    DynamoDb,
    /// No idempotency: every call runs.
    Off,
}

/// Where server-held secrets come from and how they are cached.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretsConfig {
    /// `OXP_SECRETS_SOURCE`: `aws` (default in Lambda) or `local` (default elsewhere).
    pub source: SecretSourceKind,
    /// `OXP_SECRETS_PREFIX` (default `oxp/`): secret id `X` is the Secrets Manager secret
    /// `<prefix>X`; an empty value turns the prefix off (only `OXP_SECRETS_MAP` ids are held).
    pub prefix: Option<String>,
    /// `OXP_SECRETS_MAP`: JSON object of secret id to secret name or ARN, with an optional
    /// `#key` to take one key of a JSON secret (`{"TWILIO_API_KEY": "prod/twilio#api_key"}`).
    pub map: Vec<(String, String)>,
    /// `OXP_SECRETS_TTL_SECS` (default 300): how long a fetched value is reused.
    pub ttl: Duration,
    /// `OXP_SECRETS_TIMEOUT_MS` (default 3000): bound on one Secrets Manager fetch, retries included.
    pub timeout: Duration,
    /// `OXP_SECRETS_FILE` (local source): JSON object of id to value; default `oxp-secrets.json`
    /// when that file exists.
    pub file: Option<std::path::PathBuf>,
    /// `OXP_CLIENT_SECRETS`: whether clients may send secrets in `context.secrets`.
    pub client_secrets: ClientSecrets,
}

/// Which secret source the server uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretSourceKind {
    /// `OXP_SECRET_<ID>` environment variables and an optional JSON file.
    Local,
    /// AWS Secrets Manager.
    Aws,
}

/// Whether secrets sent by clients are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientSecrets {
    /// Only for ids the server does not hold (server-held secrets always win). The default.
    Unheld,
    /// Never: every required secret must be held by the server.
    Never,
}

/// How callers authenticate (`OXP_AUTH`).
#[derive(Debug, Clone, PartialEq)]
pub enum AuthConfig {
    /// No authentication. Must be set explicitly, except for a local server on loopback.
    None {
        /// Whether `none` was chosen explicitly (a warning is logged otherwise).
        explicit: bool,
    },
    /// Bearer JWTs verified by this server.
    Jwt(JwtConfig),
    /// Trust the claims of an API Gateway JWT or Lambda authorizer (`requestContext.authorizer`).
    ApiGateway {
        /// `OXP_BIND_USER_ID`: `context.user_id` must equal the caller's `sub`.
        bind_user_id: bool,
    },
}

/// Bearer JWT verification settings.
#[derive(Debug, Clone, PartialEq)]
pub struct JwtConfig {
    /// Where the verification keys come from.
    pub keys: JwtKeys,
    /// `OXP_JWT_ISSUER`: required `iss`, when set.
    pub issuer: Option<String>,
    /// `OXP_JWT_AUDIENCE`: required `aud`, when set.
    pub audience: Option<String>,
    /// `OXP_JWT_LEEWAY_SECS` (default 5): clock skew allowed for `exp` and `nbf`.
    pub leeway_secs: u64,
    /// `OXP_BIND_USER_ID`: `context.user_id` must equal the token's `sub`.
    pub bind_user_id: bool,
}

/// Verification keys of [`JwtConfig`].
#[derive(Debug, Clone, PartialEq)]
pub enum JwtKeys {
    /// `OXP_JWT_HS256_SECRET_ID`: HS256 with this server-held secret (Secrets Manager or local).
    Hs256 {
        /// Secret id of the signing key.
        secret_id: String,
    },
    /// `OXP_JWT_JWKS_URL`: RS256/ES256 keys from a JWKS document.
    Jwks {
        /// The JWKS URL.
        url: String,
        /// `OXP_JWT_JWKS_MIN_REFRESH_SECS` (default 30): an unknown `kid` refetches at most this often.
        min_refresh: Duration,
        /// `OXP_JWT_JWKS_TTL_SECS` (default 3600): how long fetched keys are used.
        ttl: Duration,
    },
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line (CloudWatch friendly).
    Json,
    /// Human-readable lines.
    Text,
}

/// A configuration variable with an invalid value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable name.
    pub variable: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid configuration: {}: {}",
            self.variable, self.reason
        )
    }
}

impl std::error::Error for ConfigError {}

/// Whether the process runs inside AWS Lambda.
pub fn in_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some()
}

impl Default for Config {
    fn default() -> Self {
        Self {
            host: IpAddr::from([127, 0, 0, 1]),
            port: 8080,
            max_body_bytes: 1024 * 1024,
            tool_timeout: Some(Duration::from_secs(30)),
            base_path: None,
            log_filter: "info".into(),
            log_format: LogFormat::Text,
            secrets: SecretsConfig {
                source: SecretSourceKind::Local,
                prefix: Some("oxp/".into()),
                map: Vec::new(),
                ttl: Duration::from_secs(300),
                timeout: Duration::from_millis(3000),
                file: None,
                client_secrets: ClientSecrets::Unheld,
            },
            auth: AuthConfig::None { explicit: false },
            idempotency: IdempotencyConfig {
                mode: IdempotencyMode::Memory,
                table: None,
                ttl: Duration::from_secs(3600),
                max_entries: 10_000,
            },
            max_concurrent_calls: 256,
            deadline_margin: Duration::from_millis(500),
            rap: RapConfig::default(),
            lambda_role: LambdaRole::Http,
        }
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(in_lambda(), |name| std::env::var(name).ok())
    }

    /// Reads variables through `lookup` (for tests and embedding); `lambda` picks the defaults.
    pub fn from_lookup(
        lambda: bool,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let mut config = Config {
            log_format: if lambda {
                LogFormat::Json
            } else {
                LogFormat::Text
            },
            ..Config::default()
        };
        if let Some(v) = get("OXP_HOST") {
            config.host = parse("OXP_HOST", &v)?;
        }
        if let Some(v) = get("OXP_PORT") {
            config.port = parse("OXP_PORT", &v)?;
        }
        if let Some(v) = get("OXP_MAX_BODY_BYTES") {
            config.max_body_bytes = parse("OXP_MAX_BODY_BYTES", &v)?;
            if config.max_body_bytes == 0 {
                return Err(invalid("OXP_MAX_BODY_BYTES", "must be greater than 0"));
            }
        }
        if let Some(v) = get("OXP_TOOL_TIMEOUT_MS") {
            let ms: u64 = parse("OXP_TOOL_TIMEOUT_MS", &v)?;
            config.tool_timeout = (ms > 0).then(|| Duration::from_millis(ms));
        }
        if let Some(v) = get("OXP_BASE_PATH") {
            let trimmed = v.trim().trim_end_matches('/');
            if !trimmed.starts_with('/') {
                return Err(invalid("OXP_BASE_PATH", "must start with '/'"));
            }
            config.base_path = (!trimmed.is_empty()).then(|| trimmed.to_owned());
        }
        if let Some(v) = get("OXP_LOG") {
            tracing_subscriber::EnvFilter::try_new(&v)
                .map_err(|e| invalid("OXP_LOG", &e.to_string()))?;
            config.log_filter = v;
        }
        if let Some(v) = get("OXP_LOG_FORMAT") {
            config.log_format = match v.trim() {
                "json" => LogFormat::Json,
                "text" => LogFormat::Text,
                _ => return Err(invalid("OXP_LOG_FORMAT", "must be 'json' or 'text'")),
            };
        }
        config.secrets = secrets_config(lambda, &get)?;
        // Set but empty means "no prefix", so this one is read without dropping empty values.
        if let Some(v) = lookup("OXP_SECRETS_PREFIX") {
            config.secrets.prefix = Some(v.trim().to_owned()).filter(|p| !p.is_empty());
        }
        config.auth = auth_config(lambda, config.host, &get)?;
        let idem = &mut config.idempotency;
        idem.table = get("OXP_IDEMPOTENCY_TABLE");
        idem.mode = match get("OXP_IDEMPOTENCY").as_deref().map(str::trim) {
            None if idem.table.is_some() => IdempotencyMode::DynamoDb,
            None | Some("memory") => IdempotencyMode::Memory,
            Some("dynamodb") if idem.table.is_some() => IdempotencyMode::DynamoDb,
            Some("dynamodb") => {
                return Err(invalid(
                    "OXP_IDEMPOTENCY_TABLE",
                    "must be set for OXP_IDEMPOTENCY=dynamodb",
                ));
            }
            Some("off") => IdempotencyMode::Off,
            Some(_) => {
                return Err(invalid(
                    "OXP_IDEMPOTENCY",
                    "must be 'memory', 'dynamodb' or 'off'",
                ));
            }
        };
        if let Some(v) = get("OXP_IDEMPOTENCY_TTL_SECS") {
            idem.ttl = Duration::from_secs(parse("OXP_IDEMPOTENCY_TTL_SECS", &v)?);
        }
        if let Some(v) = get("OXP_IDEMPOTENCY_MAX_ENTRIES") {
            idem.max_entries = parse("OXP_IDEMPOTENCY_MAX_ENTRIES", &v)?;
        }
        if let Some(v) = get("OXP_MAX_CONCURRENT_CALLS") {
            config.max_concurrent_calls = positive("OXP_MAX_CONCURRENT_CALLS", &v)?;
        }
        if let Some(v) = get("OXP_DEADLINE_MARGIN_MS") {
            config.deadline_margin = Duration::from_millis(parse("OXP_DEADLINE_MARGIN_MS", &v)?);
        }
        config.lambda_role = match get("OXP_LAMBDA_ROLE").as_deref().map(str::trim) {
            None | Some("http") => LambdaRole::Http,
            Some("worker") => LambdaRole::Worker,
            Some(_) => return Err(invalid("OXP_LAMBDA_ROLE", "must be 'http' or 'worker'")),
        };
        config.rap = rap_config(lambda, config.tool_timeout, &get)?;
        if config.lambda_role == LambdaRole::Worker && !config.rap.enabled {
            return Err(invalid(
                "OXP_LAMBDA_ROLE",
                "'worker' needs the RAP adapter (set OXP_RAP_QUEUE_URL)",
            ));
        }
        Ok(config)
    }
}

fn rap_config(
    lambda: bool,
    tool_timeout: Option<Duration>,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<RapConfig, ConfigError> {
    let mut c = RapConfig {
        tool_timeout,
        queue_url: get("OXP_RAP_QUEUE_URL"),
        dead_letter_queue_url: get("OXP_RAP_DEAD_LETTER_QUEUE_URL"),
        toolset_description: get("OXP_RAP_TOOLSET_DESCRIPTION"),
        endpoint: get("OXP_RAP_ENDPOINT"),
        ..RapConfig::default()
    };
    c.enabled = match get("OXP_RAP").as_deref().map(str::trim) {
        None => !lambda || c.queue_url.is_some(),
        Some("on") => true,
        Some("off") => false,
        Some(_) => return Err(invalid("OXP_RAP", "must be 'on' or 'off'")),
    };
    if c.enabled && lambda {
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
    }
    if let Some(v) = get("OXP_RAP_DEAD_LETTER_FILE") {
        c.dead_letter_file = v.into();
    }
    if let Some(v) = get("OXP_RAP_TOOLSET_NAME") {
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
    let list = |name: &str| -> Vec<String> {
        get(name)
            .map(|v| {
                v.split(',')
                    .map(|p| p.trim().to_owned())
                    .filter(|p| !p.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    };
    c.pins = list("OXP_RAP_TOOLS");
    let flag = |name: &'static str| -> Result<bool, ConfigError> {
        match get(name).as_deref().map(str::trim) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(invalid(name, "must be 'true' or 'false'")),
        }
    };
    c.callbacks = crate::rap::callback::CallbackPolicy {
        lambda,
        allowed_hosts: list("OXP_RAP_CALLBACK_HOSTS"),
        allow_http: flag("OXP_RAP_ALLOW_HTTP")?,
        allow_private: flag("OXP_RAP_ALLOW_PRIVATE_CALLBACKS")?,
    };
    let millis = |name: &'static str, value: &str| -> Result<Duration, ConfigError> {
        let ms: u64 = parse(name, value)?;
        if ms == 0 {
            return Err(invalid(name, "must be greater than 0"));
        }
        Ok(Duration::from_millis(ms))
    };
    let r = &mut c.retry;
    if let Some(v) = get("OXP_RAP_DELIVERY_ATTEMPTS") {
        r.max_attempts = positive("OXP_RAP_DELIVERY_ATTEMPTS", &v)?;
    }
    if let Some(v) = get("OXP_RAP_RETRY_BASE_MS") {
        r.base = millis("OXP_RAP_RETRY_BASE_MS", &v)?;
    }
    if let Some(v) = get("OXP_RAP_RETRY_MAX_MS") {
        r.max_delay = millis("OXP_RAP_RETRY_MAX_MS", &v)?;
    }
    if let Some(v) = get("OXP_RAP_DELIVERY_TIMEOUT_SECS") {
        r.total = millis("OXP_RAP_DELIVERY_TIMEOUT_SECS", &v)? * 1000;
    }
    if let Some(v) = get("OXP_RAP_ATTEMPT_TIMEOUT_MS") {
        r.attempt_timeout = millis("OXP_RAP_ATTEMPT_TIMEOUT_MS", &v)?;
    }
    if let Some(v) = get("OXP_RAP_RATE_LIMIT") {
        c.rate_limit = Some(rate_limit(&v).ok_or_else(|| {
            invalid(
                "OXP_RAP_RATE_LIMIT",
                "must be N/s, N/min or N/h with N greater than 0",
            )
        })?);
    }
    if let Some(v) = get("OXP_RAP_TOOL_TIMEOUT_MS") {
        let ms: u64 = parse("OXP_RAP_TOOL_TIMEOUT_MS", &v)?;
        c.tool_timeout = (ms > 0).then(|| Duration::from_millis(ms));
    }
    if let Some(v) = get("OXP_RAP_DRAIN_SECS") {
        c.drain_timeout = Duration::from_secs(parse("OXP_RAP_DRAIN_SECS", &v)?);
    }
    Ok(c)
}

fn rate_limit(value: &str) -> Option<RateLimit> {
    let (count, per) = value.trim().split_once('/')?;
    let invocations: u32 = count.trim().parse().ok().filter(|n| *n > 0)?;
    let per = match per.trim() {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        _ => return None,
    };
    Some(RateLimit { invocations, per })
}

fn secrets_config(
    lambda: bool,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<SecretsConfig, ConfigError> {
    let mut c = Config::default().secrets;
    c.source = match get("OXP_SECRETS_SOURCE").as_deref().map(str::trim) {
        None => {
            if lambda {
                SecretSourceKind::Aws
            } else {
                SecretSourceKind::Local
            }
        }
        Some("aws") => SecretSourceKind::Aws,
        Some("local") => SecretSourceKind::Local,
        Some(_) => return Err(invalid("OXP_SECRETS_SOURCE", "must be 'aws' or 'local'")),
    };
    if let Some(v) = get("OXP_SECRETS_MAP") {
        let map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&v).map_err(|e| {
                invalid(
                    "OXP_SECRETS_MAP",
                    &format!("not a JSON object of strings: {e}"),
                )
            })?;
        for (id, name) in map {
            let name = name.as_str().filter(|n| !n.is_empty()).ok_or_else(|| {
                invalid(
                    "OXP_SECRETS_MAP",
                    &format!("'{id}' must map to a secret name"),
                )
            })?;
            c.map.push((id, name.to_owned()));
        }
    }
    if let Some(v) = get("OXP_SECRETS_TTL_SECS") {
        c.ttl = Duration::from_secs(parse("OXP_SECRETS_TTL_SECS", &v)?);
    }
    if let Some(v) = get("OXP_SECRETS_TIMEOUT_MS") {
        let ms: u64 = parse("OXP_SECRETS_TIMEOUT_MS", &v)?;
        if ms == 0 {
            return Err(invalid("OXP_SECRETS_TIMEOUT_MS", "must be greater than 0"));
        }
        c.timeout = Duration::from_millis(ms);
    }
    c.file = match get("OXP_SECRETS_FILE") {
        Some(path) => Some(path.into()),
        None => {
            let default = std::path::Path::new("oxp-secrets.json");
            default.exists().then(|| default.to_path_buf())
        }
    };
    c.client_secrets = match get("OXP_CLIENT_SECRETS").as_deref().map(str::trim) {
        None | Some("unheld") => ClientSecrets::Unheld,
        Some("never") => ClientSecrets::Never,
        Some(_) => return Err(invalid("OXP_CLIENT_SECRETS", "must be 'unheld' or 'never'")),
    };
    Ok(c)
}

fn auth_config(
    lambda: bool,
    host: IpAddr,
    get: &impl Fn(&str) -> Option<String>,
) -> Result<AuthConfig, ConfigError> {
    let bind_user_id = match get("OXP_BIND_USER_ID").as_deref().map(str::trim) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(invalid("OXP_BIND_USER_ID", "must be 'true' or 'false'")),
    };
    match get("OXP_AUTH").as_deref().map(str::trim) {
        None if lambda => Err(invalid(
            "OXP_AUTH",
            "must be set in Lambda: 'jwt', 'apigateway', or 'none' to serve without authentication",
        )),
        None if !host.is_loopback() => Err(invalid(
            "OXP_AUTH",
            "must be set when the server listens beyond loopback (OXP_HOST)",
        )),
        None => Ok(AuthConfig::None { explicit: false }),
        Some("none") => Ok(AuthConfig::None { explicit: true }),
        Some("apigateway") => Ok(AuthConfig::ApiGateway { bind_user_id }),
        Some("jwt") => {
            let keys = match (get("OXP_JWT_HS256_SECRET_ID"), get("OXP_JWT_JWKS_URL")) {
                (Some(secret_id), None) => JwtKeys::Hs256 { secret_id },
                (None, Some(url)) => {
                    if !(url.starts_with("https://") || url.starts_with("http://")) {
                        return Err(invalid("OXP_JWT_JWKS_URL", "must be an http(s) URL"));
                    }
                    let secs =
                        |name: &'static str, default: u64| -> Result<Duration, ConfigError> {
                            get(name)
                                .map(|v| parse(name, &v))
                                .transpose()
                                .map(|s| Duration::from_secs(s.unwrap_or(default)))
                        };
                    JwtKeys::Jwks {
                        url,
                        min_refresh: secs("OXP_JWT_JWKS_MIN_REFRESH_SECS", 30)?,
                        ttl: secs("OXP_JWT_JWKS_TTL_SECS", 3600)?,
                    }
                }
                _ => {
                    return Err(invalid(
                        "OXP_AUTH",
                        "'jwt' needs exactly one of OXP_JWT_HS256_SECRET_ID or OXP_JWT_JWKS_URL",
                    ));
                }
            };
            Ok(AuthConfig::Jwt(JwtConfig {
                keys,
                issuer: get("OXP_JWT_ISSUER"),
                audience: get("OXP_JWT_AUDIENCE"),
                leeway_secs: get("OXP_JWT_LEEWAY_SECS")
                    .map(|v| parse("OXP_JWT_LEEWAY_SECS", &v))
                    .transpose()?
                    .unwrap_or(5),
                bind_user_id,
            }))
        }
        Some(_) => Err(invalid("OXP_AUTH", "must be 'none', 'jwt' or 'apigateway'")),
    }
}

fn parse<T: std::str::FromStr>(variable: &'static str, value: &str) -> Result<T, ConfigError>
where
    T::Err: fmt::Display,
{
    value
        .trim()
        .parse()
        .map_err(|e: T::Err| invalid(variable, &format!("'{value}': {e}")))
}

/// A number greater than zero.
fn positive<T>(variable: &'static str, value: &str) -> Result<T, ConfigError>
where
    T: std::str::FromStr + Default + PartialEq,
    T::Err: fmt::Display,
{
    let n: T = parse(variable, value)?;
    if n == T::default() {
        return Err(invalid(variable, "must be greater than 0"));
    }
    Ok(n)
}

fn invalid(variable: &'static str, reason: &str) -> ConfigError {
    ConfigError {
        variable,
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(false, |k| map.get(k).cloned())
    }

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        assert_eq!(config(&[]).unwrap(), Config::default());
        let lambda =
            Config::from_lookup(true, |k| (k == "OXP_AUTH").then(|| "none".to_string())).unwrap();
        assert_eq!(lambda.log_format, LogFormat::Json);
        assert_eq!(lambda.secrets.source, SecretSourceKind::Aws);
    }

    #[test]
    fn values_are_read() {
        let c = config(&[
            ("OXP_PORT", "9000"),
            ("OXP_MAX_BODY_BYTES", "2048"),
            ("OXP_TOOL_TIMEOUT_MS", "0"),
            ("OXP_BASE_PATH", "/api/"),
            ("OXP_LOG_FORMAT", "json"),
        ])
        .unwrap();
        assert_eq!(c.port, 9000);
        assert_eq!(c.max_body_bytes, 2048);
        assert_eq!(c.tool_timeout, None);
        assert_eq!(c.base_path.as_deref(), Some("/api"));
        assert_eq!(c.log_format, LogFormat::Json);
    }

    #[test]
    fn secrets_and_auth_settings_are_read() {
        let c = config(&[
            ("OXP_SECRETS_SOURCE", "aws"),
            (
                "OXP_SECRETS_MAP",
                r#"{"TWILIO_API_KEY": "prod/twilio#api_key"}"#,
            ),
            ("OXP_SECRETS_TTL_SECS", "60"),
            ("OXP_CLIENT_SECRETS", "never"),
            ("OXP_AUTH", "jwt"),
            (
                "OXP_JWT_JWKS_URL",
                "https://issuer.example/.well-known/jwks.json",
            ),
            ("OXP_JWT_ISSUER", "https://issuer.example/"),
            ("OXP_BIND_USER_ID", "true"),
        ])
        .unwrap();
        assert_eq!(c.secrets.source, SecretSourceKind::Aws);
        assert_eq!(
            c.secrets.map,
            [(
                "TWILIO_API_KEY".to_string(),
                "prod/twilio#api_key".to_string()
            )]
        );
        assert_eq!(c.secrets.ttl, Duration::from_secs(60));
        assert_eq!(c.secrets.client_secrets, ClientSecrets::Never);
        let AuthConfig::Jwt(jwt) = c.auth else {
            panic!("jwt")
        };
        assert!(jwt.bind_user_id);
        assert_eq!(jwt.issuer.as_deref(), Some("https://issuer.example/"));
        assert!(matches!(jwt.keys, JwtKeys::Jwks { .. }));
    }

    #[test]
    fn a_table_selects_the_dynamodb_idempotency_store() {
        let c = config(&[
            ("OXP_IDEMPOTENCY_TABLE", "oxp-calls"),
            ("OXP_IDEMPOTENCY_TTL_SECS", "60"),
        ])
        .unwrap();
        assert_eq!(c.idempotency.mode, IdempotencyMode::DynamoDb);
        assert_eq!(c.idempotency.ttl, Duration::from_secs(60));
        assert_eq!(
            config(&[("OXP_IDEMPOTENCY", "off")])
                .unwrap()
                .idempotency
                .mode,
            IdempotencyMode::Off
        );
        assert_eq!(
            config(&[]).unwrap().idempotency.mode,
            IdempotencyMode::Memory
        );
    }

    #[test]
    fn no_authentication_must_be_explicit_in_lambda_and_beyond_loopback() {
        assert_eq!(
            config(&[]).unwrap().auth,
            AuthConfig::None { explicit: false }
        );
        let err = Config::from_lookup(true, |_| None).unwrap_err();
        assert_eq!(err.variable, "OXP_AUTH");
        assert_eq!(
            config(&[("OXP_HOST", "0.0.0.0")]).unwrap_err().variable,
            "OXP_AUTH"
        );
        let lambda_none =
            Config::from_lookup(true, |k| (k == "OXP_AUTH").then(|| "none".to_string()));
        assert_eq!(
            lambda_none.unwrap().auth,
            AuthConfig::None { explicit: true }
        );
        // jwt needs exactly one key source
        assert_eq!(
            config(&[("OXP_AUTH", "jwt")]).unwrap_err().variable,
            "OXP_AUTH"
        );
    }

    #[test]
    fn an_invalid_value_names_its_variable() {
        for (var, value) in [
            ("OXP_PORT", "eighty"),
            ("OXP_PORT", "70000"),
            ("OXP_MAX_BODY_BYTES", "0"),
            ("OXP_BASE_PATH", "api"),
            ("OXP_LOG_FORMAT", "xml"),
            ("OXP_HOST", "localhost:1"),
            ("OXP_SECRETS_SOURCE", "vault"),
            ("OXP_SECRETS_MAP", "[1]"),
            ("OXP_SECRETS_MAP", r#"{"A": 1}"#),
            ("OXP_SECRETS_TTL_SECS", "-1"),
            ("OXP_CLIENT_SECRETS", "maybe"),
            ("OXP_AUTH", "basic"),
            ("OXP_BIND_USER_ID", "yes"),
            ("OXP_IDEMPOTENCY", "redis"),
            ("OXP_IDEMPOTENCY", "dynamodb"),
            ("OXP_MAX_CONCURRENT_CALLS", "0"),
            ("OXP_RAP", "maybe"),
            ("OXP_RAP_RATE_LIMIT", "10"),
            ("OXP_RAP_RATE_LIMIT", "0/s"),
            ("OXP_RAP_RATE_LIMIT", "5/week"),
            ("OXP_RAP_ALLOW_HTTP", "yes"),
            ("OXP_RAP_DELIVERY_ATTEMPTS", "0"),
            ("OXP_RAP_RETRY_BASE_MS", "0"),
            ("OXP_RAP_ENDPOINT", "tool.example.com/invoke"),
            ("OXP_LAMBDA_ROLE", "cron"),
        ] {
            let err = config(&[(var, value)]).unwrap_err();
            assert!(err.variable.starts_with(var), "{var}: {err}");
            assert!(err.to_string().contains(var));
        }
    }

    #[test]
    fn rap_settings_are_read() {
        let c = config(&[
            ("OXP_RAP_RATE_LIMIT", "30/min"),
            (
                "OXP_RAP_CALLBACK_HOSTS",
                "agent.example.com, *.runtime.example",
            ),
            ("OXP_RAP_ALLOW_HTTP", "true"),
            ("OXP_RAP_DELIVERY_ATTEMPTS", "3"),
            ("OXP_RAP_DELIVERY_TIMEOUT_SECS", "20"),
            ("OXP_RAP_TOOLS", "Calculator.Add@1.0.0"),
            ("OXP_TOOL_TIMEOUT_MS", "5000"),
        ])
        .unwrap();
        assert_eq!(
            c.rap.tool_timeout,
            Some(Duration::from_secs(5)),
            "OXP's by default"
        );
        let c = config(&[("OXP_RAP_TOOL_TIMEOUT_MS", "0")]).unwrap();
        assert_eq!(c.rap.tool_timeout, None);
        assert_eq!(c.tool_timeout, Some(Duration::from_secs(30)));
        let c = config(&[
            ("OXP_RAP_RATE_LIMIT", "30/min"),
            (
                "OXP_RAP_CALLBACK_HOSTS",
                "agent.example.com, *.runtime.example",
            ),
            ("OXP_RAP_ALLOW_HTTP", "true"),
            ("OXP_RAP_DELIVERY_ATTEMPTS", "3"),
            ("OXP_RAP_DELIVERY_TIMEOUT_SECS", "20"),
            ("OXP_RAP_TOOLS", "Calculator.Add@1.0.0"),
        ])
        .unwrap();
        assert!(c.rap.enabled);
        assert_eq!(
            c.rap.rate_limit,
            Some(RateLimit {
                invocations: 30,
                per: Duration::from_secs(60)
            })
        );
        assert_eq!(
            c.rap.callbacks.allowed_hosts,
            ["agent.example.com", "*.runtime.example"]
        );
        assert!(c.rap.callbacks.allow_http && !c.rap.callbacks.lambda);
        assert_eq!(c.rap.retry.max_attempts, 3);
        assert_eq!(c.rap.retry.total, Duration::from_secs(20));
        assert_eq!(c.rap.pins, ["Calculator.Add@1.0.0"]);
        assert_eq!(c.lambda_role, LambdaRole::Http);
    }

    #[test]
    fn rap_in_lambda_needs_its_queues() {
        let lambda = |vars: &[(&str, &str)]| {
            let map: HashMap<String, String> = vars
                .iter()
                .chain(&[("OXP_AUTH", "none")])
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Config::from_lookup(true, |k| map.get(k).cloned())
        };
        // Without a queue RAP is off in Lambda, unless asked for.
        assert!(!lambda(&[]).unwrap().rap.enabled);
        assert_eq!(
            lambda(&[("OXP_RAP", "on")]).unwrap_err().variable,
            "OXP_RAP_QUEUE_URL"
        );
        assert_eq!(
            lambda(&[("OXP_RAP_QUEUE_URL", "https://sqs/q")])
                .unwrap_err()
                .variable,
            "OXP_RAP_DEAD_LETTER_QUEUE_URL"
        );
        let c = lambda(&[
            ("OXP_RAP_QUEUE_URL", "https://sqs/q"),
            ("OXP_RAP_DEAD_LETTER_QUEUE_URL", "https://sqs/dlq"),
            ("OXP_LAMBDA_ROLE", "worker"),
        ])
        .unwrap();
        assert!(c.rap.enabled && c.rap.callbacks.lambda);
        assert_eq!(c.lambda_role, LambdaRole::Worker);
        assert_eq!(
            lambda(&[("OXP_LAMBDA_ROLE", "worker")])
                .unwrap_err()
                .variable,
            "OXP_LAMBDA_ROLE"
        );
    }
}
