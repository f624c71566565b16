//! The local HTTP server: the same app as in Lambda, on a TCP port, with graceful shutdown.
//!
//! On a loopback listener every request must also look like it comes from this machine, not
//! from a web page the developer has open: its `Host` must be a loopback name (a page that
//! rebinds its own DNS name to 127.0.0.1 still sends its name), and an `Origin`, which browsers
//! send with cross-origin requests, must be one `OXP_ALLOWED_ORIGINS` lists. Together with the
//! JSON-only bodies of every route this keeps pages from calling the tools with the server's
//! secrets.

use crate::server::{HttpApp, ServerError};
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
    if let Some(origin) = headers.get(header::ORIGIN)
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

/// `localhost`, a `.localhost` name, 127.0.0.0/8 or `[::1]`, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_names_and_addresses_of_this_machine() {
        for host in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:8080",
            "127.1.2.3",
            "[::1]:80",
            "api.localhost",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example:8080",
            "127.0.0.1.evil.example",
            "[::2]:80",
            "localhost.evil.example",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
