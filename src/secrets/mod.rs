//! Where server-held secrets come from: AWS Secrets Manager ([`aws`], feature `aws-secrets`) or
//! `OXP_SECRET_<ID>` variables and a JSON file ([`local`]), both behind the invoker's cache
//! ([`oxp_lambda_core::secrets::Secrets`]).

#[cfg(feature = "aws-secrets")]
pub(crate) mod aws;
#[cfg(not(feature = "aws-secrets"))]
#[path = "aws_off.rs"]
pub(crate) mod aws;
pub(crate) mod local;

use crate::settings::{ConfigError, Env, invalid};
use oxp_lambda_core::secrets::{ClientSecrets, SecretSource, Secrets};
use std::sync::Arc;
use std::time::Duration;

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
    /// `OXP_SECRETS_FILE` (local source): JSON object of id to value. `None`: `oxp-secrets.json`
    /// in the working directory when it exists (looked for when the server starts, so reading
    /// the configuration never touches the file system).
    pub file: Option<std::path::PathBuf>,
    /// `OXP_CLIENT_SECRETS`: whether clients may send secrets in their calls.
    pub client_secrets: ClientSecrets,
    /// Whether the local source also reads the process's `OXP_SECRET_<ID>` variables and, without
    /// `file`, `./oxp-secrets.json`. [`Config::from_env`](crate::Config::from_env) turns it on;
    /// [`Config::default`](crate::Config::default) leaves it off, so an embedding program's
    /// secrets are only what it configures.
    pub environment: bool,
}

/// Which secret source the server uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretSourceKind {
    /// `OXP_SECRET_<ID>` environment variables and an optional JSON file.
    Local,
    /// AWS Secrets Manager.
    Aws,
}

impl Default for SecretsConfig {
    fn default() -> Self {
        Self {
            source: SecretSourceKind::Local,
            prefix: Some("oxp/".into()),
            map: Vec::new(),
            ttl: Duration::from_secs(300),
            timeout: Duration::from_millis(3000),
            file: None,
            client_secrets: ClientSecrets::Unheld,
            environment: false,
        }
    }
}

impl SecretsConfig {
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let source = match env.get("OXP_SECRETS_SOURCE").as_deref().map(str::trim) {
            None if env.in_lambda() => SecretSourceKind::Aws,
            None | Some("local") => SecretSourceKind::Local,
            Some("aws") => SecretSourceKind::Aws,
            Some(_) => return Err(invalid("OXP_SECRETS_SOURCE", "must be 'aws' or 'local'")),
        };
        let mut c = Self {
            source,
            ..Self::default()
        };
        // Set but empty means "no prefix", so this one is read with blank values.
        if let Some(v) = env.raw("OXP_SECRETS_PREFIX") {
            c.prefix = Some(v.trim().to_owned()).filter(|p| !p.is_empty());
        }
        if let Some(v) = env.get("OXP_SECRETS_MAP") {
            let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&v)
                .map_err(|e| {
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
        if let Some(secs) = env.parsed("OXP_SECRETS_TTL_SECS")? {
            c.ttl = Duration::from_secs(secs);
        }
        if let Some(ms) = env.positive("OXP_SECRETS_TIMEOUT_MS")? {
            c.timeout = Duration::from_millis(ms);
        }
        c.file = env.get("OXP_SECRETS_FILE").map(Into::into);
        c.client_secrets = match env.get("OXP_CLIENT_SECRETS").as_deref().map(str::trim) {
            None | Some("unheld") => ClientSecrets::Unheld,
            Some("never") => ClientSecrets::Never,
            Some(_) => return Err(invalid("OXP_CLIENT_SECRETS", "must be 'unheld' or 'never'")),
        };
        Ok(c)
    }
}

/// The local secrets file used when `OXP_SECRETS_FILE` is not set and it exists.
const DEFAULT_FILE: &str = "oxp-secrets.json";

/// The secrets `config` describes, or `custom`'s when the embedding program gives a source.
/// `embedded` are secrets the program holds itself: they answer before any source, whichever
/// it is. `sdk` is the AWS configuration, for the AWS source.
pub(crate) fn build(
    config: &SecretsConfig,
    embedded: &[(String, String)],
    custom: Option<Arc<dyn SecretSource>>,
    sdk: &crate::aws::SharedSdk,
) -> Result<Secrets, String> {
    let source: Arc<dyn SecretSource> = match (custom, config.source) {
        (Some(custom), _) => custom,
        (None, SecretSourceKind::Local) => {
            let default = std::path::Path::new(DEFAULT_FILE);
            let file = config
                .file
                .as_deref()
                .or_else(|| (config.environment && default.exists()).then_some(default));
            let values = |name: &str| name.starts_with("OXP_SECRET_");
            let vars = if config.environment {
                crate::settings::process_env(values)?
            } else {
                Vec::new()
            };
            Arc::new(local::LocalSecrets::from_parts(file, vars)?)
        }
        (None, SecretSourceKind::Aws) => aws::source(sdk, config)?,
    };
    let source = if embedded.is_empty() {
        source
    } else {
        let values = embedded
            .iter()
            .map(|(id, v)| (local::env_var_for(id), v.clone()));
        Arc::new(local::Layered {
            first: local::LocalSecrets::from_parts(None, values)?,
            then: source,
        })
    };
    Ok(Secrets::new(
        Some(source),
        config.ttl,
        config.client_secrets,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxp_lambda_core::secrets::SecretsRejection;
    use oxp_lambda_core::tool::Secret;

    fn local(vars: &[(&str, &str)]) -> Secrets {
        let source = local::LocalSecrets::from_parts(
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
        let source = local::LocalSecrets::from_parts(None, []).unwrap();
        let never = Secrets::new(
            Some(Arc::new(source)),
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

    #[tokio::test]
    async fn embedded_secrets_join_the_local_source() {
        let s = build(
            &SecretsConfig::default(),
            &[("API.KEY".into(), "embedded".into())],
            None,
            &crate::aws::SharedSdk::default(),
        )
        .unwrap();
        assert_eq!(s.get("API.KEY").await.unwrap().expose(), "embedded");
    }
}
