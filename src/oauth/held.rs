//! A user's tokens as the broker holds them: sealed in the vault under a hash of the user, each
//! read opened, refreshed ahead of its expiry, or a link to authorize (again) when there is none
//! fit for the call; and the broker as the core's [`UserTokens`].

use super::flow::{Failed, Granted, Provider};
use super::{Broker, hashed, unix};
use oxp_lambda_core::tokens::{Held, Sealed, TokenError, TokenFuture, UserTokens};
use oxp_lambda_core::tool::Secret;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An access token this close to its expiry is refreshed before use.
const REFRESH_AHEAD: Duration = Duration::from_secs(60);

/// A user's tokens for a provider, as sealed in the vault.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    a: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    r: Option<String>,
    /// Expiry of the access token, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x: Option<u64>,
    /// Scopes granted (as the provider said, else as asked).
    s: Vec<String>,
}

impl Broker {
    /// The vault key of `user`'s tokens for `provider`: the user hashed, so the store never
    /// holds a user id either.
    pub(super) fn vault_key(provider: &str, user: &str) -> String {
        format!("token#{provider}#{}", hashed(user))
    }

    async fn record(&self, key: &str) -> Result<Option<Record>, TokenError> {
        let Some(sealed) = self.store.get(key).await? else {
            return Ok(None);
        };
        let keys = self.keys().await?;
        // A record that does not open (sealed under another key, or moved from another
        // user's key) is as good as none: the user authorizes again.
        Ok(keys
            .open(&format!("token:{key}"), &sealed.bytes)
            .and_then(|plain| serde_json::from_slice(&plain).ok()))
    }

    pub(super) async fn store_record(
        &self,
        key: &str,
        granted: Granted,
        asked: &[String],
    ) -> Result<(), TokenError> {
        let record = Record {
            a: granted.access,
            x: granted.expires.map(unix),
            // Kept as long as a refresh token can renew it; else until the access token ends.
            s: granted.scopes.unwrap_or_else(|| asked.to_vec()),
            r: granted.refresh,
        };
        let expires = match (&record.r, record.x) {
            (None, Some(x)) => Some(UNIX_EPOCH + Duration::from_secs(x)),
            _ => None,
        };
        let plain = serde_json::to_vec(&record).map_err(|e| TokenError(e.to_string()))?;
        let bytes = self.keys().await?.seal(&format!("token:{key}"), &plain);
        self.store.put(key, Sealed { bytes, expires }).await
    }

    /// Whether `user` holds a token for `provider` with `scopes` (for the check URL).
    pub(crate) async fn holds(
        &self,
        provider: &str,
        user: &str,
        scopes: &[String],
    ) -> Result<bool, TokenError> {
        let record = self.record(&Self::vault_key(provider, user)).await?;
        Ok(record.is_some_and(|r| scopes.iter().all(|s| r.s.contains(s))))
    }

    /// Forgets `user`'s tokens for `provider`.
    pub(crate) async fn forget(&self, provider: &str, user: &str) -> Result<(), TokenError> {
        self.store.delete(&Self::vault_key(provider, user)).await
    }

    async fn held(
        &self,
        provider: &Provider,
        user: &str,
        scopes: &[String],
    ) -> Result<Held, TokenError> {
        let id = provider.config.id.as_str();
        let key = Self::vault_key(id, user);
        let wanted = provider.all_scopes(scopes);
        let Some(record) = self.record(&key).await? else {
            return Ok(Held::Authorize(self.challenge(id, user, scopes).await?));
        };
        if !scopes.iter().all(|s| record.s.contains(s)) {
            // More scopes than the user granted so far: ask for them all at once.
            let mut all = record.s.clone();
            all.extend(scopes.iter().filter(|s| !record.s.contains(s)).cloned());
            return Ok(Held::Authorize(self.challenge(id, user, &all).await?));
        }
        let fresh = record
            .x
            .is_none_or(|x| x > unix(SystemTime::now() + REFRESH_AHEAD));
        if fresh {
            return Ok(Held::Token(Secret::new(record.a)));
        }
        let Some(refresh) = &record.r else {
            return Ok(Held::Authorize(self.challenge(id, user, scopes).await?));
        };
        let secret = self.client_secret(provider).await?;
        match provider
            .refresh(self.http().await?, secret.expose(), refresh)
            .await
        {
            Ok(granted) => {
                let access = granted.access.clone();
                self.store_record(&key, granted, &wanted).await?;
                Ok(Held::Token(Secret::new(access)))
            }
            Err(Failed::Refused(code)) => {
                // Another call (here or in another environment) may have refreshed first, and a
                // provider rotating refresh tokens refuses the old one: its new token stands.
                if let Some(now) = self.record(&key).await?
                    && now.a != record.a
                    && now.x.is_none_or(|x| x > unix(SystemTime::now()))
                {
                    return Ok(Held::Token(Secret::new(now.a)));
                }
                tracing::info!(target: "oxp::oauth", provider = id, error = %code, "refresh refused; the user must authorize again");
                self.store.delete(&key).await?;
                Ok(Held::Authorize(self.challenge(id, user, scopes).await?))
            }
            Err(Failed::Unavailable(why)) => Err(TokenError(why)),
        }
    }
}

impl UserTokens for Broker {
    fn serves(&self, provider: &str) -> bool {
        self.provider(provider).is_some()
    }

    fn holds<'a>(
        &'a self,
        provider: &'a str,
        user: &'a str,
        scopes: &'a [String],
    ) -> TokenFuture<'a, Result<bool, TokenError>> {
        Box::pin(Broker::holds(self, provider, user, scopes))
    }

    fn when_completed(&self, hook: oxp_lambda_core::tokens::Completed) {
        self.hooks
            .0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(hook);
    }

    fn token<'a>(
        &'a self,
        provider: &'a str,
        user: &'a str,
        scopes: &'a [String],
    ) -> TokenFuture<'a, Result<Held, TokenError>> {
        Box::pin(async move {
            let Some(p) = self.provider(provider) else {
                return Err(TokenError(format!("no provider '{provider}'")));
            };
            self.held(p, user, scopes).await
        })
    }

    fn forget_refused<'a>(
        &'a self,
        provider: &'a str,
        user: &'a str,
        refused: &'a oxp_lambda_core::Secret,
    ) -> TokenFuture<'a, Result<(), TokenError>> {
        Box::pin(async move {
            // The record as it is now: one that replaced the refused token stays.
            let key = Self::vault_key(provider, user);
            match self.record(&key).await? {
                Some(record) if record.a == refused.expose() => {
                    tracing::info!(target: "oxp::oauth", provider, "token refused by its service; the user must authorize again");
                    self.store.delete(&key).await
                }
                _ => Ok(()),
            }
        })
    }
}
