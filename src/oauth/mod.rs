//! Users' authorization with third-party OAuth providers, run by the server (feature `oauth`):
//! the [`Broker`] is the core's [`UserTokens`](oxp_lambda_core::tokens::UserTokens) (the
//! invoker asks it for a token a tool needs and the caller did not send; `held.rs`), runs the
//! authorization code flow with PKCE through [`routes`], keeps each user's tokens sealed in a
//! [`TokenStore`] (memory locally, DynamoDB in Lambda) and refreshes them before they expire.
//! docs/authorization.md has the flow and the trust model.
//!
//! What travels through a browser is sealed (AES-256-GCM, [`seal`]): the link a user opens
//! (provider, user, scopes, expiry) and the `state` the provider hands back (the same, plus a
//! one-time nonce and the PKCE verifier). Nothing in a URL names the user in clear, and a
//! forged, altered, expired or replayed state is refused before anything is stored.

pub mod config;
mod flow;
mod held;
pub(crate) mod memory;
pub(crate) mod routes;
pub(crate) mod seal;
pub(crate) mod vault;

use config::OAuthConfig;
use flow::Provider;
use oxp_lambda_core::idempotency::lower_hex;
use oxp_lambda_core::secrets::Secrets;
use oxp_lambda_core::tokens::{Authorized, Challenge, TokenError, TokenStore};
use oxp_lambda_core::tool::Secret;
use seal::Keys;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::OnceCell;

/// The secret id of the key that seals flow state and the vault's records.
pub const KEY_SECRET_ID: &str = "OAUTH_KEY";

/// The server's side of users' authorizations.
#[derive(Debug)]
pub(crate) struct Broker {
    providers: Vec<Provider>,
    public_url: String,
    link_ttl: Duration,
    store: Arc<dyn TokenStore>,
    secrets: Secrets,
    /// Whether a missing `OAUTH_KEY` is an error (Lambda: environments must share it) rather
    /// than a reason to make one for this process.
    key_required: bool,
    keys: OnceCell<Keys>,
    http: OnceCell<reqwest::Client>,
    /// Told of each authorization completed (or refused), before the browser is answered.
    hooks: Hooks,
    /// Starts per link (a holder of one link cannot run rounds of flows at will).
    starts: governor::DefaultKeyedRateLimiter<String>,
}

/// What is told of each authorization completed.
#[derive(Default)]
struct Hooks(std::sync::RwLock<Vec<oxp_lambda_core::tokens::Completed>>);

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hooks")
    }
}

/// Flows one link may start per minute.
const STARTS_PER_MINUTE: u32 = 10;
/// Links whose starts are counted at most before the idle ones are forgotten.
const COUNTED_LINKS: usize = 10_000;

/// What a link a user opens carries (sealed).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Link {
    pub(crate) p: String,
    pub(crate) u: String,
    pub(crate) s: Vec<String>,
    /// Expiry, Unix seconds.
    pub(crate) e: u64,
    /// What makes each link one of its own, so that it completes once (its spent mark is its
    /// own): two links for one user, provider and scopes made within a second were one link,
    /// and the second, asked for after the first completed, could never complete. (A link
    /// made before it had one keeps its spent mark's key: none is written for it.)
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) n: String,
}

/// `text` as the vault's keys hold it: the first 160 bits of its SHA-256, in hex.
fn hashed(text: &str) -> String {
    lower_hex(&Sha256::digest(text.as_bytes())[..20])
}

pub(crate) fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Broker {
    /// A broker of `config`'s providers over `store`, reading client secrets and the sealing
    /// key from `secrets`; `public_url` is where browsers reach this server.
    pub(crate) fn new(
        config: &OAuthConfig,
        public_url: String,
        store: Arc<dyn TokenStore>,
        secrets: Secrets,
        key_required: bool,
    ) -> Self {
        Self {
            providers: config
                .providers
                .iter()
                .cloned()
                .map(Provider::new)
                .collect(),
            public_url,
            link_ttl: config.link_ttl,
            store,
            secrets,
            key_required,
            keys: OnceCell::new(),
            http: OnceCell::new(),
            hooks: Hooks::default(),
            starts: governor::RateLimiter::keyed(governor::Quota::per_minute(
                std::num::NonZeroU32::new(STARTS_PER_MINUTE).expect("not zero"),
            )),
        }
    }

    /// Tells the hooks that `provider`'s authorization of `user` completed (`granted`) or not.
    pub(crate) async fn completed(&self, provider: &str, user: &str, granted: bool) {
        let hooks = self
            .hooks
            .0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for hook in hooks {
            hook(Authorized {
                provider: provider.to_owned(),
                user: user.to_owned(),
                granted,
            })
            .await;
        }
    }

    /// Whether `link` may start another flow now (at most [`STARTS_PER_MINUTE`]).
    pub(crate) fn may_start(&self, link: &Link) -> bool {
        if self.starts.len() > COUNTED_LINKS {
            self.starts.retain_recent();
        }
        self.starts.check_key(&Self::link_key(link)).is_ok()
    }

    /// The key a link is known by once its flow completed (spent once, in the vault).
    fn link_key(link: &Link) -> String {
        let sealed = serde_json::to_string(link).expect("links serialize");
        format!("link#{}#{}", link.p, hashed(&sealed))
    }

    /// Where the provider sends the user back.
    pub(crate) fn redirect_url(&self, provider: &str) -> String {
        format!("{}/oauth/{provider}/callback", self.public_url)
    }

    fn provider(&self, id: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.config.id == id)
    }

    async fn keys(&self) -> Result<&Keys, TokenError> {
        self.keys
            .get_or_try_init(|| async {
                if !self.secrets.holds(KEY_SECRET_ID) && !self.key_required {
                    return Ok(Keys::random());
                }
                let key = self.secrets.get(KEY_SECRET_ID).await.map_err(|e| {
                    TokenError(format!("the sealing key: {}", e.developer_message()))
                })?;
                Ok(Keys::derive(key.expose().as_bytes()))
            })
            .await
    }

    async fn http(&self) -> Result<&reqwest::Client, TokenError> {
        self.http
            .get_or_try_init(|| async { flow::http_client().map_err(TokenError) })
            .await
    }

    async fn client_secret(&self, provider: &Provider) -> Result<Secret, TokenError> {
        let id = &provider.config.client_secret_id;
        self.secrets
            .get(id)
            .await
            .map_err(|e| TokenError(format!("the client secret: {}", e.developer_message())))
    }

    /// The sealed link for `user` to authorize `provider` with `scopes`, valid for the link TTL.
    async fn link(
        &self,
        provider: &str,
        user: &str,
        scopes: &[String],
    ) -> Result<String, TokenError> {
        let link = Link {
            p: provider.to_owned(),
            u: user.to_owned(),
            s: scopes.to_vec(),
            e: unix(SystemTime::now() + self.link_ttl),
            n: uuid::Uuid::new_v4().simple().to_string(),
        };
        let plain = serde_json::to_vec(&link).map_err(|e| TokenError(e.to_string()))?;
        Ok(self.keys().await?.seal_text("link", &plain))
    }

    /// The challenge for `user` to authorize `provider` with `scopes`.
    async fn challenge(
        &self,
        provider: &str,
        user: &str,
        scopes: &[String],
    ) -> Result<Challenge, TokenError> {
        let t = self.link(provider, user, scopes).await?;
        let base = format!("{}/oauth/{provider}", self.public_url);
        Ok(Challenge {
            provider: provider.to_owned(),
            url: format!("{base}/start?t={t}"),
            check_url: format!("{base}/check?t={t}"),
        })
    }

    /// The link `t`, if this server sealed it for `provider` and it has not expired.
    pub(crate) async fn open_link(&self, provider: &str, t: &str) -> Option<Link> {
        let keys = self.keys().await.ok()?;
        let link: Link = serde_json::from_slice(&keys.open_text("link", t)?).ok()?;
        (link.p == provider && link.e > unix(SystemTime::now())).then_some(link)
    }
}

/// The broker `config` describes, when it names a provider: its vault is the DynamoDB table
/// of `OXP_OAUTH_TABLE` (feature `dynamodb`, through the state store's implementation), else
/// memory.
pub(crate) fn build(
    oauth: &OAuthConfig,
    (host, port): (std::net::IpAddr, u16),
    lambda: bool,
    secrets: &Secrets,
    sdk: &crate::aws::SharedSdk,
) -> Result<Option<Arc<Broker>>, String> {
    if oauth.providers.is_empty() {
        return Ok(None);
    }
    let store: Arc<dyn TokenStore> = match &oauth.table {
        None => Arc::new(memory::MemoryVault::default()),
        Some(table) => vault::in_table(sdk, table.clone())?,
    };
    let public_url = oauth.public_url.clone().unwrap_or_else(|| {
        let host = match host {
            h if h.is_unspecified() && h.is_ipv4() => "127.0.0.1".to_owned(),
            h if h.is_unspecified() => "[::1]".to_owned(),
            std::net::IpAddr::V6(h) => format!("[{h}]"),
            h => h.to_string(),
        };
        format!("http://{host}:{port}")
    });
    Ok(Some(Arc::new(Broker::new(
        oauth,
        public_url,
        store,
        secrets.clone(),
        lambda || oauth.table.is_some(),
    ))))
}
