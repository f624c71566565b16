//! Without the `oauth` feature the server runs no user's OAuth flow: `OXP_OAUTH_PROVIDERS` is
//! read as usual and, when it names a provider, refused at start.

#[path = "oauth/config.rs"]
pub(crate) mod config;

use axum::Router;
use config::OAuthConfig;
use oxp_lambda_core::secrets::Secrets;
use oxp_lambda_core::tokens::{Held, TokenError, TokenFuture, UserTokens};
use std::sync::Arc;
use std::time::SystemTime;

/// The server-held secret whose value seals the vault (kept from tools all the same).
pub const KEY_SECRET_ID: &str = "OAUTH_KEY";

/// A broker that cannot exist in this build.
#[derive(Debug)]
pub(crate) enum Broker {}

/// Refuses a configuration that names a provider; none is built without one.
pub(crate) fn build(
    oauth: &OAuthConfig,
    _listening: (std::net::IpAddr, u16),
    _lambda: bool,
    _secrets: &Secrets,
    _sdk: &crate::aws::SharedSdk,
) -> Result<Option<Arc<Broker>>, String> {
    if oauth.providers.is_empty() {
        return Ok(None);
    }
    Err("OXP_OAUTH_PROVIDERS needs the `oauth` feature of oxp-lambda".into())
}

impl UserTokens for Broker {
    fn serves(&self, _provider: &str) -> bool {
        match *self {}
    }

    fn token<'a>(
        &'a self,
        _provider: &'a str,
        _user: &'a str,
        _scopes: &'a [String],
    ) -> TokenFuture<'a, Result<Held, TokenError>> {
        match *self {}
    }

    fn holds<'a>(
        &'a self,
        _provider: &'a str,
        _user: &'a str,
        _scopes: &'a [String],
    ) -> TokenFuture<'a, Result<bool, TokenError>> {
        match *self {}
    }

    fn when_completed(&self, _hook: oxp_lambda_core::tokens::Completed) {
        match *self {}
    }

    fn forget_refused<'a>(
        &'a self,
        _provider: &'a str,
        _user: &'a str,
        _refused: &'a oxp_lambda_core::Secret,
    ) -> TokenFuture<'a, Result<(), TokenError>> {
        match *self {}
    }
}

/// The flow's routes, which no broker of this build serves.
pub(crate) mod routes {
    use super::{Arc, Broker, Router};

    /// Unreachable: no broker is ever made.
    pub(crate) fn router(broker: Arc<Broker>, _guard: impl FnOnce(Router) -> Router) -> Router {
        match *broker {}
    }
}
