//! Without the `lambda` feature (`lambda-runtime` alone: the functions that answer no HTTP
//! event) no HTTP event is served: the HTTP role refuses to start, saying what it needs.

use super::invocation::InvocationLayer;

/// Any app: no HTTP event reaches it in this build.
pub(crate) trait Served {}

impl<S> Served for S {}

/// Whether `request` was made from a Lambda event: never.
pub(crate) fn prepare<B>(_request: &mut http::Request<B>, _margin: std::time::Duration) -> bool {
    false
}

/// Refuses: HTTP events need `lambda_http`.
pub(crate) async fn run<S: Served>(
    _app: S,
    _layer: InvocationLayer,
    _streaming: bool,
) -> Result<(), lambda_runtime::Error> {
    Err("HTTP events (OXP_LAMBDA_ROLE=http, the default) need the `lambda` feature of oxp-lambda; this build has `lambda-runtime` alone: set OXP_LAMBDA_ROLE to the role it serves".into())
}
