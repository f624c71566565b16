//! Authentication of callers (`OXP_AUTH`): bearer JWTs verified here ([`jwt`], feature `jwt`),
//! the claims of an API Gateway authorizer ([`apigateway`], feature `lambda`), or none.
//!
//! A failure never says which check failed: the reason goes to the log (never the token).

#[cfg(feature = "lambda")]
pub(crate) mod apigateway;
#[cfg(not(feature = "lambda"))]
#[path = "apigateway_off.rs"]
pub(crate) mod apigateway;
#[cfg(feature = "jwt")]
pub(crate) mod jwt;
#[cfg(not(feature = "jwt"))]
#[path = "jwt_off.rs"]
pub(crate) mod jwt;
#[cfg(feature = "jwt")]
pub(crate) mod jwt_crypto;

use crate::settings::{ConfigError, Env, invalid};
use http::{Extensions, HeaderMap};
use oxp_lambda_core::principal::Principal;
use oxp_lambda_core::secrets::Secrets;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// How callers authenticate (`OXP_AUTH`).
#[derive(Debug, Clone, PartialEq)]
pub enum AuthConfig {
    /// No authentication. Must be set explicitly, except for a local server on loopback.
    None {
        /// Whether `none` was chosen explicitly (a warning is logged otherwise).
        explicit: bool,
    },
    /// Bearer JWTs verified by this server.
    Jwt(JwtConfig),
    /// Trust the claims of an API Gateway JWT or Lambda authorizer (`requestContext.authorizer`).
    ApiGateway {
        /// `OXP_BIND_USER_ID` (default `true`): the call's user id must equal the caller's `sub`,
        /// and defaults to it.
        bind_user_id: bool,
    },
}

/// Bearer JWT verification settings.
#[derive(Debug, Clone, PartialEq)]
pub struct JwtConfig {
    /// Where the verification keys come from.
    pub keys: JwtKeys,
    /// `OXP_JWT_ISSUER`: required `iss`, when set.
    pub issuer: Option<String>,
    /// `OXP_JWT_AUDIENCE`: required `aud`, when set.
    pub audience: Option<String>,
    /// `OXP_JWT_CLIENT_ID`: required `client_id` claim, when set (Cognito access tokens carry
    /// no `aud`).
    pub client_id: Option<String>,
    /// `OXP_JWT_TOKEN_USE`: required `token_use` claim (`access` or `id` for Cognito), when set.
    pub token_use: Option<String>,
    /// `OXP_JWT_LEEWAY_SECS` (default 5): clock skew allowed for `exp` and `nbf`.
    pub leeway_secs: u64,
    /// `OXP_BIND_USER_ID` (default `true`): the call's user id must equal the token's `sub`, and
    /// defaults to it.
    pub bind_user_id: bool,
}

/// Verification keys of [`JwtConfig`].
#[derive(Debug, Clone, PartialEq)]
pub enum JwtKeys {
    /// `OXP_JWT_HS256_SECRET_ID`: HS256 with this server-held secret (Secrets Manager or local).
    Hs256 {
        /// Secret id of the signing key.
        secret_id: String,
    },
    /// `OXP_JWT_JWKS_URL`: RS256/ES256 keys from a JWKS document.
    Jwks {
        /// The JWKS URL.
        url: String,
        /// `OXP_JWT_JWKS_MIN_REFRESH_SECS` (default 30): an unknown `kid` refetches at most this often.
        min_refresh: Duration,
        /// `OXP_JWT_JWKS_TTL_SECS` (default 3600): how long fetched keys are used.
        ttl: Duration,
    },
}

/// The settings of token verification that say it is meant: without `OXP_AUTH` they refuse a
/// start that would serve without authentication.
const JWT_SET: [&str; 5] = [
    "OXP_JWT_HS256_SECRET_ID",
    "OXP_JWT_JWKS_URL",
    "OXP_JWT_ISSUER",
    "OXP_JWT_AUDIENCE",
    "OXP_JWT_CLIENT_ID",
];

impl AuthConfig {
    /// `host` is where a local server listens: beyond loopback, `OXP_AUTH` must be set.
    pub(crate) fn from_env(env: &Env<'_>, host: IpAddr) -> Result<Self, ConfigError> {
        // With authentication on, a caller acts for itself unless the deployment opts out.
        let bind_user_id = match env.get("OXP_BIND_USER_ID").as_deref().map(str::trim) {
            None | Some("true") => true,
            Some("false") => false,
            Some(_) => return Err(invalid("OXP_BIND_USER_ID", "must be 'true' or 'false'")),
        };
        match env.get("OXP_AUTH").as_deref().map(str::trim) {
            None if env.in_lambda() => Err(invalid(
                "OXP_AUTH",
                "must be set in Lambda: 'jwt', 'apigateway', or 'none' to serve without authentication",
            )),
            None if !host.is_loopback() => Err(invalid(
                "OXP_AUTH",
                "must be set when the server listens beyond loopback (OXP_HOST)",
            )),
            // Token settings and no mode: meant to verify tokens, it would serve without.
            None => match JWT_SET.iter().find(|name| env.get(name).is_some()) {
                Some(name) => Err(invalid(
                    "OXP_AUTH",
                    &format!(
                        "must be set when {name} is: 'jwt' to verify tokens, 'none' to serve without"
                    ),
                )),
                None => Ok(Self::None { explicit: false }),
            },
            Some("none") => Ok(Self::None { explicit: true }),
            Some("apigateway") => Ok(Self::ApiGateway { bind_user_id }),
            Some("jwt") => Ok(Self::Jwt(JwtConfig {
                keys: jwt_keys(env)?,
                issuer: env.get("OXP_JWT_ISSUER"),
                audience: env.get("OXP_JWT_AUDIENCE"),
                client_id: env.get("OXP_JWT_CLIENT_ID"),
                token_use: env.get("OXP_JWT_TOKEN_USE"),
                leeway_secs: leeway_secs(env)?,
                bind_user_id,
            })),
            Some(_) => Err(invalid("OXP_AUTH", "must be 'none', 'jwt' or 'apigateway'")),
        }
    }
}

/// `OXP_JWT_LEEWAY_SECS` (default 5): the clock skew allowed on `exp` and `nbf`. RFC 7519's
/// "a few minutes" at most: a larger value (milliseconds written for seconds, say) would take an
/// expired token for as long, so it refuses the start.
fn leeway_secs(env: &Env<'_>) -> Result<u64, ConfigError> {
    const MAX_LEEWAY_SECS: u64 = 300;
    match env.parsed::<u64>("OXP_JWT_LEEWAY_SECS")? {
        Some(secs) if secs > MAX_LEEWAY_SECS => Err(invalid(
            "OXP_JWT_LEEWAY_SECS",
            &format!(
                "must be at most {MAX_LEEWAY_SECS} (seconds): a larger skew takes expired tokens for as long"
            ),
        )),
        secs => Ok(secs.unwrap_or(5)),
    }
}

/// `OXP_REQUIRED_SCOPES` (or its older name `OXP_MCP_SCOPES`): comma-separated scopes every
/// authenticated request's token must grant, on every route that reaches a tool.
pub(crate) fn required_scopes(env: &Env<'_>) -> Result<Vec<String>, ConfigError> {
    let (name, scopes) = match env.list("OXP_REQUIRED_SCOPES") {
        scopes if scopes.is_empty() => ("OXP_MCP_SCOPES", env.list("OXP_MCP_SCOPES")),
        scopes => ("OXP_REQUIRED_SCOPES", scopes),
    };
    // A scope is an RFC 6749 scope-token: printable ASCII but space, `"` and `\`.
    let token = |s: &String| {
        s.bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
    };
    if !scopes.iter().all(token) {
        return Err(invalid(name, "must be comma-separated scope names"));
    }
    Ok(scopes)
}

fn jwt_keys(env: &Env<'_>) -> Result<JwtKeys, ConfigError> {
    match (
        env.get("OXP_JWT_HS256_SECRET_ID"),
        env.get("OXP_JWT_JWKS_URL"),
    ) {
        (Some(secret_id), None) => Ok(JwtKeys::Hs256 { secret_id }),
        (None, Some(url)) => {
            if !(url.starts_with("https://") || is_loopback_http(&url)) {
                return Err(invalid(
                    "OXP_JWT_JWKS_URL",
                    "must be an https URL (plain http only to a loopback address)",
                ));
            }
            let secs = |name: &'static str, default: u64| -> Result<Duration, ConfigError> {
                Ok(Duration::from_secs(env.parsed(name)?.unwrap_or(default)))
            };
            Ok(JwtKeys::Jwks {
                url,
                min_refresh: secs("OXP_JWT_JWKS_MIN_REFRESH_SECS", 30)?,
                ttl: secs("OXP_JWT_JWKS_TTL_SECS", 3600)?,
            })
        }
        _ => Err(invalid(
            "OXP_AUTH",
            "'jwt' needs exactly one of OXP_JWT_HS256_SECRET_ID or OXP_JWT_JWKS_URL",
        )),
    }
}

/// `http://` to 127.0.0.0/8, `[::1]` or `localhost`: a key server on this machine.
fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The caller a verified token names, from its claims (`claim` reads one as a string): `sub`;
/// a token without one (client credentials, a machine) is its client, `client:<client_id>` or
/// `client:<azp>`, so two clients never share a caller (a key for cancellation, rate limits,
/// queue shares, idempotency). `None`: the token names no one, and is refused.
pub(crate) fn caller_of<'a>(claim: impl Fn(&str) -> Option<&'a str>) -> Option<String> {
    let named = |name: &str| claim(name).filter(|v| !v.trim().is_empty());
    if let Some(sub) = named("sub") {
        return Some(sub.to_owned());
    }
    named("client_id")
        .or_else(|| named("azp"))
        .map(|client| format!("client:{client}"))
}

/// Why a request was not authenticated. Only logged; the caller gets a generic answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuthError(pub(crate) String);

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who the request is from, and the OAuth scopes its token grants (`None` without
/// authentication).
#[derive(Debug, Clone)]
pub(crate) struct Authenticated {
    pub(crate) principal: Principal,
    pub(crate) scopes: Option<GrantedScopes>,
}

/// The scopes of the request's bearer token (`scope`, space-separated, or `scp`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GrantedScopes(pub(crate) Vec<String>);

/// Authenticates requests according to the configured mode, and holds the scopes every
/// authenticated request's token must grant (`OXP_REQUIRED_SCOPES`).
#[derive(Debug, Clone)]
pub(crate) struct Authenticator {
    mode: Mode,
    required_scopes: Vec<String>,
}

/// The configured mode.
#[derive(Debug, Clone)]
enum Mode {
    /// Every request passes.
    None,
    /// Bearer JWTs.
    Jwt(Arc<jwt::JwtVerifier>),
    /// Claims from an API Gateway authorizer.
    ApiGateway {
        /// Whether the call's user id is bound to the caller.
        bind_user_id: bool,
    },
}

impl Authenticator {
    /// The authenticator `config` describes, requiring `required_scopes` of every token; HS256
    /// keys are read through `secrets`.
    pub(crate) fn from_config(
        config: &AuthConfig,
        required_scopes: &[String],
        secrets: Secrets,
    ) -> Result<Self, String> {
        let mode = match config {
            AuthConfig::None { .. } if !required_scopes.is_empty() => {
                return Err(
                    "OXP_REQUIRED_SCOPES needs authentication (OXP_AUTH=jwt or apigateway)".into(),
                );
            }
            AuthConfig::None { .. } => Mode::None,
            AuthConfig::ApiGateway { bind_user_id } => {
                apigateway::available()?;
                Mode::ApiGateway {
                    bind_user_id: *bind_user_id,
                }
            }
            AuthConfig::Jwt(jwt) => {
                Mode::Jwt(Arc::new(jwt::JwtVerifier::new(jwt.clone(), secrets)?))
            }
        };
        Ok(Self {
            mode,
            required_scopes: required_scopes.to_vec(),
        })
    }

    /// Whether every request passes (no layer is needed).
    pub(crate) fn is_none(&self) -> bool {
        matches!(self.mode, Mode::None)
    }

    /// The scopes every token must grant.
    pub(crate) fn required_scopes(&self) -> &[String] {
        &self.required_scopes
    }

    /// The scopes of `required_scopes` that `authenticated`'s token does not grant (a mode or
    /// an authorizer that reports no scopes grants none).
    pub(crate) fn missing_scopes(&self, authenticated: &Authenticated) -> Vec<String> {
        let granted = authenticated.scopes.as_ref().map_or(&[][..], |g| &g.0[..]);
        self.required_scopes
            .iter()
            .filter(|s| !granted.contains(s))
            .cloned()
            .collect()
    }

    /// Authenticates one request.
    pub(crate) async fn authenticate(
        &self,
        headers: &HeaderMap,
        extensions: &Extensions,
    ) -> Result<Authenticated, AuthError> {
        let principal = match &self.mode {
            Mode::None => Principal::default(),
            Mode::Jwt(verifier) => return verifier.verify_headers(headers).await,
            Mode::ApiGateway { bind_user_id } => {
                let subject = apigateway::authorizer_subject(extensions)
                    .ok_or_else(|| {
                        AuthError("no API Gateway authorizer claims on the request".into())
                    })?
                    .ok_or_else(|| {
                        AuthError("the authorizer's claims name no caller (`sub`, `client_id`, `azp`, `principalId`)".into())
                    })?;
                let principal = Principal {
                    subject: Some(subject),
                    bind_user_id: *bind_user_id,
                    scopes: None,
                };
                return Ok(Authenticated {
                    principal,
                    scopes: Some(GrantedScopes(apigateway::authorizer_scopes(extensions))),
                });
            }
        };
        Ok(Authenticated {
            principal,
            scopes: None,
        })
    }
}
