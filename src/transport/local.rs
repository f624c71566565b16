//! The local HTTP server: the same app as in Lambda, on a TCP port, with graceful shutdown.
//!
//! On a loopback listener every request must also look like it comes from this machine, not
//! from a web page the developer has open: its `Host` must be a loopback name (a page that
//! rebinds its own DNS name to 127.0.0.1 still sends its name), and an `Origin`, which browsers
//! send with cross-origin requests, must be one `OXP_ALLOWED_ORIGINS` lists. Together with the
//! JSON-only bodies of every route this keeps pages from calling the tools with the server's
//! secrets.

use crate::server::{HttpApp, ServerError, is_loopback_host, same_loopback_origin};
use axum::response::{IntoResponse, Response};
use futures_util::future::{Either, Ready, ready};
use http::{HeaderMap, Request, header};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tower::Service;

/// Binds `addr`; port 0 picks a free port (see [`TcpListener::local_addr`]).
pub(crate) async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves `app` on `listener` until `shutdown` completes; in-flight requests finish first. A
/// loopback listener refuses what browsers could send it (see the module documentation).
pub(crate) async fn serve(
    listener: TcpListener,
    app: HttpApp,
    allowed_origins: Arc<[String]>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let guarded = LoopbackGuard {
        inner: app,
        allowed_origins,
        active: listener.local_addr()?.ip().is_loopback(),
    };
    axum::serve(
        listener,
        axum::ServiceExt::<axum::extract::Request>::into_make_service(guarded),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

/// Refuses, on a loopback listener, a non-loopback `Host` and an `Origin` not allowed.
#[derive(Debug, Clone)]
pub(crate) struct LoopbackGuard<S> {
    inner: S,
    allowed_origins: Arc<[String]>,
    active: bool,
}

impl<S, B> Service<Request<B>> for LoopbackGuard<S>
where
    S: Service<Request<B>, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if self.active
            && let Err(refusal) = check_browser(request.headers(), &self.allowed_origins)
        {
            tracing::info!(target: "oxp::server", outcome = "forbidden", reason = refusal.reason());
            return Either::Left(ready(Ok(refusal.into_response())));
        }
        Either::Right(self.inner.call(request))
    }
}

/// The `Host` and `Origin` rules of a loopback listener.
fn check_browser(headers: &HeaderMap, allowed_origins: &[String]) -> Result<(), ServerError> {
    if let Some(host) = headers.get(header::HOST)
        && !host.to_str().is_ok_and(is_loopback_host)
    {
        return Err(ServerError::Forbidden(
            "the Host header is not a loopback name (localhost, 127.0.0.1, [::1]): requests to a loopback server must come from this machine",
        ));
    }
    // The server's own origin (a page it served, which it serves none of) is same-origin, not
    // cross-origin: the Host check above already ruled out a rebound name.
    if let Some(origin) = headers.get(header::ORIGIN)
        && !same_loopback_origin(headers)
        && !origin
            .to_str()
            .is_ok_and(|o| allowed_origins.iter().any(|a| a.eq_ignore_ascii_case(o)))
    {
        return Err(ServerError::Forbidden(
            "the request comes from a web page whose origin is not allowed (OXP_ALLOWED_ORIGINS)",
        ));
    }
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
