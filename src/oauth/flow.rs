//! The authorization code flow with a provider, through the `oauth2` crate: the authorize URL
//! with PKCE (S256), the code exchange and the refresh, over one HTTP client that follows no
//! redirect and reads bounded answers. Endpoints come from the configuration, or from the
//! issuer's OpenID Connect discovery document, read once.

use super::config::{ClientAuth, ProviderConfig};
use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use std::time::{Duration, SystemTime};
use tokio::sync::OnceCell;

/// Largest answer read from a provider.
const MAX_ANSWER: usize = 256 * 1024;

/// A provider's endpoints, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Endpoints {
    pub(crate) authorize: String,
    pub(crate) token: String,
    /// Where the granted token says who the user is (configured, the preset's, or discovery's).
    pub(crate) userinfo: Option<String>,
}

/// Tokens a provider granted.
#[derive(Debug)]
pub(crate) struct Granted {
    pub(crate) access: String,
    pub(crate) refresh: Option<String>,
    pub(crate) expires: Option<SystemTime>,
    pub(crate) scopes: Option<Vec<String>>,
}

/// How a token request failed.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The provider refused the grant (`invalid_grant`, ...): the user must authorize again.
    Refused(String),
    /// The provider could not be reached or answered garbage: try again later.
    Unavailable(String),
}

/// One provider's flow.
#[derive(Debug)]
pub(crate) struct Provider {
    pub(crate) config: ProviderConfig,
    endpoints: OnceCell<Endpoints>,
}

impl Provider {
    pub(crate) fn new(config: ProviderConfig) -> Self {
        Self {
            config,
            endpoints: OnceCell::new(),
        }
    }

    /// The endpoints: configured, else discovered (once; a failed discovery is retried by the
    /// next flow).
    pub(crate) async fn endpoints(&self, http: &reqwest::Client) -> Result<&Endpoints, Failed> {
        self.endpoints
            .get_or_try_init(|| async {
                let c = &self.config;
                // Configured URLs, unless discovery is needed for the userinfo endpoint.
                if let (Some(a), Some(t)) = (&c.authorize_url, &c.token_url)
                    && (c.issuer.is_none() || c.userinfo_url.is_some() || c.identity.is_empty())
                {
                    return Ok(Endpoints {
                        authorize: a.clone(),
                        token: t.clone(),
                        userinfo: c.userinfo_url.clone(),
                    });
                }
                let issuer = c
                    .issuer
                    .as_deref()
                    .unwrap_or_default()
                    .trim_end_matches('/');
                let url = format!("{issuer}/.well-known/openid-configuration");
                let doc: serde_json::Value = get_json(http, &url).await?;
                let field = |name: &str| doc.get(name).and_then(|v| v.as_str()).map(str::to_owned);
                Ok(Endpoints {
                    authorize: c
                        .authorize_url
                        .clone()
                        .or_else(|| field("authorization_endpoint"))
                        .ok_or_else(|| {
                            Failed::Unavailable("discovery has no authorization_endpoint".into())
                        })?,
                    token: c
                        .token_url
                        .clone()
                        .or_else(|| field("token_endpoint"))
                        .ok_or_else(|| {
                            Failed::Unavailable("discovery has no token_endpoint".into())
                        })?,
                    userinfo: c
                        .userinfo_url
                        .clone()
                        .or_else(|| field("userinfo_endpoint")),
                })
            })
            .await
    }

    /// The URL that sends the user to the provider, with `state`, the PKCE challenge of
    /// `verifier` and `scopes` (the provider's defaults and the tool's).
    pub(crate) fn authorize_url(
        &self,
        endpoints: &Endpoints,
        redirect: &str,
        state: String,
        verifier: &str,
        scopes: &[String],
    ) -> Result<String, Failed> {
        let client = BasicClient::new(ClientId::new(self.config.client_id.clone()))
            .set_auth_uri(AuthUrl::new(endpoints.authorize.clone()).map_err(bad_url)?)
            .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).map_err(bad_url)?);
        let challenge =
            PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(verifier.into()));
        let mut request = client
            .authorize_url(|| CsrfToken::new(state))
            .set_pkce_challenge(challenge)
            .add_scopes(self.all_scopes(scopes).into_iter().map(Scope::new));
        for (k, v) in &self.config.extra_params {
            request = request.add_extra_param(k.clone(), v.clone());
        }
        Ok(request.url().0.to_string())
    }

    /// The provider's default scopes and `scopes`, without repeats.
    pub(crate) fn all_scopes(&self, scopes: &[String]) -> Vec<String> {
        let mut all = self.config.scopes.clone();
        for s in scopes {
            if !all.contains(s) {
                all.push(s.clone());
            }
        }
        all
    }

    /// Exchanges `code` (with the PKCE `verifier`) for tokens.
    pub(crate) async fn exchange(
        &self,
        http: &reqwest::Client,
        secret: &str,
        redirect: &str,
        code: &str,
        verifier: &str,
    ) -> Result<Granted, Failed> {
        let endpoints = self.endpoints(http).await?;
        let client = self
            .client(endpoints, secret)?
            .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).map_err(bad_url)?);
        let answer = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(verifier.to_owned()))
            .request_async(&Http(http))
            .await
            .map_err(failed)?;
        Ok(granted(&answer, None))
    }

    /// Whether the account that granted `access` is `user`: one of the provider's
    /// [`identity`](ProviderConfig::identity) fields of its userinfo answer equals it (an
    /// `email` only when not marked unverified; letter case aside). `true` when the provider
    /// checks no identity.
    pub(crate) async fn is_user(
        &self,
        http: &reqwest::Client,
        access: &str,
        user: &str,
    ) -> Result<bool, Failed> {
        let fields = &self.config.identity;
        if fields.is_empty() {
            return Ok(true);
        }
        let endpoints = self.endpoints(http).await?;
        let Some(url) = &endpoints.userinfo else {
            return Err(Failed::Unavailable(
                "the provider has no userinfo endpoint".into(),
            ));
        };
        let request = http::Request::get(url.as_str())
            .header("accept", "application/json")
            .header("authorization", format!("Bearer {access}"))
            .header("user-agent", "oxp-lambda")
            .body(Vec::new())
            .map_err(|e| Failed::Unavailable(e.to_string()))?;
        let answer = send(http, request)
            .await
            .map_err(|e| Failed::Unavailable(format!("userinfo: {e}")))?;
        if !answer.status().is_success() {
            return Err(Failed::Unavailable(format!(
                "userinfo answered {}",
                answer.status()
            )));
        }
        let info: serde_json::Value = serde_json::from_slice(answer.body())
            .map_err(|_| Failed::Unavailable("userinfo: not JSON".into()))?;
        Ok(identifies(&info, fields, user))
    }

    /// New tokens for `refresh`.
    pub(crate) async fn refresh(
        &self,
        http: &reqwest::Client,
        secret: &str,
        refresh: &str,
    ) -> Result<Granted, Failed> {
        let endpoints = self.endpoints(http).await?;
        let client = self.client(endpoints, secret)?;
        let token = RefreshToken::new(refresh.to_owned());
        let answer = client
            .exchange_refresh_token(&token)
            .request_async(&Http(http))
            .await
            .map_err(failed)?;
        // A provider that does not rotate refresh tokens answers none: the old one stays.
        Ok(granted(&answer, Some(refresh)))
    }

    fn client(
        &self,
        endpoints: &Endpoints,
        secret: &str,
    ) -> Result<
        BasicClient<
            oauth2::EndpointNotSet,
            oauth2::EndpointNotSet,
            oauth2::EndpointNotSet,
            oauth2::EndpointNotSet,
            oauth2::EndpointSet,
        >,
        Failed,
    > {
        Ok(
            BasicClient::new(ClientId::new(self.config.client_id.clone()))
                .set_client_secret(ClientSecret::new(secret.to_owned()))
                .set_auth_type(match self.config.client_auth {
                    ClientAuth::Basic => AuthType::BasicAuth,
                    ClientAuth::Post => AuthType::RequestBody,
                })
                .set_token_uri(TokenUrl::new(endpoints.token.clone()).map_err(bad_url)?),
        )
    }
}

fn bad_url(e: impl std::fmt::Display) -> Failed {
    Failed::Unavailable(format!("a provider URL is invalid: {e}"))
}

fn granted(answer: &oauth2::basic::BasicTokenResponse, old_refresh: Option<&str>) -> Granted {
    Granted {
        access: answer.access_token().secret().clone(),
        refresh: answer
            .refresh_token()
            .map(|r| r.secret().clone())
            .or_else(|| old_refresh.map(str::to_owned)),
        expires: answer.expires_in().map(|d| SystemTime::now() + d),
        // GitHub separates granted scopes with commas, the RFC with spaces: either way.
        scopes: answer.scopes().map(|s| {
            s.iter()
                .flat_map(|s| s.split(','))
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        }),
    }
}

/// The provider's error code only: its description may echo what was sent.
fn failed<RE: std::error::Error + 'static>(
    e: RequestTokenError<RE, oauth2::basic::BasicErrorResponse>,
) -> Failed {
    match e {
        RequestTokenError::ServerResponse(r) => Failed::Refused(r.error().to_string()),
        RequestTokenError::Request(e) => Failed::Unavailable(format!("token endpoint: {e}")),
        RequestTokenError::Parse(_, _) => {
            Failed::Unavailable("token endpoint: unreadable answer".into())
        }
        RequestTokenError::Other(e) => Failed::Unavailable(format!("token endpoint: {e}")),
    }
}

/// Whether one of `fields` of a userinfo answer names `user`.
fn identifies(info: &serde_json::Value, fields: &[String], user: &str) -> bool {
    fields.iter().any(|field| {
        let value = match info.get(field) {
            Some(serde_json::Value::String(s)) => s.clone(),
            // GitHub's numeric `id`.
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => return false,
        };
        if field == "email" {
            let unverified = info.get("email_verified") == Some(&serde_json::Value::Bool(false));
            !unverified && value.eq_ignore_ascii_case(user)
        } else {
            !value.is_empty() && value == user
        }
    })
}

/// The client the flow talks to providers with: no redirects, bounded time.
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    crate::http_client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// An answer too large, or a transport failure.
#[derive(Debug)]
pub(crate) struct SendError(String);

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SendError {}

/// `oauth2`'s HTTP client: [`send`] over a shared reqwest client.
struct Http<'h>(&'h reqwest::Client);

impl<'c> oauth2::AsyncHttpClient<'c> for Http<'_> {
    type Error = SendError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<oauth2::HttpResponse, SendError>> + Send + 'c>,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(send(self.0, request))
    }
}

/// `oauth2`'s request over reqwest, the answer read up to [`MAX_ANSWER`].
async fn send(
    http: &reqwest::Client,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, SendError> {
    let request = reqwest::Request::try_from(request).map_err(|e| SendError(e.to_string()))?;
    let mut answer = http
        .execute(request)
        .await
        .map_err(|e| SendError(crate::http_client::cause(e)))?;
    let mut response = http::Response::builder().status(answer.status());
    if let Some(headers) = response.headers_mut() {
        *headers = answer.headers().clone();
    }
    let mut body = Vec::new();
    while let Some(chunk) = answer
        .chunk()
        .await
        .map_err(|e| SendError(crate::http_client::cause(e)))?
    {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(SendError("the answer is too large".into()));
        }
        body.extend_from_slice(&chunk);
    }
    response.body(body).map_err(|e| SendError(e.to_string()))
}

async fn get_json(http: &reqwest::Client, url: &str) -> Result<serde_json::Value, Failed> {
    let request = http::Request::get(url)
        .header("accept", "application/json")
        .body(Vec::new())
        .map_err(|e| Failed::Unavailable(e.to_string()))?;
    let answer = send(http, request)
        .await
        .map_err(|e| Failed::Unavailable(format!("discovery: {e}")))?;
    if !answer.status().is_success() {
        return Err(Failed::Unavailable(format!(
            "discovery answered {}",
            answer.status()
        )));
    }
    serde_json::from_slice(answer.body())
        .map_err(|_| Failed::Unavailable("discovery: not JSON".into()))
}

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;
