//! Bearer JWTs verified by this server: HS256 with a server-held secret, or RS256/ES256 with
//! keys from a JWKS URL (cached, refetched for an unknown `kid` at most every few seconds).

use super::{AuthError, JwtConfig, JwtKeys};
use futures_util::FutureExt;
use http::{HeaderMap, header};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use oxp_lambda_core::principal::Principal;
use oxp_lambda_core::secrets::Secrets;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, RwLock};

/// Why keys from a JWKS need an audience to check.
const NO_AUDIENCE: &str = "OXP_JWT_AUDIENCE: required with OXP_JWT_JWKS_URL (this server's \
    identifier, which the identity provider writes as `aud`; or OXP_JWT_CLIENT_ID for tokens \
    that name their application by `client_id`, as Cognito's access tokens): the provider signs \
    tokens for every application it serves, and without it this server would take them all";

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
        super::jwt_crypto::install();
        let jwks = match &config.keys {
            JwtKeys::Hs256 { secret_id } => {
                if !secrets.holds(secret_id) {
                    return Err(format!(
                        "OXP_JWT_HS256_SECRET_ID: secret '{secret_id}' is not held by the server's secret source"
                    ));
                }
                // A local key is at hand now; one in Secrets Manager is checked at first use.
                if let Some(Ok(key)) = secrets.get(secret_id).now_or_never() {
                    short_key(&key).map_err(|why| format!("OXP_JWT_HS256_SECRET_ID: {why}"))?;
                }
                None
            }
            JwtKeys::Jwks {
                url,
                min_refresh,
                ttl,
            } => {
                // An identity provider signs tokens for every application it serves: a server
                // that checks no audience takes them all (MCP: a token MUST be issued for it).
                if config.audience.is_none() && config.client_id.is_none() {
                    return Err(NO_AUDIENCE.into());
                }
                Some(JwksCache::new(url.clone(), *min_refresh, *ttl))
            }
        };
        Ok(Self {
            config,
            secrets,
            jwks,
        })
    }

    /// Verifies the `Authorization: Bearer` header.
    pub(crate) async fn verify_headers(
        &self,
        headers: &HeaderMap,
    ) -> Result<super::Authenticated, AuthError> {
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
    pub(crate) async fn verify(&self, token: &str) -> Result<super::Authenticated, AuthError> {
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
                short_key(&secret).map_err(AuthError)?;
                DecodingKey::from_secret(secret.expose().as_bytes())
                    .map_err(|e| AuthError(format!("signing key unusable: {e}")))?
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
        // jsonwebtoken compares `iss` and `aud` only when the token has them: a configured
        // claim is required too, so a token cannot pass by leaving it out.
        let mut required = vec!["exp"];
        if let Some(iss) = &self.config.issuer {
            validation.set_issuer(&[iss]);
            required.push("iss");
        }
        match &self.config.audience {
            Some(aud) => {
                validation.set_audience(&[aud]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&required);
        let data = jsonwebtoken::decode::<HashMap<String, Value>>(token, &key, &validation)
            .map_err(|e| AuthError(format!("token rejected: {e}")))?;
        // Cognito access tokens carry no `aud`, but `client_id` and `token_use`.
        for (claim, expected) in [
            ("client_id", &self.config.client_id),
            ("token_use", &self.config.token_use),
        ] {
            if let Some(expected) = expected
                && data.claims.get(claim).and_then(Value::as_str) != Some(expected.as_str())
            {
                return Err(AuthError(format!(
                    "token rejected: `{claim}` is missing or not the configured one"
                )));
            }
        }
        let subject = super::caller_of(|claim| data.claims.get(claim).and_then(Value::as_str))
            .ok_or_else(|| {
                AuthError("token rejected: no `sub`, `client_id` or `azp` names the caller".into())
            })?;
        let principal = Principal {
            subject: Some(subject),
            bind_user_id: self.config.bind_user_id,
            scopes: None,
        };
        Ok(super::Authenticated {
            principal,
            scopes: Some(granted_scopes(&data.claims)),
        })
    }
}

/// The scopes a token grants: `scope` (RFC 9068, space-separated) or `scp` (an array, or a
/// space-separated string, as some providers send it). Bounded, as any caller-sent list.
fn granted_scopes(claims: &HashMap<String, Value>) -> super::GrantedScopes {
    const MAX_SCOPES: usize = 256;
    let words = |s: &str| -> Vec<String> { s.split_whitespace().map(str::to_owned).collect() };
    let mut scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => words(s),
        (_, Some(Value::String(s))) => words(s),
        (_, Some(Value::Array(items))) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    scopes.truncate(MAX_SCOPES);
    super::GrantedScopes(scopes)
}

/// HMAC keys shorter than the hash are guessable: RFC 7518 requires at least 256 bits for HS256.
fn short_key(key: &oxp_lambda_core::tool::Secret) -> Result<(), String> {
    let len = key.expose().len();
    if len < 32 {
        return Err(format!(
            "the HS256 signing key is {len} bytes; at least 32 are required"
        ));
    }
    Ok(())
}

/// Largest JWKS document read (a few keys take a few KiB).
const MAX_JWKS_BYTES: usize = 256 * 1024;

/// The JWKS client. The keys decide who may call: no redirect may move the fetch elsewhere,
/// and no proxy from the environment may see or change it.
fn jwks_client() -> Result<reqwest::Client, String> {
    crate::http_client::builder()
        .timeout(Duration::from_secs(5))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// The keys of a JWKS document that read as keys. One this server cannot read (a type or
/// algorithm newer than it, as a post-quantum `AKP` key beside the RSA ones, or a malformed
/// one) is left out rather than failing the set, and with it every token its other keys sign.
fn usable_keys(document: &[u8]) -> Result<Vec<Jwk>, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Set {
        keys: Vec<Box<serde_json::value::RawValue>>,
    }
    let set: Set = serde_json::from_slice(document)?;
    let read = set.keys.len();
    let keys: Vec<Jwk> = set
        .keys
        .iter()
        .filter_map(|key| serde_json::from_str(key.get()).ok())
        .collect();
    if keys.len() < read {
        tracing::warn!(target: "oxp::auth", unread = read - keys.len(), "JWKS keys left out: not keys this server reads");
    }
    Ok(keys)
}

/// JWKS keys by `kid`, fetched on first use, refreshed after their TTL, and refetched once for
/// an unknown `kid` at most every `min_refresh`.
#[derive(Debug)]
struct JwksCache {
    url: String,
    /// Built at the first fetch: building it loads the system's TLS roots, which start-up
    /// should not pay for a fetch that comes with the first token.
    /// Built by the first fetch; a failed build is not kept, so the next fetch tries again.
    client: OnceLock<reqwest::Client>,
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
    fn new(url: String, min_refresh: Duration, ttl: Duration) -> Self {
        Self {
            url,
            client: OnceLock::new(),
            min_refresh,
            ttl,
            state: RwLock::default(),
            fetching: Mutex::new(()),
        }
    }

    async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, AuthError> {
        if let Some(key) = self.lookup(kid, alg, false).await? {
            return Ok(key);
        }
        let _guard = self.fetching.lock().await;
        // Another caller may have fetched while this one waited.
        if let Some(key) = self.lookup(kid, alg, false).await? {
            return Ok(key);
        }
        let may_fetch = {
            let state = self.state.read().await;
            let fresh = state.fresh(self.ttl);
            let recent = state
                .attempted_at
                .is_some_and(|t| t.elapsed() < self.min_refresh);
            !(recent || (fresh && kid.is_none()))
        };
        let fetched = if may_fetch {
            self.refresh().await
        } else {
            Err(AuthError(format!(
                "no JWKS key for kid {kid:?} (refetch rate-limited)"
            )))
        };
        if fetched.is_ok() {
            return self
                .lookup(kid, alg, false)
                .await?
                .ok_or_else(|| AuthError(format!("no JWKS key for kid {kid:?}")));
        }
        // While the JWKS cannot be had, the last keys fetched stand in (past their TTL).
        match self.lookup(kid, alg, true).await? {
            Some(key) => {
                tracing::warn!(target: "oxp::auth", "JWKS unavailable: using the last keys fetched");
                Ok(key)
            }
            None => fetched.map(|()| unreachable!("a fetched set was looked up above")),
        }
    }

    /// The key for `kid` if the cached set has it and is fresh (or `stale` keys will do).
    async fn lookup(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
        stale: bool,
    ) -> Result<Option<DecodingKey>, AuthError> {
        let state = self.state.read().await;
        if !stale && !state.fresh(self.ttl) {
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
        let failed = |e: &dyn std::fmt::Display| AuthError(format!("JWKS fetch failed: {e}"));
        let client = match self.client.get() {
            Some(client) => client,
            None => {
                let built = jwks_client().map_err(|e| failed(&e))?;
                self.client.get_or_init(|| built)
            }
        };
        let mut response = client
            .get(&self.url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| failed(&e))?;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| failed(&e))? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(failed(&format!(
                    "the document is over {MAX_JWKS_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        let keys = usable_keys(&body).map_err(|e| failed(&e))?;
        let mut state = self.state.write().await;
        state.keys = keys;
        state.fetched_at = Some(Instant::now());
        tracing::info!(keys = state.keys.len(), "JWKS fetched");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_jwks_client_is_built_by_the_first_fetch_not_with_the_cache() {
        let cache = JwksCache::new(
            "http://127.0.0.1:9/jwks.json".into(),
            Duration::ZERO,
            Duration::from_secs(60),
        );
        assert!(cache.client.get().is_none(), "no TLS roots loaded yet");
        // Nothing listens on port 9: the fetch fails, but the client was built for it.
        assert!(cache.refresh().await.is_err());
        assert!(cache.client.get().is_some());
    }
}
