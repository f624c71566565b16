//! AWS Secrets Manager as a secret source.

use crate::aws::{AwsClient, SharedSdk};
use crate::secrets::SecretsConfig;
use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
use oxp_lambda_core::secrets::{SecretError, SecretErrorKind, SecretFuture, SecretSource};
use oxp_lambda_core::tool::Secret;
use std::collections::HashMap;
use std::fmt;

/// The AWS Secrets Manager source `config` describes.
pub(crate) fn source(
    sdk: &SharedSdk,
    config: &SecretsConfig,
) -> Result<std::sync::Arc<dyn SecretSource>, String> {
    Ok(std::sync::Arc::new(AwsSecretsManager::from_sdk(
        sdk, config,
    )))
}

/// AWS Secrets Manager. Secret id `X` is read from the secret named in the explicit map, else
/// `<prefix>X`. A mapped name may end in `#key` to take one key of a JSON secret.
#[derive(Debug, Clone)]
pub(crate) struct AwsSecretsManager {
    client: AwsClient<aws_sdk_secretsmanager::Client>,
    prefix: Option<String>,
    map: HashMap<String, String>,
}

impl AwsSecretsManager {
    /// A source with the client settings of [`secrets_manager_config`].
    pub(crate) fn from_sdk(sdk: &SharedSdk, config: &SecretsConfig) -> Self {
        let timeout = config.timeout;
        let client = AwsClient::lazy(sdk, move |sdk| {
            aws_sdk_secretsmanager::Client::from_conf(secrets_manager_config(sdk, timeout).build())
        });
        Self::new(client, config)
    }

    /// A source over `client` with the naming rules of `config`.
    pub(crate) fn new(
        client: impl Into<AwsClient<aws_sdk_secretsmanager::Client>>,
        config: &SecretsConfig,
    ) -> Self {
        Self {
            client: client.into(),
            prefix: config.prefix.clone(),
            map: config.map.iter().cloned().collect(),
        }
    }

    /// The Secrets Manager name (or ARN) and JSON key of `id`, if this source holds it.
    pub(crate) fn location(&self, id: &str) -> Option<(String, Option<String>)> {
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
                .get()
                .await
                .get_secret_value()
                .secret_id(&name)
                .send()
                .await
                .map_err(|e| classify(id, &name, e))?;
            let text = output.secret_string().ok_or_else(|| {
                SecretError::new(
                    id,
                    SecretErrorKind::Invalid,
                    "the secret has no SecretString",
                )
            })?;
            let Some(key) = key else {
                return Ok(Secret::new(text));
            };
            let json: serde_json::Value = serde_json::from_str(text).map_err(|_| {
                SecretError::new(id, SecretErrorKind::Invalid, "the secret is not JSON")
            })?;
            match json.get(&key) {
                Some(serde_json::Value::String(s)) => Ok(Secret::new(s.as_str())),
                Some(other) if !other.is_null() => Ok(Secret::new(other.to_string())),
                _ => Err(SecretError::new(
                    id,
                    SecretErrorKind::Invalid,
                    format!("the secret has no key '{key}'"),
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
    // The secret's name or ARN is deployment detail: logged here, never returned.
    tracing::warn!(target: "oxp::secrets", secret_id = id, secret = name, code, "Secrets Manager read failed");
    SecretError::new(id, kind, code)
}

/// Secrets Manager client settings from the shared AWS configuration: every fetch, retries
/// included, is bounded by `timeout`, and at most two attempts are made.
pub(crate) fn secrets_manager_config(
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

#[cfg(test)]
mod tests {
    use super::*;

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

#[cfg(test)]
#[path = "aws_tests.rs"]
mod moto_tests;
