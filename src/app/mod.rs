//! Assembly: the parts the configuration names, built once and wired together: the secret
//! source, the idempotency store and authentication around one [`Invoker`], the protocol
//! adapters over it, and the plumbing and transports around them.

use crate::config::Config;
use crate::server::HttpApp;
use crate::transport::local;
use http::Request;
use oxp_lambda_core::registry::Registry;
use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tower::Service;

mod build;
pub(crate) mod protocol;
mod protocols;

pub use build::{AppBuilder, StartError};

#[cfg(feature = "lambda")]
type Inner = crate::transport::lambda::http::LambdaHttp;
#[cfg(not(feature = "lambda"))]
type Inner = HttpApp;

/// The app: every route of every adapter, as one `tower` service for the local server, the
/// Lambda runtime or tests (`tower::ServiceExt::oneshot`).
///
/// Served by a program of its own (`axum::serve(listener, app)`, nested in a router), it keeps
/// the browser guard of [`App::serve`] while authentication is off, whatever it listens on: a
/// request whose `Host` is neither a loopback name nor in `OXP_ALLOWED_HOSTS`, or whose
/// `Origin` is another site's not in `OXP_ALLOWED_ORIGINS`, is refused (403). Requests made
/// from Lambda events (which carry Lambda's request context) come through API Gateway, a
/// Function URL or a load balancer, not a browser on this machine, and are not checked.
#[derive(Clone)]
pub struct App {
    service: Inner,
    parts: Arc<Parts>,
}

struct Parts {
    config: Config,
    /// The browser guard's rules, for [`App`] used as a service outside [`App::serve`].
    browser: local::BrowserRules,
    /// The runner of `OXP_LAMBDA_ROLE` when a protocol serves the role (not `http`); read by
    /// the Lambda transport, when compiled in.
    #[allow(dead_code)]
    lambda_role: Option<protocol::RoleRunner>,
    /// Work the protocols finish at shutdown.
    drains: Vec<Arc<dyn protocol::Drain>>,
    /// What the protocols' own entry points read back, by type (read by those compiled in).
    #[allow(dead_code)]
    state: http::Extensions,
}

impl fmt::Debug for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("config", &self.parts.config)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Starts building an app serving `registry`.
    pub fn builder(registry: Registry) -> AppBuilder {
        AppBuilder::new(registry)
    }

    /// Serves HTTP on `listener` until `shutdown` completes; in-flight requests finish, then
    /// accepted async invocations get `OXP_RAP_DRAIN_SECS` to finish before the rest are
    /// dead-lettered. On a loopback listener, and on any listener while authentication is off,
    /// a request whose `Host` is neither a loopback name nor in `OXP_ALLOWED_HOSTS`, or whose
    /// `Origin` is not in `OXP_ALLOWED_ORIGINS`, is refused (403): web pages open in a browser
    /// on the same machine cannot reach the tools, even through a rebound DNS name.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let config = &self.parts.config;
        let rules = self.parts.browser.clone();
        let limits = local::Limits {
            max_connections: config.max_connections,
            header_read_timeout: config.header_read_timeout,
        };
        let served = local::serve(listener, self.http(), rules, limits, shutdown).await;
        let abandoned = self.drain_within(None).await;
        if abandoned > 0 {
            tracing::warn!(
                abandoned,
                "unfinished invocations were dead-lettered at shutdown"
            );
        }
        served
    }

    /// Waits up to `timeout` for the async invocations this process accepted onto its
    /// in-process queue to finish, then dead-letters those still running; returns how many
    /// were. Nothing to wait for with an SQS queue (or without the async adapter).
    pub async fn drain(&self, timeout: std::time::Duration) -> usize {
        self.drain_within(Some(timeout)).await
    }

    /// Every protocol's drain, each within `timeout` or (`None`) its own.
    async fn drain_within(&self, timeout: Option<std::time::Duration>) -> usize {
        let mut abandoned = 0;
        for drain in &self.parts.drains {
            abandoned += drain.drain(timeout).await;
        }
        abandoned
    }

    /// The configuration the app was built with.
    pub fn config(&self) -> &Config {
        &self.parts.config
    }

    /// A protocol's state, as it stored it when the app was built.
    #[allow(dead_code)] // used by the protocols compiled in
    pub(crate) fn protocol_state<T: Clone + Send + Sync + 'static>(&self) -> Option<&T> {
        self.parts.state.get::<T>()
    }

    fn http(&self) -> HttpApp {
        #[cfg(feature = "lambda")]
        return self.service.app.clone();
        #[cfg(not(feature = "lambda"))]
        return self.service.clone();
    }

    /// Serves the Lambda Runtime API in the configured role (`OXP_LAMBDA_ROLE`) until the
    /// environment ends: the entry point of a Lambda function built around this app, for
    /// programs that start the runtime themselves rather than through [`crate::run`].
    #[cfg(feature = "lambda")]
    pub async fn run_lambda(self) -> Result<(), lambda_http::Error> {
        if let Some(runner) = &self.parts.lambda_role {
            let config = &self.parts.config;
            return runner(config.deadline_margin, config.max_body_bytes).await;
        }
        crate::transport::lambda::http::run(self.service).await
    }
}

impl<B> Service<Request<B>> for App
where
    B: axum::body::HttpBody<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = futures_util::future::Either<
        std::future::Ready<Result<axum::response::Response, Infallible>>,
        axum::routing::future::RouteFuture<Infallible>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::<Request<B>>::poll_ready(&mut self.service, cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        use futures_util::future::Either;
        let rules = &self.parts.browser;
        if rules.auth_off
            && !from_lambda(&request)
            && let Err(refusal) = local::check_browser(request.headers(), rules)
        {
            tracing::info!(target: "oxp::server", outcome = "forbidden", reason = refusal.reason());
            return Either::Left(std::future::ready(Ok(
                axum::response::IntoResponse::into_response(refusal),
            )));
        }
        Either::Right(self.service.call(request))
    }
}

/// Whether `request` was made from a Lambda event (the runtime adds its request context).
fn from_lambda<B>(request: &Request<B>) -> bool {
    #[cfg(feature = "lambda")]
    return request
        .extensions()
        .get::<lambda_http::request::RequestContext>()
        .is_some();
    #[cfg(not(feature = "lambda"))]
    {
        let _ = request;
        false
    }
}
