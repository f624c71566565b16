//! Server-held secrets: one small [`SecretSource`] trait with two implementations, AWS Secrets
//! Manager ([`AwsSecretsManager`]) and local variables or file ([`LocalSecrets`]), behind a cache
//! ([`Secrets`]) that also applies the policy for secrets sent by clients.
//!
//! - Server-held secrets win over `context.secrets` sent by a client.
//! - Clients may send only ids the server does not hold (`OXP_CLIENT_SECRETS=unheld`, the
//!   default) or none at all (`never`).
//! - Values are cached for `OXP_SECRETS_TTL_SECS`; concurrent misses for one id make one fetch,
//!   and the secrets of one call are fetched concurrently. A warm call makes no AWS call.

use crate::config::{ClientSecrets, SecretSourceKind, SecretsConfig};
use crate::tool::Secret;
use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
use futures_util::future::try_join_all;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future borrowing its source.
pub type SecretFuture<'a> = Pin<Box<dyn Future<Output = Result<Secret, SecretError>> + Send + 'a>>;

/// Where server-held secrets come from.
pub trait SecretSource: Send + Sync + fmt::Debug {
    /// Whether this source is configured to serve `id` (no I/O: decided by configuration).
    fn holds(&self, id: &str) -> bool;
    /// Fetches the current value of `id`.
    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a>;
}

/// Why a secret could not be had. Names the secret id, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretError {
    /// The secret id.
    pub id: String,
    /// What went wrong.
    pub kind: SecretErrorKind,
    /// Detail for developers (the source's error code or message, never a value).
    pub detail: String,
}

/// Kinds of [`SecretError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretErrorKind {
    /// The source does not have it.
    NotFound,
    /// The server may not read it.
    AccessDenied,
    /// The source is rate limiting.
    Throttled,
    /// The source could not be reached in time.
    Unreachable,
    /// The stored value is not usable (binary, or JSON without the key).
    Invalid,
    /// Any other failure.
    Other,
}

impl SecretError {
    fn new(id: &str, kind: SecretErrorKind, detail: impl Into<String>) -> Self {
        Self {
            id: id.to_owned(),
            kind,
            detail: detail.into(),
        }
    }

    /// A message for the user.
    pub fn user_message(&self) -> String {
        match self.kind {
            SecretErrorKind::Throttled | SecretErrorKind::Unreachable => {
                "The tool server is temporarily unable to load a secret the tool needs; try again later".into()
            }
            _ => "The tool server could not load a secret the tool needs".into(),
        }
    }

    /// A message for developers, naming the secret id.
    pub fn developer_message(&self) -> String {
        let what = match self.kind {
            SecretErrorKind::NotFound => "was not found",
            SecretErrorKind::AccessDenied => "could not be read: access denied",
            SecretErrorKind::Throttled => "could not be read: throttled",
            SecretErrorKind::Unreachable => "could not be read: the secret store is unreachable",
            SecretErrorKind::Invalid => "has an unusable value",
            SecretErrorKind::Other => "could not be read",
        };
        format!("secret '{}' {what} ({})", self.id, self.detail)
    }
}

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.developer_message())
    }
}

impl std::error::Error for SecretError {}

/// The environment variable that holds secret `id` locally: `OXP_SECRET_` and the id in upper
/// case with every character other than letters and digits as `_` (`TWILIO_API_KEY` is
/// `OXP_SECRET_TWILIO_API_KEY`).
pub fn env_var_for(id: &str) -> String {
    let mut name = String::with_capacity(11 + id.len());
    name.push_str("OXP_SECRET_");
    name.extend(id.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    name
}

/// Secrets from `OXP_SECRET_<ID>` variables and an optional JSON file (`{"ID": "value"}`), read
/// once at start. Variables win over the file.
#[derive(Clone, Default)]
pub struct LocalSecrets {
    values: HashMap<String, Secret>,
}

impl fmt::Debug for LocalSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSecrets")
            .field("ids", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl LocalSecrets {
    /// Reads the file (if any) and the process environment.
    pub fn load(file: Option<&std::path::Path>) -> Result<Self, String> {
        Self::from_parts(file, std::env::vars())
    }

    /// Reads the file (if any) and the given variables.
    pub fn from_parts(
        file: Option<&std::path::Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, String> {
        let mut values = HashMap::new();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let map: HashMap<String, String> = serde_json::from_str(&text).map_err(|e| {
                format!(
                    "{} must be a JSON object of id to string value: {e}",
                    path.display()
                )
            })?;
            for (id, value) in map {
                values.insert(env_var_for(&id), Secret::new(value));
            }
        }
        for (name, value) in vars {
            if name.starts_with("OXP_SECRET_") {
                values.insert(name, Secret::new(value));
            }
        }
        Ok(Self { values })
    }
}

impl SecretSource for LocalSecrets {
    fn holds(&self, id: &str) -> bool {
        self.values.contains_key(&env_var_for(id))
    }

    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a> {
        let found = self
            .values
            .get(&env_var_for(id))
            .cloned()
            .ok_or_else(|| SecretError::new(id, SecretErrorKind::NotFound, env_var_for(id)));
        Box::pin(std::future::ready(found))
    }
}

/// AWS Secrets Manager. Secret id `X` is read from the secret named in the explicit map, else
/// `<prefix>X`. A mapped name may end in `#key` to take one key of a JSON secret.
#[derive(Debug, Clone)]
pub struct AwsSecretsManager {
    client: aws_sdk_secretsmanager::Client,
    prefix: Option<String>,
    map: HashMap<String, String>,
}

impl AwsSecretsManager {
    /// A source over `client` with the naming rules of `config`.
    pub fn new(client: aws_sdk_secretsmanager::Client, config: &SecretsConfig) -> Self {
        Self {
            client,
            prefix: config.prefix.clone(),
            map: config.map.iter().cloned().collect(),
        }
    }

    /// The Secrets Manager name (or ARN) and JSON key of `id`, if this source holds it.
    pub fn location(&self, id: &str) -> Option<(String, Option<String>)> {
        if let Some(target) = self.map.get(id) {
            // ARNs contain ':' but never '#', so '#' safely separates the JSON key.
            return Some(match target.rsplit_once('#') {
                Some((name, key)) => (name.to_owned(), Some(key.to_owned())),
                None => (target.clone(), None),
            });
        }
        self.prefix.as_ref().map(|p| (format!("{p}{id}"), None))
    }
}

impl SecretSource for AwsSecretsManager {
    fn holds(&self, id: &str) -> bool {
        self.map.contains_key(id) || self.prefix.is_some()
    }

    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a> {
        Box::pin(async move {
            let (name, key) = self
                .location(id)
                .ok_or_else(|| SecretError::new(id, SecretErrorKind::NotFound, "not mapped"))?;
            let output = self
                .client
                .get_secret_value()
                .secret_id(&name)
                .send()
                .await
                .map_err(|e| classify(id, &name, e))?;
            let text = output.secret_string().ok_or_else(|| {
                SecretError::new(
                    id,
                    SecretErrorKind::Invalid,
                    format!("{name} has no SecretString"),
                )
            })?;
            let Some(key) = key else {
                return Ok(Secret::new(text));
            };
            let json: serde_json::Value = serde_json::from_str(text).map_err(|_| {
                SecretError::new(
                    id,
                    SecretErrorKind::Invalid,
                    format!("{name} is not a JSON secret"),
                )
            })?;
            match json.get(&key) {
                Some(serde_json::Value::String(s)) => Ok(Secret::new(s.as_str())),
                Some(other) if !other.is_null() => Ok(Secret::new(other.to_string())),
                _ => Err(SecretError::new(
                    id,
                    SecretErrorKind::Invalid,
                    format!("{name} has no key '{key}'"),
                )),
            }
        })
    }
}

fn classify<E: ProvideErrorMetadata + fmt::Debug>(
    id: &str,
    name: &str,
    e: SdkError<E>,
) -> SecretError {
    let kind = match &e {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => SecretErrorKind::Unreachable,
        _ => match e.code() {
            Some("ResourceNotFoundException") => SecretErrorKind::NotFound,
            Some("AccessDeniedException" | "AccessDenied" | "UnrecognizedClientException") => {
                SecretErrorKind::AccessDenied
            }
            Some("ThrottlingException" | "TooManyRequestsException" | "RequestLimitExceeded") => {
                SecretErrorKind::Throttled
            }
            _ => SecretErrorKind::Other,
        },
    };
    let code = e.code().unwrap_or(match kind {
        SecretErrorKind::Unreachable => "no answer",
        _ => "error",
    });
    SecretError::new(id, kind, format!("{name}: {code}"))
}

/// Secrets Manager client settings from the shared AWS configuration: every fetch, retries
/// included, is bounded by `timeout`, and at most two attempts are made.
pub fn secrets_manager_config(
    sdk: &aws_config::SdkConfig,
    timeout: std::time::Duration,
) -> aws_sdk_secretsmanager::config::Builder {
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .operation_timeout(timeout)
        .connect_timeout(timeout.min(std::time::Duration::from_secs(1)))
        .build();
    aws_sdk_secretsmanager::config::Builder::from(sdk)
        .timeout_config(timeouts)
        .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(2))
}

/// What a call could not get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretsRejection {
    /// Neither the server nor (where allowed) the client supplied this secret.
    Missing {
        /// The secret id.
        id: String,
        /// Whether the client sent it but the policy refused it.
        refused_from_client: bool,
    },
    /// The server holds it but could not load it.
    Source(SecretError),
}

/// The server's secrets: a source, a TTL cache in front of it and the client-secrets policy.
#[derive(Clone)]
pub struct Secrets {
    source: Option<Arc<dyn SecretSource>>,
    cache: moka::future::Cache<String, Secret>,
    client_secrets: ClientSecrets,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secrets")
            .field("source", &self.source)
            .field("client_secrets", &self.client_secrets)
            .finish_non_exhaustive()
    }
}

impl Default for Secrets {
    /// No server-held secrets; clients may send any.
    fn default() -> Self {
        Self::new(
            None,
            std::time::Duration::from_secs(300),
            ClientSecrets::Unheld,
        )
    }
}

impl Secrets {
    /// A store over `source` caching values for `ttl`.
    pub fn new(
        source: Option<Arc<dyn SecretSource>>,
        ttl: std::time::Duration,
        client_secrets: ClientSecrets,
    ) -> Self {
        Self {
            source,
            cache: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ttl)
                .build(),
            client_secrets,
        }
    }

    /// The store `config` describes; `sdk` is needed for the AWS source.
    pub fn from_config(
        config: &SecretsConfig,
        sdk: Option<&aws_config::SdkConfig>,
    ) -> Result<Self, String> {
        let source: Arc<dyn SecretSource> = match config.source {
            SecretSourceKind::Local => Arc::new(LocalSecrets::load(config.file.as_deref())?),
            SecretSourceKind::Aws => {
                let sdk = sdk.ok_or("the AWS source needs the AWS configuration")?;
                let client = aws_sdk_secretsmanager::Client::from_conf(
                    secrets_manager_config(sdk, config.timeout).build(),
                );
                Arc::new(AwsSecretsManager::new(client, config))
            }
        };
        Ok(Self::new(Some(source), config.ttl, config.client_secrets))
    }

    /// Whether the server holds `id`.
    pub fn holds(&self, id: &str) -> bool {
        self.source.as_ref().is_some_and(|s| s.holds(id))
    }

    /// One server-held secret, from the cache or the source.
    pub async fn get(&self, id: &str) -> Result<Secret, SecretError> {
        let source = self
            .source
            .as_ref()
            .filter(|s| s.holds(id))
            .ok_or_else(|| {
                SecretError::new(id, SecretErrorKind::NotFound, "not held by the server")
            })?;
        self.cache
            .try_get_with_by_ref(id, source.fetch(id))
            .await
            .map_err(|e| (*e).clone())
    }

    /// The values of `required` for one call: server-held ones from the source (they win), the
    /// rest from `client` where the policy allows. Holds exactly the required ids.
    pub async fn resolve(
        &self,
        required: &[String],
        mut client: Vec<(String, Secret)>,
    ) -> Result<HashMap<String, Secret>, SecretsRejection> {
        let mut values = HashMap::with_capacity(required.len());
        let mut held = Vec::new();
        for id in required {
            if self.holds(id) {
                held.push(id.as_str());
                continue;
            }
            let sent = client.iter().position(|(cid, _)| cid == id);
            match (sent, self.client_secrets) {
                (Some(i), ClientSecrets::Unheld) => {
                    let (id, value) = client.swap_remove(i);
                    values.insert(id, value);
                }
                (sent, _) => {
                    return Err(SecretsRejection::Missing {
                        id: id.clone(),
                        refused_from_client: sent.is_some(),
                    });
                }
            }
        }
        let fetched = try_join_all(held.iter().map(|id| self.get(id)))
            .await
            .map_err(SecretsRejection::Source)?;
        values.extend(held.into_iter().map(str::to_owned).zip(fetched));
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn local(vars: &[(&str, &str)]) -> Secrets {
        let source = LocalSecrets::from_parts(
            None,
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .unwrap();
        Secrets::new(
            Some(Arc::new(source)),
            Duration::from_secs(60),
            ClientSecrets::Unheld,
        )
    }

    fn sent(pairs: &[(&str, &str)]) -> Vec<(String, Secret)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Secret::new(*v)))
            .collect()
    }

    #[test]
    fn env_var_names_are_derived_from_ids() {
        assert_eq!(env_var_for("TWILIO_API_KEY"), "OXP_SECRET_TWILIO_API_KEY");
        assert_eq!(env_var_for("github.token-v2"), "OXP_SECRET_GITHUB_TOKEN_V2");
    }

    #[tokio::test]
    async fn server_held_secrets_win_over_client_secrets() {
        let s = local(&[("OXP_SECRET_TWILIO_API_KEY", "server")]);
        let got = s
            .resolve(
                &["TWILIO_API_KEY".into()],
                sent(&[("TWILIO_API_KEY", "client")]),
            )
            .await
            .unwrap();
        assert_eq!(got["TWILIO_API_KEY"].expose(), "server");
    }

    #[tokio::test]
    async fn clients_may_send_only_ids_the_server_does_not_hold_or_none() {
        let s = local(&[]);
        let got = s
            .resolve(&["X".into()], sent(&[("X", "client"), ("Y", "extra")]))
            .await
            .unwrap();
        assert_eq!(got.len(), 1, "only required ids");
        assert_eq!(got["X"].expose(), "client");
        let never = Secrets::new(
            s.source.clone(),
            Duration::from_secs(1),
            ClientSecrets::Never,
        );
        let err = never
            .resolve(&["X".into()], sent(&[("X", "client")]))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            SecretsRejection::Missing {
                id: "X".into(),
                refused_from_client: true
            }
        );
        let err = s.resolve(&["Z".into()], vec![]).await.unwrap_err();
        assert_eq!(
            err,
            SecretsRejection::Missing {
                id: "Z".into(),
                refused_from_client: false
            }
        );
    }

    #[test]
    fn the_local_file_is_read_and_variables_win() {
        let dir = std::env::temp_dir().join(format!("oxp-secrets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("secrets.json");
        std::fs::write(&file, r#"{"A": "from-file", "B": "file-b"}"#).unwrap();
        let s = LocalSecrets::from_parts(
            Some(&file),
            [("OXP_SECRET_B".to_string(), "env-b".to_string())],
        )
        .unwrap();
        assert!(s.holds("A") && s.holds("B") && !s.holds("C"));
        let b = futures_util::FutureExt::now_or_never(s.fetch("B"))
            .unwrap()
            .unwrap();
        assert_eq!(b.expose(), "env-b");
        std::fs::write(&file, "[]").unwrap();
        assert!(LocalSecrets::from_parts(Some(&file), []).is_err());
        assert!(
            !format!("{s:?}").contains("from-file"),
            "Debug shows ids only"
        );
    }

    #[test]
    fn mapped_names_may_select_a_json_key() {
        let config = SecretsConfig {
            map: vec![
                (
                    "T".into(),
                    "arn:aws:secretsmanager:us-east-1:1:secret:prod/twilio-AbC#api_key".into(),
                ),
                ("P".into(), "plain".into()),
            ],
            prefix: None,
            ..crate::Config::default().secrets
        };
        let client = aws_sdk_secretsmanager::Client::from_conf(
            aws_sdk_secretsmanager::Config::builder()
                .behavior_version(aws_sdk_secretsmanager::config::BehaviorVersion::latest())
                .build(),
        );
        let aws = AwsSecretsManager::new(client, &config);
        assert_eq!(
            aws.location("T"),
            Some((
                "arn:aws:secretsmanager:us-east-1:1:secret:prod/twilio-AbC".into(),
                Some("api_key".into())
            ))
        );
        assert_eq!(aws.location("P"), Some(("plain".into(), None)));
        assert!(!aws.holds("Q"), "no prefix: only mapped ids");
    }
}
