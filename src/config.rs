//! Configuration from `OXP_*` environment variables, read once at start. Each subsystem reads
//! its own settings ([`SecretsConfig`], [`AuthConfig`], [`IdempotencyConfig`], [`OAuthConfig`]);
//! [`Config`] puts them together with the server's own, and keeps the variables ([`Vars`]) for
//! each protocol to read its own section ([`Env`]). `docs/configuration.md` lists every
//! variable. An invalid value is an error naming the variable, so a bad deployment fails at
//! init rather than at the first request.

pub use crate::auth::{AuthConfig, JwtConfig, JwtKeys};
pub use crate::idempotency::{IdempotencyConfig, IdempotencyMode};
#[cfg(feature = "mcp")]
pub use crate::mcp::McpConfig;
pub use crate::oauth::config::{ClientAuth, OAuthConfig, ProviderConfig};
pub use crate::observe::MetricsConfig;
#[cfg(feature = "rap")]
pub use crate::rap::callback::CallbackPolicy;
#[cfg(feature = "rap")]
pub use crate::rap::config::RapConfig;
#[cfg(feature = "rap")]
pub use crate::rap::deliver::RetryPolicy;
pub use crate::secrets::{SecretSourceKind, SecretsConfig};
pub use crate::settings::{ConfigError, Env, Vars};
pub use crate::state::{DEFAULT_CACHE_BYTES, StateConfig};
#[cfg(feature = "webhooks")]
pub use crate::webhooks::{Kind as WebhookKind, Source as WebhookSource, WebhooksConfig};
pub use oxp_lambda_core::invoke::rate::RateLimit;
pub use oxp_lambda_core::secrets::ClientSecrets;

use crate::settings::invalid;
pub use runtime::Runtime;
use runtime::process_vars;
use std::net::IpAddr;
use std::time::Duration;

/// Server configuration: what the server itself reads from `OXP_*` variables. Each protocol
/// reads its own section from the same variables ([`Protocol::settings`](crate::protocol::Protocol::settings)),
/// kept here as [`Config::vars`].
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Local server address (`OXP_HOST`, default `127.0.0.1`).
    pub host: IpAddr,
    /// Local server port (`OXP_PORT` or `--port`, default 8080).
    pub port: u16,
    /// `OXP_ALLOWED_ORIGINS`: comma-separated web origins (`http://localhost:3000`) a local server
    /// on loopback accepts requests from; any other `Origin` is refused (default: none).
    pub allowed_origins: Vec<String>,
    /// `OXP_ALLOWED_HOSTS`: comma-separated `Host` values (`tools.internal:8080`) a local server
    /// accepts besides loopback names, when its browser guard is on (a loopback listener, or any
    /// listener with authentication off); default none.
    pub allowed_hosts: Vec<String>,
    /// `OXP_MAX_CONNECTIONS` (default 1024): connections the local server holds open at once;
    /// the next waits in the kernel's backlog until one closes.
    pub max_connections: usize,
    /// `OXP_HEADER_READ_TIMEOUT_MS` (default 10000): longest the local server waits for a
    /// request's headers, on a new connection or an idle kept-alive one, before closing it.
    pub header_read_timeout: Duration,
    /// `OXP_BODY_READ_TIMEOUT_MS` (default 10000): longest the local server waits for a
    /// request's body once its head arrived; then 408 and the connection is closed.
    pub body_read_timeout: Duration,
    /// `OXP_MAX_CONNECTIONS_PER_PEER` (default a quarter of `OXP_MAX_CONNECTIONS`):
    /// connections one peer address may hold open at once; more are closed at once.
    pub max_connections_per_peer: usize,
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
    /// `OXP_REQUIRED_SCOPES` (older name `OXP_MCP_SCOPES`): scopes every authenticated
    /// request's token must grant, on every route (OXP, RAP, MCP): else 403.
    pub required_scopes: Vec<String>,
    /// Idempotency of calls by call id.
    pub idempotency: IdempotencyConfig,
    /// `OXP_MAX_CONCURRENT_CALLS` (default 256): tool runs at once, for every protocol together;
    /// more wait for a free slot within their time limit (at most 30 s).
    pub max_concurrent_calls: usize,
    /// `OXP_MAX_CONCURRENT_CALLS_PER_CALLER` (default a quarter of `max_concurrent_calls` where
    /// callers authenticate; all of it with `OXP_AUTH=none`, where every call is the one
    /// anonymous caller's): of those, how many one caller's may be; its calls past it wait for
    /// one of its own to end, holding no slot.
    pub max_concurrent_calls_per_caller: usize,
    /// `OXP_RATE_LIMIT` (`N/s`, `N/min` or `N/h`; unset: none): calls one caller may make per
    /// period, every protocol's calls together, an MCP task counted where `tools/call` makes
    /// it (RAP's invocations are counted as they are accepted, `OXP_RAP_RATE_LIMIT`).
    pub rate_limit: Option<RateLimit>,
    /// `OXP_DEADLINE_MARGIN_MS` (default 500): in Lambda, tools must finish this long before the
    /// invocation deadline so the caller gets an answer before Lambda stops the function.
    pub deadline_margin: Duration,
    /// Users' authorization with OAuth providers, run by the server (feature `oauth`).
    pub oauth: OAuthConfig,
    /// Where state that outlives a call lives (`OXP_STATE`): subscriptions, questions waiting
    /// for the user, cancellation marks, the local queue's acknowledged jobs.
    pub state: StateConfig,
    /// `OXP_LAMBDA_ROLE` (default `http`): what a Lambda function built from this binary
    /// handles: HTTP events, or the role a protocol serves (`worker`, `agentcore`,
    /// `bedrock-agent`, or one of your own).
    pub lambda_role: String,
    /// `OXP_LAMBDA_STREAMING` (default `false`): answer HTTP events with Lambda response
    /// streaming, for a function whose Function URL has `InvokeMode: RESPONSE_STREAM` (or an API
    /// Gateway REST integration whose response transfer mode is `STREAM`): an MCP call's
    /// progress reaches the client before its result. Only such a function may set it.
    pub lambda_streaming: bool,
    /// Metrics in CloudWatch Embedded Metric Format.
    pub metrics: MetricsConfig,
    /// `OXP_OTEL_ENDPOINT` (feature `otel`): the OTLP/HTTP collector that receives a span per
    /// call (`http://localhost:4318` for the ADOT Lambda layer's); none by default.
    pub otel_endpoint: Option<String>,
    /// Where the process runs, read once at start.
    pub runtime: Runtime,
    /// The variables the configuration was read from, for each protocol's own section.
    pub vars: Vars,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line (CloudWatch friendly).
    Json,
    /// Human-readable lines.
    Text,
}

/// `AWS_LAMBDA_LOG_LEVEL` (Lambda's application log level) as a filter.
fn lambda_log_level(value: &str) -> Option<&'static str> {
    Some(match value.trim().to_ascii_uppercase().as_str() {
        "TRACE" => "trace",
        "DEBUG" => "debug",
        "INFO" => "info",
        "WARN" => "warn",
        "ERROR" | "FATAL" => "error",
        _ => return None,
    })
}

impl Default for Config {
    /// The local defaults, as with no variable set outside Lambda. Reads nothing: no `OXP_*`
    /// variable, no `OXP_SECRET_*` value, no `./oxp-secrets.json` ([`Config::from_env`] does).
    fn default() -> Self {
        Self {
            host: IpAddr::from([127, 0, 0, 1]),
            port: 8080,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            max_connections_per_peer: 256,
            max_body_bytes: 1024 * 1024,
            tool_timeout: Some(Duration::from_secs(30)),
            base_path: None,
            log_filter: "info".into(),
            log_format: LogFormat::Text,
            secrets: SecretsConfig::default(),
            auth: AuthConfig::None { explicit: false },
            required_scopes: Vec::new(),
            idempotency: IdempotencyConfig::default(),
            max_concurrent_calls: 256,
            max_concurrent_calls_per_caller: 256,
            rate_limit: None,
            deadline_margin: Duration::from_millis(500),
            oauth: OAuthConfig::default(),
            state: StateConfig::default(),
            lambda_role: HTTP_ROLE.into(),
            lambda_streaming: false,
            metrics: MetricsConfig::default(),
            otel_endpoint: None,
            runtime: Runtime::local(),
            vars: Vars::default(),
        }
    }
}

/// `OXP_LAMBDA_ROLE`'s default: HTTP events (API Gateway, Function URLs, ALB).
pub const HTTP_ROLE: &str = "http";

impl Config {
    /// Reads the process environment, once: the `OXP_*` and `AWS_*` variables (the local secret
    /// values `OXP_SECRET_*` are left to the local secret source).
    pub fn from_env() -> Result<Self, ConfigError> {
        let vars = process_vars()?;
        let lambda = Runtime::of(&vars).lambda;
        let mut config = Self::read(lambda, vars)?;
        // The local secret source then reads the process's `OXP_SECRET_*` variables and
        // `./oxp-secrets.json` too, and the embedded state store keeps its file
        // (`./oxp-state.redb`); a configuration built any other way does neither.
        config.secrets.environment = true;
        config.state = StateConfig::from_env(&config.env(), true)?;
        Ok(config)
    }

    /// Reads `vars` (for tests and embedding); `lambda` picks the defaults of a Lambda function.
    ///
    /// ```
    /// use oxp_lambda::Config;
    ///
    /// let config = Config::from_vars(false, [("OXP_PORT", "9000")]).unwrap();
    /// assert_eq!(config.port, 9000);
    /// ```
    pub fn from_vars<K, V>(
        lambda: bool,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ConfigError>
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self::read(lambda, vars.into_iter().collect())
    }

    /// Reads the configuration from `vars`.
    fn read(lambda: bool, vars: Vars) -> Result<Self, ConfigError> {
        let env = Env::new(lambda, &vars);
        let mut config = Config {
            log_format: if lambda {
                LogFormat::Json
            } else {
                LogFormat::Text
            },
            runtime: Runtime::within(lambda, &vars),
            ..Config::default()
        };
        config.read_server(&env)?;
        config.read_logging(&env)?;
        config.secrets = SecretsConfig::from_env(&env)?;
        config.auth = AuthConfig::from_env(&env, config.host)?;
        config.required_scopes = crate::auth::required_scopes(&env)?;
        // Without authentication every call is the one anonymous caller's: no share to keep.
        let anonymous = matches!(config.auth, AuthConfig::None { .. });
        config.idempotency = IdempotencyConfig::from_env(&env, anonymous)?;
        config.max_concurrent_calls_per_caller =
            match env.positive("OXP_MAX_CONCURRENT_CALLS_PER_CALLER")? {
                Some(n) => n,
                None if anonymous => config.max_concurrent_calls,
                None => (config.max_concurrent_calls / 4).max(1),
            };
        config.rate_limit = env.rate("OXP_RATE_LIMIT")?;
        config.metrics = MetricsConfig::from_env(&env)?;
        config.otel_endpoint = crate::observe::otel_endpoint(&env)?;
        config.oauth = OAuthConfig::from_env(&env)?;
        config.state = StateConfig::from_env(&env, false)?;
        config.lambda_role = env
            .get("OXP_LAMBDA_ROLE")
            .map_or_else(|| HTTP_ROLE.to_owned(), |r| r.trim().to_owned());
        config.lambda_streaming = env.flag("OXP_LAMBDA_STREAMING")?;
        if config.lambda_streaming && config.lambda_role != HTTP_ROLE {
            // The other roles answer events, not HTTP: nothing of theirs could stream.
            return Err(invalid(
                "OXP_LAMBDA_STREAMING",
                "streams HTTP answers: only for OXP_LAMBDA_ROLE=http",
            ));
        }
        config.vars = vars;
        Ok(config)
    }

    /// The variables, to read a protocol's section from.
    pub fn env(&self) -> Env<'_> {
        Env::new(self.runtime.lambda, &self.vars)
    }

    /// The local server's and the call path's own settings.
    fn read_server(&mut self, env: &Env<'_>) -> Result<(), ConfigError> {
        if let Some(host) = env.get("OXP_HOST") {
            self.host = listen_host(host.trim())
                .ok_or_else(|| invalid("OXP_HOST", "must be an IP address or localhost"))?;
        }
        if let Some(port) = env.parsed("OXP_PORT")? {
            self.port = port;
        }
        self.allowed_origins = env
            .list("OXP_ALLOWED_ORIGINS")
            .into_iter()
            .map(|o| o.trim_end_matches('/').to_owned())
            .collect();
        if !self.allowed_origins.iter().all(|o| is_web_origin(o)) {
            return Err(invalid(
                "OXP_ALLOWED_ORIGINS",
                "must list web origins, each `http(s)://host[:port]` (no `*`: a page of any origin could call a server on loopback)",
            ));
        }
        self.allowed_hosts = env.list("OXP_ALLOWED_HOSTS");
        if let Some(n) = env.positive("OXP_MAX_CONNECTIONS")? {
            self.max_connections = n;
        }
        if let Some(ms) = env.positive::<u64>("OXP_HEADER_READ_TIMEOUT_MS")? {
            self.header_read_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = env.positive::<u64>("OXP_BODY_READ_TIMEOUT_MS")? {
            self.body_read_timeout = Duration::from_millis(ms);
        }
        self.max_connections_per_peer = match env.positive("OXP_MAX_CONNECTIONS_PER_PEER")? {
            Some(n) => n,
            None => (self.max_connections / 4).max(1),
        };
        if let Some(n) = env.positive("OXP_MAX_BODY_BYTES")? {
            self.max_body_bytes = n;
        }
        if let Some(limit) = env.limit_ms("OXP_TOOL_TIMEOUT_MS")? {
            self.tool_timeout = limit;
        }
        if let Some(v) = env.get("OXP_BASE_PATH") {
            let trimmed = v.trim().trim_end_matches('/');
            if !trimmed.starts_with('/') {
                return Err(invalid("OXP_BASE_PATH", "must start with '/'"));
            }
            self.base_path = (!trimmed.is_empty()).then(|| trimmed.to_owned());
        }
        if let Some(n) = env.positive("OXP_MAX_CONCURRENT_CALLS")? {
            self.max_concurrent_calls = n;
        }
        if let Some(ms) = env.parsed("OXP_DEADLINE_MARGIN_MS")? {
            self.deadline_margin = Duration::from_millis(ms);
        }
        Ok(())
    }

    /// The log's filter and format.
    fn read_logging(&mut self, env: &Env<'_>) -> Result<(), ConfigError> {
        // Lambda's log controls (the function's LoggingConfig) apply unless OXP_LOG and
        // OXP_LOG_FORMAT say otherwise. Its `Text` format (the default of every function) keeps
        // the JSON lines, which Logs Insights reads field by field either way.
        if let Some(level) = env
            .get("AWS_LAMBDA_LOG_LEVEL")
            .and_then(|v| lambda_log_level(&v))
        {
            self.log_filter = level.into();
        } else if let Some(v) = env.get("RUST_LOG") {
            // The Rust ecosystem's variable, which the Lambda runtime crates read after the
            // function's log level: `RUST_LOG=debug cargo run` was silently `info`.
            self.log_filter = log_filter(&v).map_err(|e| invalid("RUST_LOG", &e))?.0;
        }
        if env
            .get("AWS_LAMBDA_LOG_FORMAT")
            .is_some_and(|f| f.trim().eq_ignore_ascii_case("json"))
        {
            self.log_format = LogFormat::Json;
        }
        if let Some(v) = env.get("OXP_LOG") {
            let (v, _) = log_filter(&v).map_err(|e| invalid("OXP_LOG", &e))?;
            self.log_filter = v;
        }
        if let Some(v) = env.get("OXP_LOG_FORMAT") {
            self.log_format = match v.trim() {
                "json" => LogFormat::Json,
                "text" => LogFormat::Text,
                _ => return Err(invalid("OXP_LOG_FORMAT", "must be 'json' or 'text'")),
            };
        }
        Ok(())
    }
}

/// `text` as a log filter, in `tracing` syntax, and the text it was read from: each directive
/// trimmed, since tracing-subscriber reads a directive's trimmed text by the untrimmed one's
/// offsets and panics on one with a space before a character of more than one byte
/// (`" é=info"`); a panic of its parser is a refusal too. rmcp is held at `error` unless a
/// directive names it: it logs three `info` lines for each request it serves (a service started
/// and ended per request), beside the call's own one, and a `warn` line for each request it
/// answers with an error (an unknown method, a client gone): a caller's doing, in its own
/// `Debug` shape, at a level operators alert on. The server's own failures are its own lines.
pub(crate) fn log_filter(text: &str) -> Result<(String, tracing_subscriber::EnvFilter), String> {
    let text = text.split(',').map(str::trim).collect::<Vec<_>>().join(",");
    let mut read = text.clone();
    if !text.split(',').any(|d| d.starts_with("rmcp")) {
        read.push_str(if text.is_empty() {
            "rmcp=error"
        } else {
            ",rmcp=error"
        });
    }
    match std::panic::catch_unwind(|| tracing_subscriber::EnvFilter::try_new(&read)) {
        Ok(Ok(filter)) => Ok((text, filter)),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("is not a filter".into()),
    }
}

/// Whether `text` is a web origin as a browser sends it in `Origin`: `http` or `https`, a host,
/// perhaps a port, nothing more.
fn is_web_origin(text: &str) -> bool {
    let Ok(uri) = text.parse::<http::Uri>() else {
        return false;
    };
    let plain = uri
        .authority()
        .is_some_and(|a| !a.host().is_empty() && !a.as_str().contains('@'));
    matches!(uri.scheme_str(), Some("http" | "https"))
        && plain
        && uri.path_and_query().is_none_or(|p| p.as_str() == "/")
}

/// `OXP_HOST`'s address: an IP address, bracketed or not (`::1`, `[::1]`), or `localhost`,
/// which is 127.0.0.1 here as in the default: no name is looked up at start.
fn listen_host(text: &str) -> Option<IpAddr> {
    if text.eq_ignore_ascii_case("localhost") {
        return Some(IpAddr::from([127, 0, 0, 1]));
    }
    let bare = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    bare.parse().ok()
}

#[path = "config_runtime.rs"]
mod runtime;

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
