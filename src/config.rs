//! Configuration from `OXP_*` environment variables, read once at start. Each subsystem reads
//! its own settings ([`SecretsConfig`], [`AuthConfig`], [`IdempotencyConfig`], [`RapConfig`]);
//! [`Config`] puts them together with the server's own. `docs/configuration.md` lists every
//! variable. An invalid value is an error naming the variable, so a bad deployment fails at
//! init rather than at the first request.

pub use crate::auth::{AuthConfig, JwtConfig, JwtKeys};
pub use crate::core::secrets::ClientSecrets;
pub use crate::idempotency::{IdempotencyConfig, IdempotencyMode};
#[cfg(feature = "rap")]
pub use crate::rap::callback::CallbackPolicy;
#[cfg(feature = "rap")]
pub use crate::rap::config::{RapConfig, RateLimit};
#[cfg(feature = "rap")]
pub use crate::rap::deliver::RetryPolicy;
pub use crate::secrets::{SecretSourceKind, SecretsConfig};
pub use crate::settings::ConfigError;

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

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON object per line (CloudWatch friendly).
    Json,
    /// Human-readable lines.
    Text,
}

/// Whether the process runs inside AWS Lambda.
pub(crate) fn in_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some()
}

impl Default for Config {
    /// The local defaults, as with no variable set outside Lambda (but without looking for an
    /// `oxp-secrets.json`).
    fn default() -> Self {
        Self {
            host: IpAddr::from([127, 0, 0, 1]),
            port: 8080,
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
            lambda_role: LambdaRole::Http,
        }
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(in_lambda(), |name| std::env::var(name).ok())
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
        if let Some(n) = env.positive("OXP_MAX_CONCURRENT_CALLS")? {
            config.max_concurrent_calls = n;
        }
        if let Some(ms) = env.parsed("OXP_DEADLINE_MARGIN_MS")? {
            config.deadline_margin = Duration::from_millis(ms);
        }
        config.lambda_role = match env.get("OXP_LAMBDA_ROLE").as_deref().map(str::trim) {
            None | Some("http") => LambdaRole::Http,
            Some("worker") => LambdaRole::Worker,
            Some(_) => return Err(invalid("OXP_LAMBDA_ROLE", "must be 'http' or 'worker'")),
        };
        #[cfg(feature = "rap")]
        {
            config.rap = RapConfig::from_env(&env, config.tool_timeout)?;
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
