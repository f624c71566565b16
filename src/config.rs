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
        Ok(config)
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
        let lambda = Config::from_lookup(true, |_| None).unwrap();
        assert_eq!(lambda.log_format, LogFormat::Json);
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
    fn an_invalid_value_names_its_variable() {
        for (var, value) in [
            ("OXP_PORT", "eighty"),
            ("OXP_PORT", "70000"),
            ("OXP_MAX_BODY_BYTES", "0"),
            ("OXP_BASE_PATH", "api"),
            ("OXP_LOG_FORMAT", "xml"),
            ("OXP_HOST", "localhost:1"),
        ] {
            let err = config(&[(var, value)]).unwrap_err();
            assert_eq!(err.variable, var);
            assert!(err.to_string().contains(var));
        }
    }
}
