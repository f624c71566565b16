//! Configuration from `OXP_*` environment variables, read once at start. Each subsystem reads
//! its own settings ([`SecretsConfig`], [`AuthConfig`], [`IdempotencyConfig`], [`RapConfig`]);
//! [`Config`] puts them together with the server's own. `docs/configuration.md` lists every
//! variable. An invalid value is an error naming the variable, so a bad deployment fails at
//! init rather than at the first request.

pub use crate::auth::{AuthConfig, JwtConfig, JwtKeys};
pub use crate::idempotency::{IdempotencyConfig, IdempotencyMode};
#[cfg(feature = "mcp")]
pub use crate::mcp::McpConfig;
#[cfg(feature = "oauth")]
pub use crate::oauth::config::{ClientAuth, OAuthConfig, ProviderConfig};
#[cfg(feature = "rap")]
pub use crate::rap::callback::CallbackPolicy;
#[cfg(feature = "rap")]
pub use crate::rap::config::{RapConfig, RateLimit};
#[cfg(feature = "rap")]
pub use crate::rap::deliver::RetryPolicy;
pub use crate::secrets::{SecretSourceKind, SecretsConfig};
pub use crate::settings::ConfigError;
pub use oxp_lambda_core::secrets::ClientSecrets;

use crate::settings::{Env, invalid};
use std::net::IpAddr;
use std::time::Duration;

/// Server configuration.
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
    /// Idempotency of calls by call id.
    pub idempotency: IdempotencyConfig,
    /// `OXP_MAX_CONCURRENT_CALLS` (default 256): tool runs at once, for every protocol together;
    /// more wait for a free slot within their time limit (at most 30 s).
    pub max_concurrent_calls: usize,
    /// `OXP_DEADLINE_MARGIN_MS` (default 500): in Lambda, tools must finish this long before the
    /// invocation deadline so the caller gets an answer before Lambda stops the function.
    pub deadline_margin: Duration,
    /// The async tool invocation (RAP) adapter.
    #[cfg(feature = "rap")]
    pub rap: RapConfig,
    /// The MCP adapter.
    #[cfg(feature = "mcp")]
    pub mcp: McpConfig,
    /// Users' authorization with OAuth providers, run by the server (feature `oauth`).
    #[cfg(feature = "oauth")]
    pub oauth: OAuthConfig,
    /// `OXP_LAMBDA_ROLE`: what a Lambda function built from this binary handles.
    pub lambda_role: LambdaRole,
    /// Metrics in CloudWatch Embedded Metric Format.
    pub metrics: MetricsConfig,
    /// `OXP_OTEL_ENDPOINT` (feature `otel`): the OTLP/HTTP collector that receives a span per
    /// call (`http://localhost:4318` for the ADOT Lambda layer's); none by default.
    pub otel_endpoint: Option<String>,
}

/// What a Lambda function handles (`OXP_LAMBDA_ROLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LambdaRole {
    /// HTTP events from API Gateway, Function URLs or ALB (`http`, the default).
    Http,
    /// SQS batches of RAP invocations (`worker`).
    Worker,
    /// Direct invocations by a Bedrock AgentCore Gateway Lambda target (`agentcore`).
    AgentCore,
    /// Direct invocations by an Amazon Bedrock Agents action group (`bedrock-agent`).
    BedrockAgent,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line (CloudWatch friendly).
    Json,
    /// Human-readable lines.
    Text,
}

/// Metrics in CloudWatch Embedded Metric Format (docs/observability.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    /// `OXP_METRICS` (`emf` or `off`; default `emf` in Lambda, `off` locally).
    pub enabled: bool,
    /// `OXP_METRICS_NAMESPACE` (default `oxp-lambda`): the CloudWatch namespace.
    pub namespace: String,
    /// `OXP_METRICS_SERVICE` (default the function's name in Lambda, else `oxp-lambda`): the
    /// value of the `service` dimension every metric has.
    pub service: String,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            namespace: "oxp-lambda".into(),
            service: "oxp-lambda".into(),
        }
    }
}

impl MetricsConfig {
    fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mut c = Self {
            enabled: env.lambda,
            ..Self::default()
        };
        if let Some(v) = env.get("OXP_METRICS") {
            c.enabled = match v.trim() {
                "emf" => true,
                "off" => false,
                _ => return Err(invalid("OXP_METRICS", "must be 'emf' or 'off'")),
            };
        }
        if let Some(v) = env.get("OXP_METRICS_NAMESPACE") {
            c.namespace = v.trim().to_owned();
        }
        if let Some(v) = env
            .get("OXP_METRICS_SERVICE")
            .or_else(|| env.get("AWS_LAMBDA_FUNCTION_NAME"))
        {
            c.service = v.trim().to_owned();
        }
        Ok(c)
    }
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

/// Whether the process runs inside AWS Lambda.
pub(crate) fn in_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some()
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
            max_body_bytes: 1024 * 1024,
            tool_timeout: Some(Duration::from_secs(30)),
            base_path: None,
            log_filter: "info".into(),
            log_format: LogFormat::Text,
            secrets: SecretsConfig::default(),
            auth: AuthConfig::None { explicit: false },
            idempotency: IdempotencyConfig::default(),
            max_concurrent_calls: 256,
            deadline_margin: Duration::from_millis(500),
            #[cfg(feature = "rap")]
            rap: RapConfig::default(),
            #[cfg(feature = "mcp")]
            mcp: McpConfig::default(),
            #[cfg(feature = "oauth")]
            oauth: OAuthConfig::default(),
            lambda_role: LambdaRole::Http,
            metrics: MetricsConfig::default(),
            otel_endpoint: None,
        }
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        let mut config = Self::from_lookup(in_lambda(), |name| std::env::var(name).ok())?;
        // The local secret source then reads the process's `OXP_SECRET_*` variables and
        // `./oxp-secrets.json` too; a configuration built any other way reads neither.
        config.secrets.environment = true;
        Ok(config)
    }

    /// Reads variables through `lookup` (for tests and embedding); `lambda` picks the defaults
    /// of a Lambda function.
    pub fn from_lookup(
        lambda: bool,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let env = Env::new(lambda, &lookup);
        let mut config = Config {
            log_format: if lambda {
                LogFormat::Json
            } else {
                LogFormat::Text
            },
            ..Config::default()
        };
        if let Some(host) = env.parsed("OXP_HOST")? {
            config.host = host;
        }
        if let Some(port) = env.parsed("OXP_PORT")? {
            config.port = port;
        }
        config.allowed_origins = env
            .list("OXP_ALLOWED_ORIGINS")
            .into_iter()
            .map(|o| o.trim_end_matches('/').to_owned())
            .collect();
        config.allowed_hosts = env.list("OXP_ALLOWED_HOSTS");
        if let Some(n) = env.positive("OXP_MAX_CONNECTIONS")? {
            config.max_connections = n;
        }
        if let Some(ms) = env.positive::<u64>("OXP_HEADER_READ_TIMEOUT_MS")? {
            config.header_read_timeout = Duration::from_millis(ms);
        }
        if let Some(n) = env.positive("OXP_MAX_BODY_BYTES")? {
            config.max_body_bytes = n;
        }
        if let Some(limit) = env.limit_ms("OXP_TOOL_TIMEOUT_MS")? {
            config.tool_timeout = limit;
        }
        if let Some(v) = env.get("OXP_BASE_PATH") {
            let trimmed = v.trim().trim_end_matches('/');
            if !trimmed.starts_with('/') {
                return Err(invalid("OXP_BASE_PATH", "must start with '/'"));
            }
            config.base_path = (!trimmed.is_empty()).then(|| trimmed.to_owned());
        }
        // Lambda's log controls (the function's LoggingConfig) apply unless OXP_LOG and
        // OXP_LOG_FORMAT say otherwise. Its `Text` format (the default of every function) keeps
        // the JSON lines, which Logs Insights reads field by field either way.
        if let Some(level) = env
            .get("AWS_LAMBDA_LOG_LEVEL")
            .and_then(|v| lambda_log_level(&v))
        {
            config.log_filter = level.into();
        }
        if env
            .get("AWS_LAMBDA_LOG_FORMAT")
            .is_some_and(|f| f.trim().eq_ignore_ascii_case("json"))
        {
            config.log_format = LogFormat::Json;
        }
        if let Some(v) = env.get("OXP_LOG") {
            tracing_subscriber::EnvFilter::try_new(&v)
                .map_err(|e| invalid("OXP_LOG", &e.to_string()))?;
            config.log_filter = v;
        }
        if let Some(v) = env.get("OXP_LOG_FORMAT") {
            config.log_format = match v.trim() {
                "json" => LogFormat::Json,
                "text" => LogFormat::Text,
                _ => return Err(invalid("OXP_LOG_FORMAT", "must be 'json' or 'text'")),
            };
        }
        config.secrets = SecretsConfig::from_env(&env)?;
        config.auth = AuthConfig::from_env(&env, config.host)?;
        config.idempotency = IdempotencyConfig::from_env(&env)?;
        config.metrics = MetricsConfig::from_env(&env)?;
        if let Some(v) = env
            .get("OXP_OTEL_ENDPOINT")
            .filter(|v| !v.trim().is_empty())
        {
            let v = v.trim();
            if !cfg!(feature = "otel") {
                return Err(invalid(
                    "OXP_OTEL_ENDPOINT",
                    "needs the binary built with the `otel` feature",
                ));
            }
            if !(v.starts_with("http://") || v.starts_with("https://")) {
                return Err(invalid(
                    "OXP_OTEL_ENDPOINT",
                    "must be an http:// or https:// URL",
                ));
            }
            config.otel_endpoint = Some(v.to_owned());
        }
        if let Some(n) = env.positive("OXP_MAX_CONCURRENT_CALLS")? {
            config.max_concurrent_calls = n;
        }
        if let Some(ms) = env.parsed("OXP_DEADLINE_MARGIN_MS")? {
            config.deadline_margin = Duration::from_millis(ms);
        }
        config.lambda_role = match env.get("OXP_LAMBDA_ROLE").as_deref().map(str::trim) {
            None | Some("http") => LambdaRole::Http,
            Some("worker") => LambdaRole::Worker,
            Some("agentcore") if cfg!(feature = "agentcore") => LambdaRole::AgentCore,
            Some("agentcore") => {
                return Err(invalid(
                    "OXP_LAMBDA_ROLE",
                    "'agentcore' needs the binary built with the `agentcore` feature",
                ));
            }
            Some("bedrock-agent") if cfg!(feature = "bedrock-agent") => LambdaRole::BedrockAgent,
            Some("bedrock-agent") => {
                return Err(invalid(
                    "OXP_LAMBDA_ROLE",
                    "'bedrock-agent' needs the binary built with the `bedrock-agent` feature",
                ));
            }
            Some(_) => {
                return Err(invalid(
                    "OXP_LAMBDA_ROLE",
                    "must be 'http', 'worker', 'agentcore' or 'bedrock-agent'",
                ));
            }
        };
        #[cfg(feature = "mcp")]
        {
            config.mcp = McpConfig::from_env(&env)?;
        }
        #[cfg(feature = "rap")]
        {
            config.rap = RapConfig::from_env(&env, config.tool_timeout, config.host)?;
        }
        #[cfg(feature = "oauth")]
        {
            config.oauth = OAuthConfig::from_env(&env)?;
        }
        // A direct invocation carries no token and no authorizer's claims: only the invoking
        // service's IAM permission guards the function, so any other mode would refuse every
        // call (or suggest a check that does not happen).
        if matches!(
            config.lambda_role,
            LambdaRole::AgentCore | LambdaRole::BedrockAgent
        ) && !matches!(config.auth, AuthConfig::None { .. })
        {
            return Err(invalid(
                "OXP_AUTH",
                "must be 'none' for OXP_LAMBDA_ROLE=agentcore and bedrock-agent: direct invocations carry no token (the invoke permission guards the function)",
            ));
        }
        if config.lambda_role == LambdaRole::Worker && !config.rap_enabled() {
            return Err(invalid(
                "OXP_LAMBDA_ROLE",
                "'worker' needs the RAP adapter (set OXP_RAP_QUEUE_URL)",
            ));
        }
        Ok(config)
    }

    /// Whether the async adapter is served.
    pub(crate) fn rap_enabled(&self) -> bool {
        #[cfg(feature = "rap")]
        return self.rap.enabled;
        #[cfg(not(feature = "rap"))]
        return false;
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
