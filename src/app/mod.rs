//! Assembly: the parts the configuration names, built once and wired together: the secret
//! source, the idempotency store and authentication around one [`Invoker`](crate::Invoker),
//! the protocol adapters over it, and the plumbing and transports around them.

use crate::config::Config;
use crate::server::{CallContext, HttpApp, LambdaRole, RoleKind};
use crate::transport::local;
use http::Request;
use oxp_lambda_core::registry::Registry;
use serde_json::Value;
use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tower::Service;

#[cfg(feature = "aws")]
mod aws;
mod build;
mod durable;
mod error;
mod guards;
#[cfg(feature = "http-server")]
pub(crate) mod http_side;
#[cfg(not(feature = "http-server"))]
#[path = "http_side_off.rs"]
pub(crate) mod http_side;
#[cfg(feature = "lambda-runtime")]
pub(crate) mod lambda;
#[cfg(not(feature = "lambda-runtime"))]
#[path = "lambda_off.rs"]
pub(crate) mod lambda;
pub(crate) mod protocol;
pub mod protocols;
#[cfg(feature = "lambda-records")]
mod records;

pub use build::AppBuilder;
pub use error::StartError;

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
    service: HttpApp,
    parts: Arc<Parts>,
}

struct Parts {
    config: Config,
    /// The browser guard's rules, for [`App`] used as a service outside [`App::serve`].
    browser: local::BrowserRules,
    /// The Lambda roles the protocols serve besides HTTP, by name.
    roles: Vec<LambdaRole>,
    /// Work the protocols finish at shutdown.
    drains: Vec<Arc<dyn protocol::Drain>>,
    /// `OXP_WORK_DRAIN_SECS`: how long the requests in flight and the work running here may
    /// still take at shutdown.
    drain: std::time::Duration,
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

    /// Serves HTTP on `listener` until `shutdown` completes; the requests in flight and the
    /// work running here then get `OXP_WORK_DRAIN_SECS` together to finish: the connections
    /// still open then are closed (their calls cancelled, as when their callers leave) and the
    /// work left is let go for a takeover (with a store that ends with the process, given up
    /// through its protocol: a RAP result dead-lettered). On a loopback listener, and on any
    /// listener while authentication is off, a request whose `Host` is neither a loopback name
    /// nor in `OXP_ALLOWED_HOSTS`, or whose `Origin` is not in `OXP_ALLOWED_ORIGINS`, is
    /// refused (403): web pages open in a browser on the same machine cannot reach the tools,
    /// even through a rebound DNS name. A build without the `http-server` feature serves
    /// nothing: an error at once.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        if let Some(unserved) = http_side::unserved() {
            return Err(unserved);
        }
        let config = &self.parts.config;
        let rules = self.parts.browser.clone();
        let limits = local::Limits {
            max_connections: config.max_connections,
            max_connections_per_peer: config.max_connections_per_peer,
            header_read_timeout: config.header_read_timeout,
            body_read_timeout: config.body_read_timeout,
            max_body_bytes: config.max_body_bytes,
            drain: self.parts.drain,
        };
        // One drain period from the signal: the requests in flight and the work running here
        // share it, so a shutdown takes it once, not once for each.
        let signalled = Arc::new(std::sync::OnceLock::new());
        let shutdown = {
            let signalled = signalled.clone();
            async move {
                shutdown.await;
                let _ = signalled.set(std::time::Instant::now());
            }
        };
        let served = local::serve(listener, self.service.clone(), rules, limits, shutdown).await;
        let left = signalled
            .get()
            .map_or(self.parts.drain, |at: &std::time::Instant| {
                self.parts.drain.saturating_sub(at.elapsed())
            });
        let abandoned = self.drain(left).await;
        if abandoned > 0 {
            tracing::warn!(
                abandoned,
                "unfinished work was let go for a takeover, or given up, at shutdown"
            );
        }
        served
    }

    /// Waits up to `timeout` for the work running here to finish, then lets the rest go for a
    /// takeover (or, with a store that ends with the process, gives it up through its
    /// protocol); returns how many pieces of work were. Nothing to wait for without a runner.
    pub async fn drain(&self, timeout: std::time::Duration) -> usize {
        let mut abandoned = 0;
        for drain in &self.parts.drains {
            abandoned += drain.drain(timeout).await;
        }
        // The spans of the calls that just finished, before the process ends.
        crate::observe::otel::flush().await;
        abandoned
    }

    /// The configuration the app was built with.
    pub fn config(&self) -> &Config {
        &self.parts.config
    }

    /// The Lambda role `name` a protocol serves (`None` for `http`, or a role none serves).
    pub(crate) fn role(&self, name: &str) -> Option<&LambdaRole> {
        self.parts.roles.iter().find(|r| r.name == name)
    }

    /// Answers one direct invocation of role `role` as that Lambda role does: `event` is the
    /// raw event, `client_context` the raw client context JSON. `None` when no protocol of
    /// this app answers direct invocations of that role.
    pub async fn handle_direct(
        &self,
        role: &str,
        event: &[u8],
        client_context: Option<&[u8]>,
    ) -> Option<Value> {
        let Some(RoleKind::Direct(handler)) = self.role(role).map(|r| &r.kind) else {
            return None;
        };
        if event.len() > self.config().max_body_bytes {
            return Some(handler.too_large());
        }
        Some(
            handler
                .handle(event, client_context, CallContext::default())
                .await,
        )
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
        <HttpApp as Service<Request<B>>>::Future,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::<Request<B>>::poll_ready(&mut self.service, cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        use futures_util::future::Either;
        // A request made from a Lambda event comes through API Gateway, a Function URL or a
        // load balancer (its stage comes off the path here), not from a browser on this machine.
        let from_lambda = crate::transport::lambda::http::prepare(
            &mut request,
            self.parts.config.deadline_margin,
        );
        // Served by another program: one valid `Host` at most (the one every later reader
        // reads), and the browser guard while authentication is off, as `App::serve` holds them.
        let rules = &self.parts.browser;
        let refused = (!from_lambda)
            .then(|| local::refused(&mut request, rules, rules.auth_off, false))
            .flatten();
        if let Some(answer) = refused {
            return Either::Left(std::future::ready(Ok(answer)));
        }
        Either::Right(self.service.call(request))
    }
}
