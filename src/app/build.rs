//! Building the app: the parts the configuration names, each built once, wired around one
//! [`Invoker`]; what cannot be built is a [`StartError`] naming the part.

use super::protocol::{self, Protocol};
use super::{App, Parts};
use crate::auth::Authenticator;
use crate::config::{Config, in_lambda};
use crate::server;
use oxp_lambda_core::idempotency::{Idempotency, IdempotencyStore};
use oxp_lambda_core::invoke::Invoker;
use oxp_lambda_core::registry::Registry;
use oxp_lambda_core::secrets::SecretSource;
use std::fmt;
use std::sync::Arc;

/// Why the app could not start: the part at fault and why (configuration errors name their
/// variable).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartError {
    /// An `OXP_*` variable has an invalid value.
    Config(crate::config::ConfigError),
    /// The secret source could not be set up.
    Secrets(String),
    /// Authentication could not be set up.
    Auth(String),
    /// The idempotency store could not be set up.
    Idempotency(String),
    /// The async adapter could not be set up.
    Rap(String),
    /// The MCP adapter could not be set up.
    Mcp(String),
    /// The Bedrock Agents action group role could not be set up.
    BedrockAgent(String),
    /// A protocol given to [`AppBuilder::protocol`] could not be set up.
    Protocol(String),
    /// The users' authorization (OAuth providers, the token vault) could not be set up.
    OAuth(String),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "{e}"),
            Self::Secrets(why) => write!(f, "invalid configuration: secrets: {why}"),
            Self::Auth(why) => write!(f, "invalid configuration: authentication: {why}"),
            Self::Idempotency(why) => write!(f, "invalid configuration: idempotency: {why}"),
            Self::Rap(why) => write!(f, "invalid configuration: async invocation: {why}"),
            Self::Mcp(why) => write!(f, "invalid configuration: MCP: {why}"),
            Self::BedrockAgent(why) => write!(f, "invalid configuration: Bedrock agent: {why}"),
            Self::Protocol(why) => write!(f, "invalid configuration: protocol: {why}"),
            Self::OAuth(why) => write!(f, "invalid configuration: OAuth: {why}"),
        }
    }
}

impl std::error::Error for StartError {}

/// Builds an [`App`]: the tools, the configuration, and what the embedding program holds
/// itself.
///
/// ```
/// # async fn example() -> Result<(), oxp_lambda::StartError> {
/// use oxp_lambda::{App, Config, Registry};
///
/// let app = App::builder(Registry::builder().build().unwrap())
///     .config(Config::default())
///     .secret("TWILIO_API_KEY", "from-my-vault")
///     .build()
///     .await?;
/// # let _ = app;
/// # Ok(()) }
/// ```
#[must_use]
pub struct AppBuilder {
    registry: Registry,
    config: Config,
    secrets: Vec<(String, String)>,
    secret_source: Option<Arc<dyn SecretSource>>,
    idempotency_store: Option<Arc<dyn IdempotencyStore>>,
    protocols: Vec<Box<dyn Protocol>>,
    #[cfg(feature = "aws")]
    aws: Option<aws_config::SdkConfig>,
}

impl fmt::Debug for AppBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppBuilder")
            .field("registry", &self.registry)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AppBuilder {
    pub(super) fn new(registry: Registry) -> Self {
        Self {
            registry,
            config: Config::default(),
            secrets: Vec::new(),
            secret_source: None,
            idempotency_store: None,
            protocols: super::protocols::all(),
            #[cfg(feature = "aws")]
            aws: None,
        }
    }

    /// The configuration (default: [`Config::default`], not the environment; see
    /// [`Config::from_env`]).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// A server-held secret the program holds itself. It answers before the secret source,
    /// whichever it is (local, AWS Secrets Manager, or [`AppBuilder::secret_source`]).
    pub fn secret(mut self, id: impl Into<String>, value: impl Into<String>) -> Self {
        self.secrets.push((id.into(), value.into()));
        self
    }

    /// Where server-held secrets come from, instead of the configured source
    /// (`OXP_SECRETS_SOURCE`): for example Parameter Store or Vault. Its values are cached for
    /// `OXP_SECRETS_TTL_SECS` like the built-in sources'.
    pub fn secret_source(mut self, source: Arc<dyn SecretSource>) -> Self {
        self.secret_source = Some(source);
        self
    }

    /// Where idempotent outcomes are kept, instead of the configured store
    /// (`OXP_IDEMPOTENCY`; kept for `OXP_IDEMPOTENCY_TTL_SECS`). Used even when the
    /// configuration turns idempotency off.
    pub fn idempotency_store(mut self, store: Arc<dyn IdempotencyStore>) -> Self {
        self.idempotency_store = Some(store);
        self
    }

    /// The configuration it builds with.
    pub(crate) fn configured(&self) -> &Config {
        &self.config
    }

    /// Serves `protocol` beside the built-in ones (those the Cargo features compile in): a
    /// protocol of your own, built over the same call path, authentication and plumbing.
    pub fn protocol(mut self, protocol: impl Protocol + 'static) -> Self {
        self.protocols.push(Box::new(protocol));
        self
    }

    /// The AWS configuration for the parts that talk to AWS, instead of the one loaded from
    /// the environment (for example a local emulator's endpoint).
    #[cfg(feature = "aws")]
    pub fn aws_config(mut self, sdk: aws_config::SdkConfig) -> Self {
        self.aws = Some(sdk);
        self
    }

    /// Builds every part the configuration names. Nothing is fetched yet: secrets, keys and
    /// AWS clients are first used by the first request that needs them.
    pub async fn build(self) -> Result<App, StartError> {
        let config = self.config;
        // Nothing AWS is loaded here: the first request that needs AWS loads the configuration.
        #[cfg(feature = "aws")]
        let sdk = crate::aws::SharedSdk::new(self.aws);
        let secrets = crate::secrets::build(
            &config.secrets,
            &self.secrets,
            self.secret_source,
            #[cfg(feature = "aws")]
            &sdk,
        )
        .map_err(StartError::Secrets)?;
        signing_key_kept_from_tools(&config.auth, &self.registry)?;
        #[cfg(feature = "oauth")]
        oauth_secrets_kept_from_tools(&config.oauth, &self.registry)?;
        let auth = Arc::new(
            Authenticator::from_config(&config.auth, secrets.clone()).map_err(StartError::Auth)?,
        );
        if let crate::config::AuthConfig::None { explicit } = config.auth
            && !in_lambda()
        {
            tracing::warn!(
                explicit,
                "authentication is off (OXP_AUTH=none): any local process can call the tools"
            );
        }
        let idempotency = match self.idempotency_store {
            Some(store) => Some(Idempotency {
                store,
                keep: config.idempotency.ttl,
            }),
            None => crate::idempotency::build(
                &config.idempotency,
                #[cfg(feature = "aws")]
                &sdk,
            )
            .map_err(StartError::Idempotency)?,
        };
        #[cfg(feature = "oauth")]
        let broker = crate::oauth::build(
            &config.oauth,
            (config.host, config.port),
            in_lambda(),
            &secrets,
            #[cfg(feature = "aws")]
            &sdk,
        )
        .map_err(StartError::OAuth)?;
        #[cfg_attr(not(feature = "oauth"), allow(unused_mut))]
        let mut invoker = Invoker::new(
            Arc::new(self.registry),
            secrets,
            idempotency,
            config.max_concurrent_calls,
            config.tool_timeout,
        );
        #[cfg(feature = "oauth")]
        if let Some(broker) = &broker {
            invoker = invoker.with_user_tokens(broker.clone());
        }
        let invoker = Arc::new(invoker);
        // The parts every protocol may share, by type: the AWS configuration, and the users'
        // authorizations for the routes and the async adapter's waiting invocations.
        #[cfg_attr(not(any(feature = "aws", feature = "oauth")), allow(unused_mut))]
        let mut shared = http::Extensions::new();
        #[cfg(feature = "aws")]
        shared.insert(sdk);
        #[cfg(feature = "oauth")]
        if let Some(broker) = broker {
            shared.insert(broker);
        }
        let assembly = protocol::Assembly {
            invoker: &invoker,
            auth: &auth,
            config: &config,
            shared: &shared,
        };
        let built = protocol::build_all(&self.protocols, &assembly)?;
        let http = server::assemble(
            built.routes,
            config.max_body_bytes,
            config.base_path.as_deref(),
        );
        Ok(App {
            #[cfg(feature = "lambda")]
            service: crate::transport::lambda::http::LambdaHttp {
                app: http,
                margin: config.deadline_margin,
            },
            #[cfg(not(feature = "lambda"))]
            service: http,
            parts: Arc::new(Parts {
                browser: crate::transport::local::BrowserRules::from_config(&config),
                config,
                lambda_role: built.lambda_role,
                drains: built.drains,
                state: built.state,
            }),
        })
    }
}

/// The JWT signing key is the server's, never a tool's: a tool declaring a secret of the same
/// id would be handed the key that mints every caller's identity.
fn signing_key_kept_from_tools(
    auth: &crate::config::AuthConfig,
    registry: &Registry,
) -> Result<(), StartError> {
    let crate::config::AuthConfig::Jwt(jwt) = auth else {
        return Ok(());
    };
    let crate::config::JwtKeys::Hs256 { secret_id } = &jwt.keys else {
        return Ok(());
    };
    // The local source reads an id from `OXP_SECRET_<ID>` with its case and punctuation folded,
    // so `jwt-key` names the same value as `JWT_KEY` there: compared as the local source sees
    // them.
    let key = crate::secrets::local::env_var_for(secret_id);
    match registry.tools().iter().find(|t| {
        t.requirements
            .secrets
            .iter()
            .any(|id| id == secret_id || crate::secrets::local::env_var_for(id) == key)
    }) {
        Some(tool) => Err(StartError::Auth(format!(
            "tool {} requires secret '{secret_id}', the JWT signing key (OXP_JWT_HS256_SECRET_ID): tools never get it",
            tool.id
        ))),
        None => Ok(()),
    }
}

/// The sealing key and the providers' client secrets are the server's: a tool declaring one
/// would be handed what opens every user's tokens (compared as the local source folds ids).
#[cfg(feature = "oauth")]
fn oauth_secrets_kept_from_tools(
    oauth: &crate::config::OAuthConfig,
    registry: &Registry,
) -> Result<(), StartError> {
    if oauth.providers.is_empty() {
        return Ok(());
    }
    let fold = crate::secrets::local::env_var_for;
    let kept: Vec<String> = oauth
        .providers
        .iter()
        .map(|p| p.client_secret_id.clone())
        .chain([crate::oauth::KEY_SECRET_ID.to_owned()])
        .collect();
    for tool in registry.tools() {
        if let Some(id) = tool
            .requirements
            .secrets
            .iter()
            .find(|id| kept.iter().any(|k| fold(k) == fold(id)))
        {
            return Err(StartError::OAuth(format!(
                "tool {} requires secret '{id}', which the OAuth flow keeps (OAUTH_KEY, client secrets): tools never get it",
                tool.id
            )));
        }
    }
    Ok(())
}
