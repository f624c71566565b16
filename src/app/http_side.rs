//! The HTTP side of the app (feature `http-server`): the protocols' routes put together behind
//! the plumbing, and the local server. `http_side_off.rs` is the same API in a build without it (a
//! Lambda function of a direct or SQS role), where none of this is built or linked.

use super::App;
use crate::auth::Authenticator;
use crate::config::Config;
use crate::server::{self, HttpApp};
use crate::transport::local;
use axum::Router;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

/// The local server looks for work of its own (`durable::start`).
pub(crate) const SERVES_LOCALLY: bool = true;

/// Why this build cannot serve a port: never (`http_side_off.rs` says why it cannot).
pub(crate) fn unserved() -> Option<std::io::Error> {
    None
}

/// The routes `make` builds (a protocol's, [`super::protocol::Contribution::http`]).
pub(crate) fn routes(make: impl FnOnce() -> Router) -> Option<Router> {
    Some(make())
}

/// Every protocol's `routes`, the users' authorization flow's beside them when the server runs
/// one, behind the plumbing (`/health`, the 404, the body limit, the base path).
pub(crate) fn assemble(
    routes: Router,
    shapes: &server::Shapes,
    broker: Option<Arc<crate::oauth::Broker>>,
    auth: &Arc<Authenticator>,
    config: &Config,
) -> HttpApp {
    let routes = match broker {
        Some(broker) => oauth_routes(routes, broker, auth),
        None => routes,
    };
    let (max_body_bytes, base_path) = (config.max_body_bytes, config.base_path.as_deref());
    let origins = &config.allowed_origins;
    server::assemble(routes, shapes.clone(), max_body_bytes, base_path, origins)
}

/// `routes` with the users' authorization flow's beside them (`forget` behind authentication,
/// like every route that acts for a user).
fn oauth_routes(
    routes: Router,
    broker: Arc<crate::oauth::Broker>,
    auth: &Arc<Authenticator>,
) -> Router {
    let auth = auth.clone();
    routes.merge(crate::oauth::routes::router(broker, move |forget| {
        server::guard(forget, &auth, |_, refused| match refused {
            server::Refused::Unauthenticated => server::json(
                http::StatusCode::UNAUTHORIZED,
                &serde_json::json!({"error": "authentication failed"}),
            ),
            server::Refused::InsufficientScope { .. } => server::json(
                http::StatusCode::FORBIDDEN,
                &serde_json::json!({"error": "insufficient_scope"}),
            ),
        })
    }))
}

/// The local server on `addr` until Ctrl-C or SIGTERM.
pub(crate) async fn serve_locally(app: App, addr: SocketAddr) -> ExitCode {
    let listener = match local::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => {
            // Said with what chooses the address: `cargo run` twice, or another server on
            // 8080, is the usual cause.
            tracing::error!(
                "cannot listen on {addr}: {e} (OXP_HOST and OXP_PORT, or --port, choose another)"
            );
            return ExitCode::FAILURE;
        }
    };
    let bound = listener.local_addr().unwrap_or(addr);
    // For whoever started it to read, if anyone does: a pipe closed already (`| head -1`) is no
    // reason to stop serving (println! panics on it).
    let _ = writeln!(std::io::stdout(), "OXP server listening on http://{bound}");
    tracing::info!(%bound, "OXP server listening");
    match app.serve(listener, local::shutdown_signal()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("server failed: {e}");
            ExitCode::FAILURE
        }
    }
}
