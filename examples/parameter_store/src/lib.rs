//! A secret source written outside oxp-lambda: tool secrets from AWS Systems Manager
//! Parameter Store (`SecureString` parameters, decrypted), plugged in with
//! `AppBuilder::secret_source`. The invoker caches its values for `OXP_SECRETS_TTL_SECS`
//! like the built-in sources', and its errors name the secret id, never a value.
//! Its tests (tests/moto.rs) run it through the whole call path against moto.

use aws_sdk_ssm::operation::get_parameter::GetParameterError;
use oxp_lambda::Secret;
use oxp_lambda::stores::{SecretError, SecretErrorKind, SecretFuture, SecretSource};

/// Secret `id` is the parameter `<prefix><id>`, for the ids it was given.
#[derive(Debug, Clone)]
pub struct ParameterStore {
    client: aws_sdk_ssm::Client,
    prefix: String,
    ids: Vec<String>,
}

impl ParameterStore {
    /// Serves `ids` from the parameters under `prefix` (for example `/my-app/`).
    pub fn new(client: aws_sdk_ssm::Client, prefix: &str, ids: &[&str]) -> Self {
        Self {
            client,
            prefix: prefix.to_owned(),
            ids: ids.iter().map(|id| (*id).to_owned()).collect(),
        }
    }
}

impl SecretSource for ParameterStore {
    /// Decided by configuration alone, without I/O: ids the server does not hold may come
    /// from clients (where `OXP_CLIENT_SECRETS` allows).
    fn holds(&self, id: &str) -> bool {
        self.ids.iter().any(|held| held == id)
    }

    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a> {
        Box::pin(async move {
            let name = format!("{}{id}", self.prefix);
            let answer = self
                .client
                .get_parameter()
                .name(name)
                .with_decryption(true)
                .send()
                .await
                .map_err(|e| {
                    let kind = match e.as_service_error() {
                        Some(GetParameterError::ParameterNotFound(_)) => SecretErrorKind::NotFound,
                        Some(_) => SecretErrorKind::Other,
                        None => SecretErrorKind::Unreachable,
                    };
                    // The SDK's error text names the parameter and the cause, never its value.
                    SecretError::new(id, kind, e.to_string())
                })?;
            answer
                .parameter
                .and_then(|p| p.value)
                .map(Secret::new)
                .ok_or_else(|| SecretError::new(id, SecretErrorKind::Invalid, "no value"))
        })
    }
}
