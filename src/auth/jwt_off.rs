//! Without the `jwt` feature there is no JWT verifier: `OXP_AUTH=jwt` is refused at start.

use super::{AuthError, Authenticated, JwtConfig};
use http::HeaderMap;
use oxp_lambda_core::secrets::Secrets;

/// A verifier that cannot exist in this build.
#[derive(Debug)]
pub(crate) enum JwtVerifier {}

impl JwtVerifier {
    /// Refuses `OXP_AUTH=jwt`.
    pub(crate) fn new(_config: JwtConfig, _secrets: Secrets) -> Result<Self, String> {
        Err("OXP_AUTH=jwt needs the `jwt` feature of oxp-lambda".into())
    }

    /// Unreachable: no verifier is ever made.
    pub(crate) async fn verify_headers(
        &self,
        _headers: &HeaderMap,
    ) -> Result<Authenticated, AuthError> {
        match *self {}
    }
}
