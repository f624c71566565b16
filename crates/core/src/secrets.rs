//! Server-held secrets as the invoker sees them: a [`SecretSource`] (two implementations, in
//! [`crate::secrets`]: AWS Secrets Manager and local variables or file) behind a cache
//! ([`Secrets`]) that also applies the policy for secrets sent by clients.
//!
//! - Server-held secrets win over secrets sent by a client.
//! - Clients may send only ids the server does not hold ([`ClientSecrets::Unheld`], the default)
//!   or none at all ([`ClientSecrets::Never`]).
//! - Values are cached for a TTL; concurrent misses for one id make one fetch, and the secrets
//!   of one call are fetched concurrently. A warm call makes no fetch.

use crate::tool::Secret;
use futures_util::future::try_join_all;
use quick_cache::sync::{EntryAction, EntryResult};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

/// Whether secrets sent by clients are used (`OXP_CLIENT_SECRETS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientSecrets {
    /// Only for ids the server does not hold (server-held secrets always win). The default.
    Unheld,
    /// Never: every required secret must be held by the server.
    Never,
}

/// A boxed future borrowing its source.
pub type SecretFuture<'a> = Pin<Box<dyn Future<Output = Result<Secret, SecretError>> + Send + 'a>>;

/// Where server-held secrets come from.
pub trait SecretSource: Send + Sync + fmt::Debug {
    /// Whether this source is configured to serve `id` (no I/O: decided by configuration).
    fn holds(&self, id: &str) -> bool;
    /// Fetches the current value of `id`.
    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a>;

    /// The value of `id` when the source holds it in memory already (variables read at start),
    /// without I/O; `None` for a source that must fetch it. What the server checks at its start
    /// (an empty or short signing key is refused before it serves).
    fn peek(&self, _id: &str) -> Option<Secret> {
        None
    }
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

/// Kinds of [`SecretError`] (the local source only ever misses a secret).
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
    /// A failure to fetch secret `id`; `detail` is for logs only, never for callers.
    pub fn new(id: &str, kind: SecretErrorKind, detail: impl Into<String>) -> Self {
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

/// How long a secret the source does not have is remembered as missing: a request naming it
/// (a forged webhook for a source without a key, say) costs no fetch meanwhile, and a secret
/// created now is seen within this.
pub const MISSING_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// The server's secrets: a source, a cache in front of it (values for a TTL, ids the source does
/// not have for [`MISSING_FOR`]) and the client-secrets policy.
#[derive(Clone)]
pub struct Secrets {
    source: Option<Arc<dyn SecretSource>>,
    cache: Arc<quick_cache::sync::Cache<String, Fetched>>,
    ttl: std::time::Duration,
    client_secrets: ClientSecrets,
}

/// What one fetch gave, and when.
#[derive(Clone)]
struct Fetched {
    value: Result<Secret, SecretError>,
    at: Instant,
}

impl Fetched {
    /// Whether it still answers a caller who asked at `asked`: a value for the TTL, a secret
    /// the source does not have for [`MISSING_FOR`], any other failure only the callers who
    /// were waiting for that fetch.
    fn answers(&self, asked: Instant, ttl: std::time::Duration) -> bool {
        let keep = match &self.value {
            Ok(_) => ttl,
            Err(e) if e.kind == SecretErrorKind::NotFound => MISSING_FOR.min(ttl),
            Err(_) => std::time::Duration::ZERO,
        };
        self.at >= asked || asked.saturating_duration_since(self.at) < keep
    }
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
            cache: Arc::new(quick_cache::sync::Cache::new(10_000)),
            ttl,
            client_secrets,
        }
    }

    /// Whether the server holds `id`.
    pub fn holds(&self, id: &str) -> bool {
        self.source.as_ref().is_some_and(|s| s.holds(id))
    }

    /// The value of `id` if the source holds it in memory ([`SecretSource::peek`]).
    pub fn peek(&self, id: &str) -> Option<Secret> {
        self.source.as_ref().and_then(|s| s.peek(id))
    }

    /// One server-held secret, from the cache or the source. A secret the source does not have
    /// is answered as missing for [`MISSING_FOR`] without asking it again.
    pub async fn get(&self, id: &str) -> Result<Secret, SecretError> {
        let source = self
            .source
            .as_ref()
            .filter(|s| s.holds(id))
            .ok_or_else(|| {
                SecretError::new(id, SecretErrorKind::NotFound, "not held by the server")
            })?;
        let asked = Instant::now();
        if let Some(fetched) = self.cache.get(id)
            && fetched.answers(asked, self.ttl)
        {
            return fetched.value;
        }
        // One fetch per id at a time: the others wait for its answer (quick_cache's guard).
        let guard = match self
            .cache
            .entry_async(id, |_, fetched| {
                if fetched.answers(asked, self.ttl) {
                    EntryAction::Retain(fetched.value.clone())
                } else {
                    EntryAction::ReplaceWithGuard
                }
            })
            .await
        {
            EntryResult::Retained(value) => return value,
            EntryResult::Vacant(guard) | EntryResult::Replaced(guard, _) => Some(guard),
            // Neither is asked for (no removal, no timeout): fetch without keeping.
            EntryResult::Removed(..) | EntryResult::Timeout => None,
        };
        let value = source.fetch(id).await;
        if let Some(guard) = guard {
            let _ = guard.insert(Fetched {
                value: value.clone(),
                at: Instant::now(),
            });
        }
        value
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
#[path = "secrets_tests.rs"]
mod tests;
