//! Without the `http-server` feature the app serves no HTTP: it answers Lambda's direct and SQS
//! invocations only (the worker, AgentCore and Bedrock Agents functions). No protocol's routes
//! are built and no port is served, so the code only HTTP reaches (axum's handlers and
//! plumbing, the local server, each protocol's handlers, the OAuth routes) is left out of a
//! release binary by its link. The same API as `http_side.rs`.

use super::App;
use crate::auth::Authenticator;
use crate::config::Config;
use crate::server::HttpApp;
use axum::Router;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

/// No local server: none looks for work of its own (`durable::start`).
pub(crate) const SERVES_LOCALLY: bool = false;

/// Why it serves no port.
const NO_HTTP: &str = "this build serves no HTTP (it answers Lambda's direct and SQS invocations only): the local server needs the `http-server` feature";

/// Why this build cannot serve a port ([`super::App::serve`]).
pub(crate) fn unserved() -> Option<std::io::Error> {
    Some(std::io::Error::other(NO_HTTP))
}

/// No routes: `make` is never called.
pub(crate) fn routes(_make: impl FnOnce() -> Router) -> Option<Router> {
    None
}

/// An app with no route (never served).
pub(crate) fn assemble(
    _routes: Router,
    _shapes: &crate::server::Shapes,
    _broker: Option<Arc<crate::oauth::Broker>>,
    _auth: &Arc<Authenticator>,
    _config: &Config,
) -> HttpApp {
    crate::server::assemble(Router::new(), Default::default(), 0, None, &[])
}

/// No local server: fails, saying why.
pub(crate) async fn serve_locally(_app: App, _addr: SocketAddr) -> ExitCode {
    tracing::error!("{NO_HTTP}");
    ExitCode::FAILURE
}
