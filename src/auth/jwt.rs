//! Bearer JWTs verified by this server: HS256 with a server-held secret, or RS256/ES256 with
//! keys from a JWKS URL (cached, refetched for an unknown `kid` at most every few seconds).

use super::{AuthError, JwtConfig, JwtKeys};
use crate::core::principal::Principal;
use crate::core::secrets::Secrets;
use http::{HeaderMap, header};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, RwLock};

/// Verifies bearer JWTs.
#[derive(Debug)]
pub(crate) struct JwtVerifier {
    config: JwtConfig,
    secrets: Secrets,
    jwks: Option<JwksCache>,
}

impl JwtVerifier {
    /// A verifier for `config`.
    pub(crate) fn new(config: JwtConfig, secrets: Secrets) -> Result<Self, String> {
        let jwks = match &config.keys {
            JwtKeys::Hs256 { secret_id } => {
                if !secrets.holds(secret_id) {
                    return Err(format!(
                        "OXP_JWT_HS256_SECRET_ID: secret '{secret_id}' is not held by the server's secret source"
                    ));
                }
                None
            }
            JwtKeys::Jwks {
                url,
                min_refresh,
                ttl,
            } => Some(JwksCache::new(url.clone(), *min_refresh, *ttl)?),
        };
        Ok(Self {
            config,
            secrets,
            jwks,
        })
    }

    /// Verifies the `Authorization: Bearer` header.
    pub(crate) async fn verify_headers(&self, headers: &HeaderMap) -> Result<Principal, AuthError> {
        let value = headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| AuthError("no Authorization header".into()))?
            .to_str()
            .map_err(|_| AuthError("Authorization header is not text".into()))?;
        let (scheme, token) = value
            .split_once(' ')
            .ok_or_else(|| AuthError("Authorization header is not 'Bearer <token>'".into()))?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError("Authorization scheme is not Bearer".into()));
        }
        self.verify(token.trim()).await
    }

    /// Verifies one token: signature, algorithm, `exp`, `nbf`, and `iss`/`aud` when configured.
    pub(crate) async fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        // `alg: none` and unknown algorithms fail here: jsonwebtoken knows no such algorithm.
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| AuthError(format!("malformed token: {e}")))?;
        let key = match &self.config.keys {
            JwtKeys::Hs256 { secret_id } => {
                if header.alg != Algorithm::HS256 {
                    return Err(AuthError(format!(
                        "algorithm {:?} is not accepted (HS256 only)",
                        header.alg
                    )));
                }
                let secret = self
                    .secrets
                    .get(secret_id)
                    .await
                    .map_err(|e| AuthError(format!("signing key unavailable: {e}")))?;
                DecodingKey::from_secret(secret.expose().as_bytes())
            }
            JwtKeys::Jwks { .. } => {
                if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256) {
                    return Err(AuthError(format!(
                        "algorithm {:?} is not accepted (RS256, ES256)",
                        header.alg
                    )));
                }
                let jwks = self.jwks.as_ref().expect("a JWKS cache in JWKS mode");
                jwks.key(header.kid.as_deref(), header.alg).await?
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.config.leeway_secs;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp"]);
        if let Some(iss) = &self.config.issuer {
            validation.set_issuer(&[iss]);
        }
        match &self.config.audience {
            Some(aud) => validation.set_audience(&[aud]),
            None => validation.validate_aud = false,
        }
        let data = jsonwebtoken::decode::<HashMap<String, Value>>(token, &key, &validation)
            .map_err(|e| AuthError(format!("token rejected: {e}")))?;
        Ok(Principal {
            subject: data
                .claims
                .get("sub")
                .and_then(Value::as_str)
                .map(str::to_owned),
            bind_user_id: self.config.bind_user_id,
        })
    }
}

/// JWKS keys by `kid`, fetched on first use, refreshed after their TTL, and refetched once for
/// an unknown `kid` at most every `min_refresh`.
#[derive(Debug)]
struct JwksCache {
    url: String,
    client: reqwest::Client,
    min_refresh: Duration,
    ttl: Duration,
    state: RwLock<JwksState>,
    /// One fetch at a time; waiting callers then see its result.
    fetching: Mutex<()>,
}

#[derive(Debug, Default)]
struct JwksState {
    keys: Vec<Jwk>,
    fetched_at: Option<Instant>,
    attempted_at: Option<Instant>,
}

impl JwksState {
    /// Whether keys were fetched less than `ttl` ago.
    fn fresh(&self, ttl: Duration) -> bool {
        self.fetched_at.is_some_and(|t| t.elapsed() < ttl)
    }
}

impl JwksCache {
    fn new(url: String, min_refresh: Duration, ttl: Duration) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("OXP_JWT_JWKS_URL: cannot build an HTTP client: {e}"))?;
        Ok(Self {
            url,
            client,
            min_refresh,
            ttl,
            state: RwLock::default(),
            fetching: Mutex::new(()),
        })
    }

    async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, AuthError> {
        if let Some(key) = self.lookup(kid, alg).await? {
            return Ok(key);
        }
        let _guard = self.fetching.lock().await;
        // Another caller may have fetched while this one waited.
        if let Some(key) = self.lookup(kid, alg).await? {
            return Ok(key);
        }
        {
            let state = self.state.read().await;
            let fresh = state.fresh(self.ttl);
            let recent = state
                .attempted_at
                .is_some_and(|t| t.elapsed() < self.min_refresh);
            if recent || (fresh && kid.is_none()) {
                return Err(AuthError(format!(
                    "no JWKS key for kid {kid:?} (refetch rate-limited)"
                )));
            }
        }
        self.refresh().await?;
        self.lookup(kid, alg)
            .await?
            .ok_or_else(|| AuthError(format!("no JWKS key for kid {kid:?}")))
    }

    /// The key for `kid` if the cached set is fresh and has it.
    async fn lookup(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Option<DecodingKey>, AuthError> {
        let state = self.state.read().await;
        if !state.fresh(self.ttl) {
            return Ok(None);
        }
        let jwk = match kid {
            Some(kid) => state
                .keys
                .iter()
                .find(|k| k.common.key_id.as_deref() == Some(kid)),
            // Without a kid, only an unambiguous single-key set is usable.
            None if state.keys.len() == 1 => state.keys.first(),
            None => None,
        };
        let Some(jwk) = jwk else { return Ok(None) };
        // A key pinned to an algorithm is used with that algorithm only (no confusion).
        if let Some(key_alg) = jwk.common.key_algorithm
            && key_alg.to_string() != format!("{alg:?}")
        {
            return Err(AuthError(format!(
                "token alg {alg:?} does not match its key's {key_alg}"
            )));
        }
        DecodingKey::from_jwk(jwk)
            .map(Some)
            .map_err(|e| AuthError(format!("unusable JWKS key: {e}")))
    }

    async fn refresh(&self) -> Result<(), AuthError> {
        self.state.write().await.attempted_at = Some(Instant::now());
        let set: JwkSet = async {
            self.client
                .get(&self.url)
                .send()
                .await?
                .error_for_status()?
                .json()
                .await
        }
        .await
        .map_err(|e: reqwest::Error| AuthError(format!("JWKS fetch failed: {e}")))?;
        let mut state = self.state.write().await;
        state.keys = set.keys;
        state.fetched_at = Some(Instant::now());
        tracing::info!(keys = state.keys.len(), "JWKS fetched");
        Ok(())
    }
}
