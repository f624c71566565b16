//! The OAuth providers the server runs the flow for, from `OXP_OAUTH_*` (docs/configuration.md
//! and docs/authorization.md).

use crate::settings::{ConfigError, Env, invalid};
use std::time::Duration;

/// Users' authorization with third-party providers (`OXP_OAUTH_PROVIDERS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// The providers, in the order `OXP_OAUTH_PROVIDERS` names them (none: the server runs no
    /// flow, and tools get tokens only from clients).
    pub providers: Vec<ProviderConfig>,
    /// `OXP_PUBLIC_URL`: the base URL browsers reach this server at; the redirect URL is
    /// `<it>/oauth/<provider>/callback`. Locally it defaults to `http://<host>:<port>`; in
    /// Lambda it is required (https) once a provider is configured.
    pub public_url: Option<String>,
    /// `OXP_OAUTH_TABLE`: the DynamoDB table of the token vault (feature `dynamodb`); unset,
    /// tokens are kept in memory (and lost with the process).
    pub table: Option<String>,
    /// `OXP_OAUTH_LINK_TTL_SECS` (default 600): how long an authorization link, and the flow
    /// it starts, stays valid.
    pub link_ttl: Duration,
    /// `OXP_OAUTH_PENDING_SECS` (default 900): how long an async (RAP) invocation waits for the
    /// user to authorize before it ends in an error result.
    pub pending_timeout: Duration,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        Self {
            providers: Vec::new(),
            public_url: None,
            table: None,
            link_ttl: Duration::from_secs(600),
            pending_timeout: Duration::from_secs(900),
        }
    }
}

/// How a provider authenticates this server at its token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// HTTP Basic (`client_secret_basic`, the OAuth 2.0 default).
    Basic,
    /// In the form body (`client_secret_post`: GitHub, Slack).
    Post,
}

/// One provider (`OXP_OAUTH_<ID>_*`, `<ID>` being the id in upper case with `-` as `_`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The id tools declare (`.authorization("github", ...)`).
    pub id: String,
    /// `_ISSUER`: an OpenID Connect issuer whose discovery document gives the endpoints (read at
    /// the first flow); explicit URLs win.
    pub issuer: Option<String>,
    /// `_AUTHORIZE_URL` (or the preset's).
    pub authorize_url: Option<String>,
    /// `_TOKEN_URL` (or the preset's).
    pub token_url: Option<String>,
    /// `_USERINFO_URL` (or discovery's): read by tools such as `Demo.Profile`, not the flow.
    pub userinfo_url: Option<String>,
    /// `_CLIENT_ID` (required).
    pub client_id: String,
    /// The secret id of the client secret in the secret source: `OAUTH_<ID>_CLIENT_SECRET`.
    pub client_secret_id: String,
    /// `_SCOPES`: comma- or space-separated scopes asked for besides the tool's (preset default).
    pub scopes: Vec<String>,
    /// `_CLIENT_AUTH` (`basic` or `post`; the preset's, else `basic`).
    pub client_auth: ClientAuth,
    /// Extra authorization request parameters of the preset (Google: offline access).
    pub extra_params: Vec<(String, String)>,
    /// `_IDENTITY` (default `sub,email`; `none` to turn it off): the fields of the provider's
    /// userinfo answer, one of which must equal the user the link was made for before the
    /// flow completes (`email` only when not marked unverified), so a link opened by someone
    /// else links nothing (docs/authorization.md).
    pub identity: Vec<String>,
}

/// A provider's well-known endpoints.
struct Preset {
    authorize: &'static str,
    token: &'static str,
    userinfo: &'static str,
    scopes: &'static [&'static str],
    auth: ClientAuth,
    extra: &'static [(&'static str, &'static str)],
}

fn preset(name: &str) -> Option<Preset> {
    Some(match name {
        "github" => Preset {
            authorize: "https://github.com/login/oauth/authorize",
            token: "https://github.com/login/oauth/access_token",
            userinfo: "https://api.github.com/user",
            scopes: &[],
            auth: ClientAuth::Post,
            extra: &[],
        },
        "google" => Preset {
            authorize: "https://accounts.google.com/o/oauth2/v2/auth",
            token: "https://oauth2.googleapis.com/token",
            userinfo: "https://openidconnect.googleapis.com/v1/userinfo",
            scopes: &["openid"],
            auth: ClientAuth::Basic,
            // A refresh token comes only with offline access, and again only on consent.
            extra: &[("access_type", "offline"), ("prompt", "consent")],
        },
        "slack" => Preset {
            authorize: "https://slack.com/openid/connect/authorize",
            token: "https://slack.com/api/openid.connect.token",
            userinfo: "https://slack.com/api/openid.connect.userInfo",
            scopes: &["openid"],
            auth: ClientAuth::Post,
            extra: &[],
        },
        "microsoft" => Preset {
            authorize: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
            token: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
            userinfo: "https://graph.microsoft.com/oidc/userinfo",
            scopes: &["openid", "offline_access"],
            auth: ClientAuth::Basic,
            extra: &[],
        },
        _ => return None,
    })
}

/// The variable prefix of provider `id`.
pub(crate) fn prefix(id: &str) -> String {
    let upper: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("OXP_OAUTH_{upper}_")
}

const PROVIDERS: &str = "OXP_OAUTH_PROVIDERS";

/// `url` when it is absolute (a scheme and a host).
fn absolute(url: &str) -> Option<http::Uri> {
    let parsed: http::Uri = url.parse().ok()?;
    (parsed.scheme().is_some() && parsed.host().is_some_and(|h| !h.is_empty())).then_some(parsed)
}

impl OAuthConfig {
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mut config = Self {
            public_url: env
                .get("OXP_PUBLIC_URL")
                .map(|u| u.trim_end_matches('/').to_owned()),
            table: env.get("OXP_OAUTH_TABLE"),
            link_ttl: env
                .positive("OXP_OAUTH_LINK_TTL_SECS")?
                .map_or(Self::default().link_ttl, Duration::from_secs),
            pending_timeout: env
                .positive("OXP_OAUTH_PENDING_SECS")?
                .map_or(Self::default().pending_timeout, Duration::from_secs),
            providers: Vec::new(),
        };
        if let Some(url) = &config.public_url {
            let parsed = absolute(url)
                .ok_or_else(|| invalid("OXP_PUBLIC_URL", "must be an absolute http(s) URL"))?;
            let local = matches!(parsed.host(), Some("127.0.0.1" | "localhost" | "[::1]"));
            let scheme = parsed.scheme_str().unwrap_or_default();
            if scheme != "https" && !(scheme == "http" && local) {
                return Err(invalid(
                    "OXP_PUBLIC_URL",
                    "must be https (http only for 127.0.0.1 or localhost): authorization codes travel through it",
                ));
            }
        }
        for id in env.list(PROVIDERS) {
            config.providers.push(provider(env, &id)?);
        }
        if env.in_lambda() && !config.providers.is_empty() && config.table.is_none() {
            return Err(invalid(
                "OXP_OAUTH_TABLE",
                "required in Lambda when OXP_OAUTH_PROVIDERS is set: execution environments share the token vault",
            ));
        }
        if env.in_lambda() && !config.providers.is_empty() && config.public_url.is_none() {
            return Err(invalid(
                "OXP_PUBLIC_URL",
                "required in Lambda when OXP_OAUTH_PROVIDERS is set (the URL browsers reach the API at)",
            ));
        }
        Ok(config)
    }
}

/// Whether `id` may name a provider (it names its variables too).
fn is_provider_id(id: &str) -> bool {
    id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A provider's issuer, authorization endpoint and token endpoint, as far as configured.
type Endpoints = (Option<String>, Option<String>, Option<String>);

/// A provider's issuer and its authorization and token endpoints (each may come from its
/// preset), every one an absolute URL; an issuer alone is enough (its discovery names them).
fn endpoints(
    var: &impl Fn(&str) -> Option<String>,
    preset: Option<&Preset>,
    id: &str,
    prefix: &str,
) -> Result<Endpoints, ConfigError> {
    let issuer = var("ISSUER");
    let authorize_url = var("AUTHORIZE_URL").or_else(|| preset.map(|p| p.authorize.into()));
    let token_url = var("TOKEN_URL").or_else(|| preset.map(|p| p.token.into()));
    if issuer.is_none() && (authorize_url.is_none() || token_url.is_none()) {
        return Err(invalid(
            PROVIDERS,
            &format!(
                "provider '{id}' needs {prefix}ISSUER, or {prefix}AUTHORIZE_URL and {prefix}TOKEN_URL, or a preset (github, google, slack, microsoft)"
            ),
        ));
    }
    if [&issuer, &authorize_url, &token_url]
        .into_iter()
        .flatten()
        .any(|url| absolute(url).is_none())
    {
        let why = format!("a URL of provider '{id}' is not an absolute URL");
        return Err(invalid(PROVIDERS, &why));
    }
    Ok((issuer, authorize_url, token_url))
}

fn provider(env: &Env<'_>, id: &str) -> Result<ProviderConfig, ConfigError> {
    if !is_provider_id(id) {
        let why = "provider ids are letters, digits, '-' and '_'";
        return Err(invalid(PROVIDERS, why));
    }
    let prefix = prefix(id);
    let var = |name: &str| env.get(&format!("{prefix}{name}"));
    let preset = var("PRESET").map_or_else(|| preset(id), |p| preset(p.trim()));
    let client_id = var("CLIENT_ID").ok_or_else(|| {
        invalid(
            PROVIDERS,
            &format!("{prefix}CLIENT_ID is required for provider '{id}'"),
        )
    })?;
    let (issuer, authorize_url, token_url) = endpoints(&var, preset.as_ref(), id, &prefix)?;
    let client_auth = match var("CLIENT_AUTH").as_deref().map(str::trim) {
        None => preset.as_ref().map_or(ClientAuth::Basic, |p| p.auth),
        Some("basic") => ClientAuth::Basic,
        Some("post") => ClientAuth::Post,
        Some(_) => {
            let why = format!("{prefix}CLIENT_AUTH must be 'basic' or 'post'");
            return Err(invalid(PROVIDERS, &why));
        }
    };
    let scopes = match var("SCOPES") {
        Some(v) => words(&v, &[',', ' ']),
        None => preset
            .as_ref()
            .map_or_else(Vec::new, |p| p.scopes.iter().map(|s| (*s).into()).collect()),
    };
    let identity = match var("IDENTITY").as_deref().map(str::trim) {
        None => vec!["sub".into(), "email".into()],
        Some("none") => Vec::new(),
        Some(fields) => words(fields, &[',']),
    };
    let userinfo_url = var("USERINFO_URL").or_else(|| preset.as_ref().map(|p| p.userinfo.into()));
    if !identity.is_empty() && userinfo_url.is_none() && issuer.is_none() {
        return Err(invalid(
            PROVIDERS,
            &format!(
                "provider '{id}' checks who completes a flow at its userinfo endpoint: set {prefix}USERINFO_URL (or {prefix}ISSUER), or {prefix}IDENTITY=none"
            ),
        ));
    }
    Ok(ProviderConfig {
        id: id.to_owned(),
        issuer,
        authorize_url,
        token_url,
        userinfo_url,
        client_id,
        client_secret_id: format!("{}CLIENT_SECRET", &prefix["OXP_".len()..]),
        scopes,
        client_auth,
        extra_params: preset
            .map(|p| {
                p.extra
                    .iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect()
            })
            .unwrap_or_default(),
        identity,
    })
}

/// The non-empty words of `v` between `separators`, trimmed.
fn words(v: &str, separators: &[char]) -> Vec<String> {
    v.split(separators)
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(Into::into)
        .collect()
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
