//! Protocols plug in: each is a [`Protocol`] value the app takes. It owns everything about
//! itself: its settings (read from the same `OXP_*` variables as the server's), its HTTP routes,
//! the Lambda role it serves, its schema export and its start errors. The assembly iterates
//! over the values and knows none of them; Cargo features only decide which values exist
//! (`super::protocols::all`), and [`AppBuilder::protocol`](super::AppBuilder::protocol) adds
//! one written outside the crate.

use super::StartError;
use crate::auth::Authenticator;
use crate::config::{Config, ConfigError, Env};
use crate::server::{LambdaRole, RoleKind, Shape};
use axum::Router;
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::invoke::Invoker;
use oxp_lambda_core::registry::Registry;
use oxp_lambda_core::tokens::UserTokens;
use serde_json::Value;
use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use crate::server::BoxFuture;

/// A protocol the app serves. OXP, MCP, RAP, the AgentCore target and Bedrock Agents are values
/// of this trait, and [`AppBuilder::protocol`](super::AppBuilder::protocol) takes one of your own.
///
/// Its [`Settings`](Protocol::Settings) are read once at start from the variables the server's
/// configuration was read from ([`Protocol::settings`]); [`Protocol::build`] turns them and an
/// [`Assembly`] (the call path, authentication, the server's configuration) into a
/// [`Contribution`]: routes, a Lambda role, work to finish at shutdown. Whatever fails is a
/// [`StartError`] naming the protocol.
pub trait Protocol: Send + Sync + 'static {
    /// What the protocol reads from `OXP_*` variables.
    type Settings: Clone + fmt::Debug + Send + Sync + 'static;

    /// Its name, in start errors (`invalid configuration: <name>: ...`) and
    /// `oxp-lambda schema --<name>`.
    fn name(&self) -> &'static str;

    /// Reads its settings from `env` (the server's own settings are in `server`). An invalid
    /// value names its variable.
    fn settings(&self, env: &Env<'_>, server: &Config) -> Result<Self::Settings, ConfigError>;

    /// Builds what the protocol adds over `assembly`; an error says what in the configuration
    /// is wrong.
    fn build(
        &self,
        settings: Self::Settings,
        assembly: &Assembly<'_>,
    ) -> Result<Contribution, String>;

    /// What `oxp-lambda schema --<name>` prints: the tools as this protocol declares them to
    /// the service that calls it (`None`: the protocol exports nothing).
    fn schema(
        &self,
        settings: &Self::Settings,
        registry: &Registry,
    ) -> Option<Result<Value, String>> {
        let _ = (settings, registry);
        None
    }
}

/// What a protocol is given to build on.
pub struct Assembly<'a> {
    /// The one call path.
    pub(crate) invoker: &'a Arc<Invoker>,
    /// How callers authenticate (HTTP protocols guard their routes with it).
    pub(crate) auth: &'a Arc<Authenticator>,
    /// The server's configuration.
    pub(crate) config: &'a Config,
    /// The AWS configuration every AWS part shares, loaded by the first that needs it.
    pub(crate) aws: &'a crate::aws::SharedSdk,
    /// The users' tokens the server holds, when it runs providers' OAuth flows.
    pub(crate) user_tokens: Option<&'a Arc<dyn UserTokens>>,
    /// Where state that outlives a call lives (`OXP_STATE`), unless it is off.
    pub(crate) state: Option<&'a Arc<dyn StateStore>>,
    /// The subscriptions (over the state store), for the protocol that carries them and the
    /// event sources that feed them.
    pub(crate) subscriptions: Option<&'a Arc<crate::subscriptions::Subscriptions>>,
    /// The one question service (over the state store): every question a call asks and waits
    /// on, whichever protocol carries it.
    pub(crate) questions: Option<&'a Arc<crate::work::Questions>>,
    /// The runner of acknowledged work (over the state store), where a protocol registers the
    /// kinds of work it runs.
    pub(crate) runner: Option<&'a Arc<crate::work::Runner>>,
    /// Whether durable state of an earlier run of this server exists (the embedded store's
    /// file was there at start).
    pub(crate) recovering: bool,
}

impl Assembly<'_> {
    /// The one call path: build a [`Call`](oxp_lambda_core::invoke::Call) (with the request's
    /// [`CallContext`](crate::protocol::CallContext)), invoke it, format the
    /// [`Outcome`](oxp_lambda_core::invoke::Outcome) or the
    /// [`Rejection`](oxp_lambda_core::refusal::Rejection).
    pub fn invoker(&self) -> &Arc<Invoker> {
        self.invoker
    }

    /// The server's configuration.
    pub fn config(&self) -> &Config {
        self.config
    }

    /// The users' tokens the server holds (`OXP_OAUTH_PROVIDERS`), for a protocol that waits
    /// on a user's authorization.
    pub fn user_tokens(&self) -> Option<&Arc<dyn UserTokens>> {
        self.user_tokens
    }

    /// Where state that outlives a call lives (`OXP_STATE`: embedded locally, DynamoDB in
    /// Lambda), unless it is off: what a protocol keeps across requests, processes and
    /// execution environments.
    pub fn state(&self) -> Option<&Arc<dyn StateStore>> {
        self.state
    }

    /// Where an event source hands its events (`None` without durable state, or in a build
    /// without the `subscriptions` feature): every live subscription of a topic takes each once,
    /// in order, delivered by the protocol that opened it.
    pub fn events(&self) -> Option<crate::events::Events> {
        self.subscriptions.map(|s| crate::events::Events(s.clone()))
    }

    /// Whether an earlier run of this server left durable state (the embedded store's file was
    /// there at start): a protocol resumes what it acknowledged and did not finish. Never in
    /// Lambda, where a queue's redelivery does it.
    pub fn recovering(&self) -> bool {
        self.recovering
    }

    /// `router` behind the configured authentication (`OXP_AUTH`) and the scopes every token
    /// must grant (`OXP_REQUIRED_SCOPES`): an authenticated request carries its caller in its
    /// [`CallContext`](crate::protocol::CallContext); any other gets `refuse(&request, why)`,
    /// in the protocol's own shape (401 for [`Refused::Unauthenticated`](crate::protocol::Refused),
    /// 403 for a missing scope).
    pub fn authenticate<S, R>(&self, router: Router<S>, refuse: R) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
        R: Fn(&axum::extract::Request, &crate::server::Refused) -> axum::response::Response
            + Clone
            + Send
            + Sync
            + 'static,
    {
        crate::server::guard(router, self.auth, refuse)
    }
}

impl Assembly<'_> {
    /// `router` accepting a request body only as JSON: a `POST`, `PUT` or `PATCH` whose content
    /// type is not JSON gets `refuse()`. A browser sends a cross-origin request without asking
    /// first only with a form or text content type, so every route that acts on a body should
    /// take JSON alone: a web page the developer has open then cannot call a local server.
    /// (The built-in protocols put the same layer on each `POST` handler instead, which spares
    /// them the boxed route `Router::route_layer` adds to every request.)
    pub fn json_only<S: Clone + Send + Sync + 'static>(
        &self,
        router: Router<S>,
        refuse: fn() -> axum::response::Response,
    ) -> Router<S> {
        crate::server::json_only(router, refuse)
    }
}

impl fmt::Debug for Assembly<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Assembly")
            .field("config", self.config)
            .field("aws", self.aws)
            .field("user_tokens", &self.user_tokens.is_some())
            .field("state", &self.state)
            .field("subscriptions", &self.subscriptions)
            .finish_non_exhaustive()
    }
}

/// What a protocol adds to the app.
#[derive(Default)]
pub struct Contribution {
    /// HTTP routes, served under the plumbing (body limit, base path, 404).
    pub(crate) routes: Option<Router>,
    /// The Lambda roles this protocol serves (`OXP_LAMBDA_ROLE`).
    pub(crate) roles: Vec<LambdaRole>,
    /// Work to finish before the process ends (accepted async invocations).
    pub(crate) drain: Option<Arc<dyn Drain>>,
    /// The paths whose refusals by the plumbing in front of routing the protocol answers in its
    /// own shape.
    pub(crate) shapes: Vec<(&'static str, Shape)>,
}

impl Contribution {
    /// Only routes, merged with every other protocol's under the body limit, the base path and
    /// the 404. A path another protocol already serves (`/tools`, `/mcp`, `/invoke`, ...)
    /// panics when the app is built, as `axum::Router::merge` does: pick paths of your own.
    /// A build without the `http-server` feature serves no route.
    pub fn routes(routes: Router) -> Self {
        Self {
            routes: Some(routes),
            ..Self::default()
        }
    }

    /// The routes `make` builds, in a build that serves HTTP (feature `http-server`); in one
    /// that does not (a Lambda function of a direct or SQS role) `make` is never called, so
    /// what it would build (the handlers, the plumbing, the crates behind them) is code the
    /// release build's link leaves out. `make` also names the paths the routes serve (each and
    /// what lies under it) and the protocol's `Shape`: the plumbing's refusals of requests to
    /// them in front of routing (a browser's request, a body that did not arrive, no route) are
    /// answered in it, as its routes answer theirs.
    pub(crate) fn http(make: impl FnOnce() -> (Router, &'static [&'static str], Shape)) -> Self {
        let mut shapes = Vec::new();
        let routes = super::http_side::routes(|| {
            let (routes, paths, shape) = make();
            shapes.extend(paths.iter().map(|path| (*path, shape)));
            routes
        });
        Self {
            routes,
            shapes,
            ..Self::default()
        }
    }

    /// Adds a Lambda role this protocol serves (`OXP_LAMBDA_ROLE=<its name>`). A role several
    /// protocols serve with records is fed to each in turn; two direct handlers of one role
    /// are a start error.
    #[must_use]
    pub fn lambda_role(mut self, role: LambdaRole) -> Self {
        self.roles.push(role);
        self
    }

    /// Adds work to finish at shutdown (`App::drain`, the local server's graceful stop).
    #[must_use]
    pub fn drain(mut self, drain: Arc<dyn Drain>) -> Self {
        self.drain = Some(drain);
        self
    }
}

/// Work a protocol finishes at shutdown.
pub trait Drain: Send + Sync {
    /// Waits up to `timeout` for the work to finish, gives up on the rest, and returns how
    /// much was given up.
    fn drain(&self, timeout: Duration) -> BoxFuture<'_, usize>;
}

/// A protocol with its settings, as the app holds it until it is built.
pub(crate) trait Entry: Send {
    /// The protocol's name.
    fn name(&self) -> &'static str;
    /// Its settings read (once) and edited.
    fn settle(&mut self, server: &Config) -> Result<(), StartError>;
    /// Builds it over `assembly`.
    fn build(self: Box<Self>, assembly: &Assembly<'_>) -> Result<Contribution, StartError>;
    /// Its schema export.
    fn schema(&mut self, server: &Config, registry: &Registry) -> Option<Result<Value, String>>;
    /// For [`super::AppBuilder::configure`] and replacing a protocol of the same type.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// An edit of a protocol's settings, applied after they are read.
pub(crate) type Edit<S> = Box<dyn FnOnce(&mut S) + Send>;

/// A [`Protocol`] and the edits of its settings the program made.
pub(crate) struct Configured<P: Protocol> {
    pub(crate) protocol: P,
    pub(crate) edits: Vec<Edit<P::Settings>>,
    settled: Option<P::Settings>,
}

impl<P: Protocol> Configured<P> {
    pub(crate) fn new(protocol: P) -> Self {
        Self {
            protocol,
            edits: Vec::new(),
            settled: None,
        }
    }

    fn settings(&mut self, server: &Config) -> Result<&P::Settings, StartError> {
        if self.settled.is_none() {
            let env = server.env();
            let mut settings = self
                .protocol
                .settings(&env, server)
                .map_err(StartError::Config)?;
            for edit in self.edits.drain(..) {
                edit(&mut settings);
            }
            self.settled = Some(settings);
        }
        Ok(self.settled.as_ref().expect("settled above"))
    }
}

impl<P: Protocol> Entry for Configured<P> {
    fn name(&self) -> &'static str {
        self.protocol.name()
    }

    fn settle(&mut self, server: &Config) -> Result<(), StartError> {
        self.settings(server).map(drop)
    }

    fn build(mut self: Box<Self>, assembly: &Assembly<'_>) -> Result<Contribution, StartError> {
        let settings = self.settings(assembly.config)?.clone();
        self.protocol
            .build(settings, assembly)
            .map_err(|reason| StartError::Protocol {
                protocol: self.protocol.name(),
                reason,
            })
    }

    fn schema(&mut self, server: &Config, registry: &Registry) -> Option<Result<Value, String>> {
        let settings = match self.settings(server) {
            Ok(settings) => settings.clone(),
            Err(e) => return Some(Err(e.to_string())),
        };
        self.protocol.schema(&settings, registry)
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Every protocol's contribution, put together.
#[derive(Default)]
pub(crate) struct Built {
    pub(crate) routes: Router,
    pub(crate) roles: Vec<LambdaRole>,
    pub(crate) drains: Vec<Arc<dyn Drain>>,
    pub(crate) shapes: Vec<(&'static str, Shape)>,
}

/// Builds every protocol of `protocols` over one assembly: their routes merged, their Lambda
/// roles put together by name (beside `roles`, the app's own: the runner's worker), the
/// configured role (`OXP_LAMBDA_ROLE`) checked against them.
pub(crate) fn build_all(
    protocols: Vec<Box<dyn Entry>>,
    assembly: &Assembly<'_>,
    roles: Vec<LambdaRole>,
) -> Result<Built, StartError> {
    let mut built = Built {
        roles,
        ..Built::default()
    };
    for protocol in protocols {
        let contribution = protocol.build(assembly)?;
        if let Some(routes) = contribution.routes {
            built.routes = built.routes.merge(routes);
        }
        for role in contribution.roles {
            match built.roles.iter_mut().find(|r| r.name == role.name) {
                Some(served) => served.join(role).map_err(|name| {
                    StartError::Config(ConfigError::new(
                        "OXP_LAMBDA_ROLE",
                        format!("two protocols answer the direct invocations of role '{name}'"),
                    ))
                })?,
                None => built.roles.push(role),
            }
        }
        built.drains.extend(contribution.drain);
        built.shapes.extend(contribution.shapes);
    }
    let role = assembly.config.lambda_role.as_str();
    let served = built.roles.iter().find(|r| r.name == role);
    // A direct invocation carries no token and no authorizer's claims: only the invoking
    // service's IAM permission guards the function, so any `OXP_AUTH` but `none` would refuse
    // every call (or suggest a check that does not happen).
    if let Some(LambdaRole {
        kind: RoleKind::Direct(_),
        ..
    }) = served
        && !assembly.auth.is_none()
    {
        return Err(StartError::Config(ConfigError::new(
            "OXP_AUTH",
            format!(
                "must be 'none' for OXP_LAMBDA_ROLE={role}: direct invocations carry no token (the invoke permission guards the function)"
            ),
        )));
    }
    if role != crate::config::HTTP_ROLE && served.is_none() {
        let served: Vec<&str> = built.roles.iter().map(|r| r.name).collect();
        return Err(StartError::Config(ConfigError::new(
            "OXP_LAMBDA_ROLE",
            format!(
                "no protocol of this app serves this role (it serves '{}'{})",
                crate::config::HTTP_ROLE,
                served
                    .iter()
                    .map(|r| format!(", '{r}'"))
                    .collect::<String>()
            ),
        )));
    }
    Ok(built)
}
