//! Protocols plug in: each is a [`Protocol`] value the app takes, built over the one call path
//! into a [`Contribution`] (HTTP routes, the runner of its own Lambda role, work to finish at
//! shutdown, state its entry points read back). The assembly iterates over the values and
//! knows none of them; Cargo features only decide which values exist (`super::protocols`), and
//! [`super::AppBuilder::protocol`] adds one written outside the crate.

use super::StartError;
use crate::auth::Authenticator;
use crate::config::{Config, LambdaRole};
use axum::Router;
use http::Extensions;
use oxp_lambda_core::invoke::Invoker;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A boxed, sendable future.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a Lambda role's loop ended (the Runtime API stopped answering).
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A protocol the app serves: OXP, MCP, RAP, the AgentCore target and Bedrock Agents are
/// values of this trait, and [`AppBuilder::protocol`](super::AppBuilder::protocol) takes one of
/// your own. It turns an [`Assembly`] (the call path, authentication, the configuration) into
/// a [`Contribution`]: for an HTTP protocol, its routes.
pub trait Protocol: Send + Sync {
    /// Builds what the protocol adds, over `assembly`'s call path and authentication. An error
    /// names what in the configuration is wrong.
    fn build(&self, assembly: &Assembly<'_>) -> Result<Contribution, StartError>;
}

/// What a protocol is given to build on.
pub struct Assembly<'a> {
    /// The one call path.
    pub(crate) invoker: &'a Arc<Invoker>,
    /// How callers authenticate (HTTP protocols guard their routes with it).
    pub(crate) auth: &'a Arc<Authenticator>,
    /// The configuration.
    pub(crate) config: &'a Config,
    /// Parts built once and shared by every protocol that needs them (the AWS configuration),
    /// by type; read by those compiled in.
    #[allow(dead_code)]
    pub(crate) shared: &'a Extensions,
}

/// What a protocol adds to the app.
#[derive(Default)]
pub struct Contribution {
    /// HTTP routes, served under the plumbing (body limit, base path, 404).
    pub(crate) routes: Option<Router>,
    /// The Lambda role this protocol answers (`OXP_LAMBDA_ROLE`) and how to run it.
    pub(crate) lambda_role: Option<(LambdaRole, RoleRunner)>,
    /// Work to finish before the process ends (accepted async invocations).
    pub(crate) drain: Option<Arc<dyn Drain>>,
    /// State the protocol's own entry points on [`super::App`] read back, by type.
    pub(crate) state: Extensions,
}

impl Contribution {
    /// Only routes, merged with every other protocol's under the body limit, the base path and
    /// the 404. A path another protocol already serves (`/tools`, `/mcp`, `/invoke`, ...)
    /// panics when the app is built, as `axum::Router::merge` does: pick paths of your own.
    pub fn routes(routes: Router) -> Self {
        Self {
            routes: Some(routes),
            ..Self::default()
        }
    }
}

impl Assembly<'_> {
    /// The one call path: build a [`Call`](oxp_lambda_core::invoke::Call), invoke it, format the
    /// [`Outcome`](oxp_lambda_core::invoke::Outcome) or the [`Rejection`](oxp_lambda_core::refusal::Rejection).
    pub fn invoker(&self) -> &Arc<Invoker> {
        self.invoker
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        self.config
    }

    /// `router` behind the configured authentication (`OXP_AUTH`): an authenticated request
    /// carries its [`Principal`](oxp_lambda_core::principal::Principal) in its extensions (put it on the
    /// `Call`); any other gets `refuse(&request)`.
    pub fn authenticate<S, R>(&self, router: Router<S>, refuse: R) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
        R: Fn(&axum::extract::Request) -> axum::response::Response + Clone + Send + Sync + 'static,
    {
        crate::server::guard(router, self.auth, refuse)
    }
}

/// Runs a Lambda role until the environment ends: `margin` is taken off each invocation's
/// deadline, `max_bytes` bounds an event. The future need not be `Send` (the runtime's own
/// loop cannot be shown to be): it is awaited where it is made, on the main task.
pub(crate) type RoleRunner = Arc<
    dyn Fn(Duration, usize) -> Pin<Box<dyn Future<Output = Result<(), BoxError>>>> + Send + Sync,
>;

/// Work a protocol finishes at shutdown.
pub(crate) trait Drain: Send + Sync {
    /// Waits up to `timeout` (`None`: the protocol's own) for the work to finish, gives up on
    /// the rest, and returns how much was given up.
    fn drain(&self, timeout: Option<Duration>) -> BoxFuture<'_, usize>;
}

/// Builds every protocol of `protocols` over one assembly.
pub(crate) fn build_all(
    protocols: &[Box<dyn Protocol>],
    assembly: &Assembly<'_>,
) -> Result<Built, StartError> {
    let mut built = Built::default();
    for protocol in protocols {
        let contribution = protocol.build(assembly)?;
        if let Some(routes) = contribution.routes {
            built.routes = built.routes.merge(routes);
        }
        if let Some((role, runner)) = contribution.lambda_role
            && role == assembly.config.lambda_role
        {
            built.lambda_role = Some(runner);
        }
        built.drains.extend(contribution.drain);
        built.state.extend(contribution.state);
    }
    if built.lambda_role.is_none() && assembly.config.lambda_role != LambdaRole::Http {
        return Err(StartError::Config(crate::settings::invalid(
            "OXP_LAMBDA_ROLE",
            "no protocol compiled into this binary serves this role",
        )));
    }
    Ok(built)
}

/// Every protocol's contribution, put together.
#[derive(Default)]
pub(crate) struct Built {
    pub(crate) routes: Router,
    pub(crate) lambda_role: Option<RoleRunner>,
    pub(crate) drains: Vec<Arc<dyn Drain>>,
    pub(crate) state: Extensions,
}
