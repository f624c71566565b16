//! Building the app: the parts the configuration names, each built once, wired around one
//! [`Invoker`]; what cannot be built is a [`StartError`] naming the part.

use super::durable::{Durable, durable, serve_work};
use super::protocol::{self, Assembly, Configured, Entry, Protocol};
use super::{App, Parts, StartError};
use crate::auth::Authenticator;
use crate::config::Config;
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::idempotency::IdempotencyStore;
use oxp_lambda_core::invoke::Invoker;
use oxp_lambda_core::registry::{Registry, RegistryError};
use oxp_lambda_core::secrets::SecretSource;
use oxp_lambda_core::tokens::UserTokens;
use std::fmt;
use std::sync::Arc;

/// The authenticator `config` names (its keys among `secrets`); a local server without
/// authentication says so once at start.
fn authenticator(
    config: &Config,
    secrets: &oxp_lambda_core::secrets::Secrets,
) -> Result<Arc<Authenticator>, StartError> {
    let auth = Authenticator::from_config(&config.auth, &config.required_scopes, secrets.clone())
        .map_err(StartError::Auth)?;
    if let crate::config::AuthConfig::None { explicit } = config.auth
        && !config.runtime.lambda
    {
        let setting = if explicit {
            "OXP_AUTH=none"
        } else {
            "OXP_AUTH unset, the default on loopback"
        };
        tracing::warn!("authentication is off ({setting}): any local process can call the tools");
    }
    Ok(Arc::new(auth))
}

/// Builds an [`App`]: the tools, the configuration, the protocols, and what the embedding
/// program holds itself.
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
    state_store: Option<Arc<dyn StateStore>>,
    protocols: Vec<Box<dyn Entry>>,
    pub(super) aws: crate::aws::SharedSdk,
    /// The schemas compiling on a thread of their own, started by [`AppBuilder::compiling`].
    compiling: Option<Compiling>,
}

/// Every schema of the registry compiling on a thread of its own (`compile_apart`).
type Compiling = std::thread::JoinHandle<Result<(), RegistryError>>;

impl fmt::Debug for AppBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppBuilder")
            .field("registry", &self.registry)
            .field("config", &self.config)
            .field(
                "protocols",
                &self.protocols.iter().map(|p| p.name()).collect::<Vec<_>>(),
            )
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
            state_store: None,
            protocols: super::protocols::all(),
            aws: crate::aws::SharedSdk::default(),
            compiling: None,
        }
    }

    /// Starts compiling the schemas, where this start compiles them ([`AppBuilder::build`]), on
    /// a thread of their own: `run` calls it once the configuration is read, so that they
    /// compile while the logging and the app are set up.
    pub(crate) fn compiling(mut self) -> Self {
        self.start_compiling();
        self
    }

    fn start_compiling(&mut self) {
        if self.compiling.is_none() && self.compiles_at_start() {
            self.compiling = Some(compile_apart(&self.registry));
        }
    }

    /// Every schema is compiled at this start, an invalid one failing it, except in a function
    /// started for a call that is waiting: there each is compiled at its first call, after the
    /// first poll (`RegistryBuilder::build`).
    fn compiles_at_start(&self) -> bool {
        !(self.config.runtime.lambda && self.config.runtime.on_demand)
    }

    /// The configuration (default: [`Config::default`], not the environment; see
    /// [`Config::from_env`]). The protocols read their own settings from its variables.
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

    /// Where state that outlives a call is kept, instead of the configured store
    /// (`OXP_STATE`): subscriptions, questions waiting for the user, cancellation marks, the
    /// local queue's acknowledged jobs.
    pub fn state_store(mut self, store: Arc<dyn StateStore>) -> Self {
        self.state_store = Some(store);
        self
    }

    /// The configuration it builds with.
    pub(crate) fn configured(&self) -> &Config {
        &self.config
    }

    /// Serves `protocol` beside the built-in ones (those the Cargo features compile in): a
    /// protocol of your own, built over the same call path, authentication and plumbing. A
    /// protocol of a type the app already serves replaces it (its settings edits too).
    pub fn protocol<P: Protocol>(mut self, protocol: P) -> Self {
        match self.find::<P>() {
            Some(served) => *served = Configured::new(protocol),
            None => self.protocols.push(Box::new(Configured::new(protocol))),
        }
        self
    }

    /// Edits protocol `P`'s settings once they are read from the configuration's variables
    /// (`P` is added with its default value if the app does not serve it yet):
    ///
    /// ```
    /// # #[cfg(feature = "mcp")]
    /// # fn example(registry: oxp_lambda::Registry) -> oxp_lambda::AppBuilder {
    /// oxp_lambda::App::builder(registry)
    ///     .configure::<oxp_lambda::protocols::Mcp>(|mcp| mcp.pins = vec!["Calculator.Add@1.0.0".into()])
    /// # }
    /// ```
    pub fn configure<P: Protocol + Default>(
        mut self,
        edit: impl FnOnce(&mut P::Settings) + Send + 'static,
    ) -> Self {
        if self.find::<P>().is_none() {
            self.protocols.push(Box::new(Configured::new(P::default())));
        }
        if let Some(served) = self.find::<P>() {
            served.edits.push(Box::new(edit));
        }
        self
    }

    fn find<P: Protocol>(&mut self) -> Option<&mut Configured<P>> {
        self.protocols
            .iter_mut()
            .find_map(|p| p.as_any_mut().downcast_mut::<Configured<P>>())
    }

    /// `oxp-lambda schema --<name>`: protocol `name`'s export of the tools; when no protocol
    /// of that name exports one, the names of those that do.
    pub(crate) fn schema(
        &mut self,
        name: &str,
    ) -> Result<Result<serde_json::Value, String>, Vec<&'static str>> {
        let (config, registry) = (&self.config, &self.registry);
        let mut named = self.protocols.iter_mut().filter(|p| p.name() == name);
        if let Some(schema) = named.find_map(|p| p.schema(config, registry)) {
            return Ok(schema);
        }
        // Only when refused: each export is built to learn that it exists.
        let exporting = self.protocols.iter_mut();
        Err(exporting
            .filter_map(|p| p.schema(config, registry).map(|_| p.name()))
            .collect())
    }

    /// Builds every part the configuration names. Nothing is fetched yet: secrets, keys and
    /// AWS clients are first used by the first request that needs them.
    pub async fn build(mut self) -> Result<App, StartError> {
        // The schemas compile on a thread of their own while the rest is built (jsonschema's
        // first schema alone takes about a millisecond), joined before anything runs.
        self.start_compiling();
        let compiling = self.compiling.take();
        let config = self.config;
        // One TLS provider for the process, tools' own HTTP clients included (src/http_client.rs).
        crate::http_client::install_default_provider();
        // Every protocol's settings are read first: a bad variable fails before anything is
        // built.
        for protocol in &mut self.protocols {
            protocol.settle(&config)?;
        }
        // Nothing AWS is loaded here: the first request that needs AWS loads the configuration.
        let sdk = self.aws.in_lambda(config.runtime.lambda);
        let secrets =
            crate::secrets::build(&config.secrets, &self.secrets, self.secret_source, &sdk)
                .map_err(StartError::Secrets)?;
        super::guards::signing_key_kept_from_tools(&config.auth, &self.registry)?;
        super::guards::oauth_secrets_kept_from_tools(&config.oauth, &self.registry)?;
        let auth = authenticator(&config, &secrets)?;
        let Durable {
            state,
            idempotency,
            runner,
            questions,
            shared,
            recovering,
        } = durable(&config, &sdk, self.state_store, self.idempotency_store).await?;
        let subscriptions =
            crate::subscriptions::build(state.as_ref(), runner.as_ref(), &config.env())
                .map_err(StartError::Config)?;
        let broker = crate::oauth::build(
            &config.oauth,
            (config.host, config.port),
            config.runtime.lambda,
            &secrets,
            &sdk,
        )
        .map_err(StartError::OAuth)?;
        let user_tokens = broker.clone().map(|b| b as Arc<dyn UserTokens>);
        let invoker = invoker(self.registry, secrets, idempotency, &config, &user_tokens);
        let assembly = Assembly {
            invoker: &invoker,
            auth: &auth,
            config: &config,
            aws: &sdk,
            user_tokens: user_tokens.as_ref(),
            state: state.as_ref(),
            questions: questions.as_ref(),
            subscriptions: subscriptions.as_ref(),
            runner: runner.as_ref(),
            recovering,
        };
        let worker = runner.as_ref().and_then(|r| serve_work(r, &config));
        let mut built =
            protocol::build_all(self.protocols, &assembly, worker.into_iter().collect())?;
        compiling
            .map_or(Ok(()), joined)
            .map_err(StartError::Tools)?;
        let (let_go, drain) = super::durable::start(runner.as_ref(), &config, shared || recovering);
        built.drains.extend(let_go);
        super::guards::misspelled_variables(&config);
        let shapes = crate::server::Shapes::new(built.shapes, config.base_path.as_deref());
        let http = super::http_side::assemble(built.routes, &shapes, broker, &auth, &config);
        Ok(App {
            service: http,
            parts: Arc::new(Parts {
                browser: crate::transport::local::BrowserRules {
                    shapes,
                    ..crate::transport::local::BrowserRules::from_config(&config)
                },
                config,
                roles: built.roles,
                drains: built.drains,
                drain,
            }),
        })
    }
}

/// Compiles every schema of `registry` on a thread of its own. Each tool's compiled schemas are
/// its own cells, which a call meeting one not yet compiled fills itself, so nothing waits for
/// the thread but the start that joins it.
fn compile_apart(registry: &Registry) -> Compiling {
    let tools = registry.tools().to_vec();
    std::thread::spawn(move || tools.iter().try_for_each(|tool| tool.compile_schemas()))
}

/// What the compiling thread found: an invalid schema fails the start (a panic goes on here).
fn joined(compiling: Compiling) -> Result<(), RegistryError> {
    compiling
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// The one invoker every protocol's calls go through, over the registry and the stores.
fn invoker(
    registry: Registry,
    secrets: oxp_lambda_core::secrets::Secrets,
    idempotency: Option<oxp_lambda_core::idempotency::Idempotency>,
    config: &Config,
    user_tokens: &Option<Arc<dyn UserTokens>>,
) -> Arc<Invoker> {
    let mut invoker = Invoker::new(
        Arc::new(registry),
        secrets,
        idempotency,
        config.max_concurrent_calls,
        config.tool_timeout,
    )
    .with_calls_per_caller(config.max_concurrent_calls_per_caller);
    if let Some(limit) = config.rate_limit {
        invoker = invoker.with_rate_limit(limit);
    }
    if let Some(tokens) = user_tokens {
        invoker = invoker.with_user_tokens(tokens.clone());
    }
    Arc::new(invoker)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn with_an_invalid_schema() -> Registry {
        let schema = json!({"type": "object", "properties": {"x": {"type": 5}}});
        let bad = oxp_lambda_core::Tool::builder("Bad.Tool", "1.0.0").raw_handler(
            schema,
            None,
            |_, _| async { Ok(Value::Null) },
        );
        let registry = Registry::builder().tool(bad).compile_schemas_now(false);
        registry.build().expect("nothing compiled yet")
    }

    /// Started once the configuration is read (as `run` starts them), the schemas compile on a
    /// thread of their own, and an invalid one still fails the start that joins them; a
    /// function started for a waiting call starts none.
    #[tokio::test]
    async fn schemas_compiling_apart_still_fail_the_start_when_one_is_invalid() {
        let local = App::builder(with_an_invalid_schema()).compiling();
        assert!(local.compiling.is_some(), "a local start compiles apart");
        let refused = local.build().await.expect_err("an invalid schema fails it");
        let refused = refused.to_string();
        assert!(
            refused.contains("'Bad.Tool@1.0.0' has an invalid input schema"),
            "{refused}"
        );
        let vars = [
            ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand"),
            ("OXP_AUTH", "none"),
        ];
        let on_demand = Config::from_vars(true, vars).unwrap();
        let function = App::builder(with_an_invalid_schema()).config(on_demand);
        assert!(function.compiling().compiling.is_none());
    }
}
