//! The local HTTP server: the same app as in Lambda, on a TCP port, with graceful shutdown.
//! An HTTP/1.1 request carries one valid `Host` and no request two (HTTP/1.1's rule; 400
//! otherwise, in the protocol's shape).
//!
//! On a loopback listener, and on any listener while authentication is off (a container
//! listening on 0.0.0.0 and published on the host's 127.0.0.1 is reached from the same
//! browser), every request must also look like it comes from this machine, not from a web page
//! the developer has open: its `Host` must be a loopback name or one `OXP_ALLOWED_HOSTS` lists
//! (a page that rebinds its own DNS name to 127.0.0.1 still sends its name), and an `Origin`,
//! which browsers send with cross-origin requests, must be the server's own or one
//! `OXP_ALLOWED_ORIGINS` lists. Together with the JSON-only bodies of every route this keeps
//! pages from calling the tools with the server's secrets.
//!
//! Connections are bounded too: at most `OXP_MAX_CONNECTIONS` are open at once (the next waits
//! in the kernel's backlog), at most `OXP_MAX_CONNECTIONS_PER_PEER` from one address (more are
//! closed at once, so one client cannot take every slot), one that sends no complete request
//! head within `OXP_HEADER_READ_TIMEOUT_MS` (a slow-loris, or a kept-alive connection left
//! idle) is closed, and a request whose body does not arrive within `OXP_BODY_READ_TIMEOUT_MS`
//! of its head is answered 408 and closed ([`body`]).
//!
//! At shutdown the listener closes and the requests in flight get the drain period
//! (`OXP_WORK_DRAIN_SECS`, the time the work running here gets too; a second at least) to be
//! answered; the connections still open then are closed, their calls cancelled as when a
//! caller leaves, so a call without a deadline never holds the process past it.

mod body;
mod signal;

pub(crate) use signal::shutdown_signal;

use crate::server::{HttpApp, ServerError, is_loopback_host, same_loopback_origin};
use axum::response::Response;
use futures_util::future::{Either, Ready, ready};
use http::{HeaderMap, Request, header};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::Service;

/// hyper's read buffer: a request's line and headers are read 64 KiB at a time at most, and a
/// head still incomplete past 64 KiB is refused (431), so one of 64 KiB is always served and one
/// past 128 KiB never is. hyper's own bound is about 400 KiB, which a thousand connections each
/// holding a head open make 400 MiB; an ALB takes 64 KiB, far more than a JWT with its claims.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Binds `addr`; port 0 picks a free port (see [`TcpListener::local_addr`]).
pub(crate) async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// What the browser guard allows, and whether authentication is off.
#[derive(Debug, Clone, Default)]
pub(crate) struct BrowserRules {
    /// `OXP_ALLOWED_ORIGINS`.
    pub(crate) allowed_origins: Arc<[String]>,
    /// `OXP_ALLOWED_HOSTS`.
    pub(crate) allowed_hosts: Arc<[String]>,
    /// `OXP_AUTH=none`.
    pub(crate) auth_off: bool,
    /// Each protocol's shape for a refusal of a request to its paths.
    pub(crate) shapes: crate::server::Shapes,
}

impl BrowserRules {
    /// The rules `config` sets.
    pub(crate) fn from_config(config: &crate::config::Config) -> Self {
        Self {
            allowed_origins: config.allowed_origins.clone().into(),
            allowed_hosts: config.allowed_hosts.clone().into(),
            auth_off: matches!(config.auth, crate::config::AuthConfig::None { .. }),
            shapes: crate::server::Shapes::default(),
        }
    }
}

/// Whether the browser guard runs: on a loopback listener always; on another only while
/// authentication is off (with it on, a page cannot send the caller's token).
pub(crate) fn guarded(listener: std::net::IpAddr, auth_off: bool) -> bool {
    listener.is_loopback() || auth_off
}

/// How many connections the server holds, from one peer and in all, and how long it waits for
/// a request's head and body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// `OXP_MAX_CONNECTIONS`.
    pub(crate) max_connections: usize,
    /// `OXP_MAX_CONNECTIONS_PER_PEER`.
    pub(crate) max_connections_per_peer: usize,
    /// `OXP_HEADER_READ_TIMEOUT_MS`.
    pub(crate) header_read_timeout: Duration,
    /// `OXP_BODY_READ_TIMEOUT_MS`.
    pub(crate) body_read_timeout: Duration,
    /// `OXP_MAX_BODY_BYTES`.
    pub(crate) max_body_bytes: usize,
    /// `OXP_WORK_DRAIN_SECS`: how long the requests in flight at shutdown may still take.
    pub(crate) drain: Duration,
}

/// Open connections by peer address: one peer holds at most its share.
#[derive(Debug, Default)]
struct Peers(std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>);

impl Peers {
    /// Counts a connection from `peer`, unless it holds `most` already.
    fn admit(self: &Arc<Self>, peer: std::net::IpAddr, most: usize) -> Option<PeerSlot> {
        let mut open = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(peer).or_default();
        if *count >= most {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            peers: self.clone(),
            peer,
        })
    }
}

/// A connection counted for its peer until dropped.
struct PeerSlot {
    peers: Arc<Peers>,
    peer: std::net::IpAddr,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.peers.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                // The map holds only peers with open connections: bounded by the slots.
                open.remove(&self.peer);
            }
        }
    }
}

/// The service each connection serves ([`layered`]).
type Layered = LoopbackGuard<body::Deadlined<HttpApp>>;

/// `app` as each connection serves it: behind the guard (`active`: the browser rules too), its
/// bodies read within `limits` (the app answers the allowed origins' CORS itself).
fn layered(app: HttpApp, rules: BrowserRules, limits: &Limits, active: bool) -> Layered {
    let deadlined = body::Deadlined {
        inner: app,
        timeout: limits.body_read_timeout,
        max_body_bytes: limits.max_body_bytes,
        shapes: rules.shapes.clone(),
    };
    LoopbackGuard {
        inner: deadlined,
        active,
        rules,
    }
}

/// Serves `app` on `listener` until `shutdown` completes; in-flight requests finish first. A
/// guarded listener refuses what browsers could send it, and every connection is held to
/// `limits` (see the module documentation).
pub(crate) async fn serve(
    listener: TcpListener,
    app: HttpApp,
    rules: BrowserRules,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let active = guarded(listener.local_addr()?.ip(), rules.auth_off);
    let service = layered(app, rules, &limits, active);
    let peers = Arc::new(Peers::default());
    // HTTP/1.1, as before with axum's `serve`; hyper's header-read timeout needs its timer.
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(MAX_HEAD_BYTES);
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
    let most = limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(most));
    // Fired once the drain period is over: each connection still open is dropped.
    let closing = tokio_util::sync::CancellationToken::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A free slot first: while none is, connections wait in the backlog, unaccepted.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // wait a moment rather than spin (as axum's `serve` does).
                    tracing::warn!(target: "oxp::server", error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(peer_slot) = peers.admit(peer.ip(), limits.max_connections_per_peer) else {
            // Closed at once: this peer holds its share of the slots already.
            tracing::info!(target: "oxp::server", outcome = "refused", reason = "the peer holds OXP_MAX_CONNECTIONS_PER_PEER connections");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection = http.serve_connection(
            hyper_util::rt::TokioIo::new(stream),
            hyper_util::service::TowerToHyperService::new(service.clone()),
        );
        let connection = connections.watch(connection);
        let closing = closing.clone();
        tokio::spawn(async move {
            tokio::select! {
                // A closed or timed-out connection is not the server's error.
                _ = connection => {}
                () = closing.cancelled() => {}
            }
            drop(peer_slot);
            drop(slot);
        });
    }
    drop(listener);
    // A second at least, whatever the period: a request a moment from its answer gets it.
    let drain = limits.drain.max(Duration::from_secs(1));
    close_within(drain, connections, &closing, &slots, most).await;
    Ok(())
}

/// Waits up to `drain` for the `connections` open at shutdown to end (each holding one of
/// `slots`, `most` in all), then closes those left (`closing`), their calls cancelled as when
/// their callers leave.
async fn close_within(
    drain: Duration,
    connections: hyper_util::server::graceful::GracefulShutdown,
    closing: &tokio_util::sync::CancellationToken,
    slots: &Semaphore,
    most: usize,
) {
    if tokio::time::timeout(drain, connections.shutdown())
        .await
        .is_ok()
    {
        return;
    }
    tracing::warn!(target: "oxp::server", "requests still running after OXP_WORK_DRAIN_SECS: their connections are closed, their calls cancelled");
    closing.cancel();
    // Each connection's task gives its slot back once its calls are dropped.
    let all = u32::try_from(most).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(Duration::from_secs(1), slots.acquire_many(all)).await;
}

/// Refuses a request without one valid `Host` and, on a guarded listener, a `Host` and an
/// `Origin` not allowed.
#[derive(Debug, Clone)]
pub(crate) struct LoopbackGuard<S> {
    inner: S,
    rules: BrowserRules,
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

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        match refused(&mut request, &self.rules, self.active, true) {
            Some(answer) => Either::Left(ready(Ok(answer))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}

/// The answer refusing `request` (logged), if it has more than one `Host`, an invalid one, or
/// (`host_required`: it came over a connection) none, or, when the browser guard is `active`, a
/// `Host` or an `Origin` `rules` do not allow.
pub(crate) fn refused<B>(
    request: &mut Request<B>,
    rules: &BrowserRules,
    active: bool,
    host_required: bool,
) -> Option<Response> {
    let refusal = match one_host(request, host_required) {
        Err(refusal) => refusal,
        Ok(()) if active => check_browser(request.headers(), rules).err()?,
        Ok(()) => return None,
    };
    tracing::info!(target: "oxp::server", outcome = refusal.kind(), reason = refusal.developer_message().as_str());
    Some(rules.shapes.answer(request.uri().path(), refusal))
}

/// HTTP/1.1's rule for `Host` (RFC 9112, section 3.2): "A server MUST respond with a 400 (Bad
/// Request) status code to any HTTP/1.1 request message that lacks a Host header field and to
/// any request message that contains more than one Host header field line or a Host header
/// field with an invalid field value." hyper leaves it to the server. A valid value is
/// `host[:port]` (empty where the target has no authority). A request whose target is absolute
/// (`POST http://localhost:8080/mcp`) is for the target's host, whatever its `Host` says
/// (section 3.2.2: the server "MUST ignore the received Host header field"): the target's is
/// put in its place, so that every later reader (the browser rules, the URLs a call gives out,
/// rmcp's checks) reads the host the request was for. A request made in process (`required`
/// false: an embedding program's, `oneshot` in its tests) may carry none.
fn one_host<B>(request: &mut Request<B>, required: bool) -> Result<(), ServerError> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let valid = match (hosts.next(), hosts.next()) {
        (None, _) => !required || request.version() != http::Version::HTTP_11,
        (Some(host), None) => host.is_empty() || is_host(host.as_bytes()),
        (Some(_), Some(_)) => false,
    };
    if !valid {
        return Err(ServerError::BadHost);
    }
    if let Some(target) = request.uri().authority() {
        let target = target.as_str();
        let value = http::HeaderValue::from_str(target).map_err(|_| ServerError::BadHost)?;
        if !is_host(target.as_bytes()) {
            return Err(ServerError::BadHost);
        }
        request.headers_mut().insert(header::HOST, value);
    }
    Ok(())
}

/// `uri-host [":" port]`: an authority without user information, its port digits.
fn is_host(value: &[u8]) -> bool {
    let Ok(authority) = http::uri::Authority::try_from(value) else {
        return false;
    };
    let text = authority.as_str();
    let digits = |port: &str| port.bytes().all(|b| b.is_ascii_digit());
    !text.contains('@')
        && (text.ends_with(']') || text.rsplit_once(':').is_none_or(|(_, port)| digits(port)))
}

/// Whether `host` (a `Host` value) is `allowed` (an `OXP_ALLOWED_HOSTS` entry): the same name,
/// and the same port where the entry names one (`tools.internal` takes any port), as rmcp reads
/// `OXP_MCP_ALLOWED_HOSTS`.
fn host_matches(allowed: &str, host: &str) -> bool {
    let (Ok(allowed), Ok(host)) = (
        allowed.parse::<http::uri::Authority>(),
        host.parse::<http::uri::Authority>(),
    ) else {
        return false;
    };
    allowed.host().eq_ignore_ascii_case(host.host())
        && allowed
            .port_u16()
            .is_none_or(|port| host.port_u16() == Some(port))
}

/// The `Host` and `Origin` rules of a guarded listener.
fn check_browser(headers: &HeaderMap, rules: &BrowserRules) -> Result<(), ServerError> {
    let allowed_host = |host: &str| {
        is_loopback_host(host) || rules.allowed_hosts.iter().any(|a| host_matches(a, host))
    };
    if let Some(host) = headers.get(header::HOST)
        && !host.to_str().is_ok_and(allowed_host)
    {
        return Err(ServerError::Forbidden(
            "the Host header is neither a loopback name (localhost, 127.0.0.1, [::1]) nor in OXP_ALLOWED_HOSTS: requests must come from this machine",
        ));
    }
    // The server's own origin (a page it served, which it serves none of) is same-origin, not
    // cross-origin: the Host check above already ruled out a rebound name.
    if let Some(origin) = headers.get(header::ORIGIN)
        && !same_loopback_origin(headers)
        && !origin.to_str().is_ok_and(|o| {
            rules
                .allowed_origins
                .iter()
                .any(|a| a.eq_ignore_ascii_case(o))
        })
    {
        return Err(ServerError::Forbidden(
            "the request comes from a web page whose origin is not allowed (OXP_ALLOWED_ORIGINS)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
