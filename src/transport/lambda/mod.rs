//! The AWS Lambda transport: one [`invocation`] layer (Lambda's fields on every line, the
//! deadline computed once, metrics and spans flushed before the answer) over HTTP events
//! through `lambda_http` ([`http`]: API Gateway REST and HTTP APIs, Function URLs, ALB), SQS
//! batches ([`sqs`]) and direct invocations ([`direct`]); HTTP answers buffered or streamed
//! ([`streaming`]). It runs the role a protocol serves as
//! a value ([`LambdaRole`]) and knows no protocol.

pub(crate) mod direct;
pub(crate) mod http;
pub(crate) mod invocation;
pub(crate) mod sqs;
pub(crate) mod streaming;

use crate::config::Config;
use crate::server::{LambdaRole, RoleKind};
use invocation::InvocationLayer;
use std::convert::Infallible;
use tower::Service;

/// Serves the Lambda Runtime API until the execution environment ends: `role`'s events, or
/// (`None`, `OXP_LAMBDA_ROLE=http`) HTTP events for `app`.
pub(crate) async fn run<S>(
    app: S,
    role: Option<&LambdaRole>,
    config: &Config,
) -> Result<(), lambda_http::Error>
where
    S: Service<lambda_http::Request, Response = axum::response::Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let layer = InvocationLayer::new(config);
    match role.map(|r| &r.kind) {
        None => http::run(app, layer, config.lambda_streaming).await,
        Some(RoleKind::Direct(handler)) => {
            direct::run(
                handler.clone(),
                layer,
                config.max_body_bytes,
                config.runtime.max_concurrency,
            )
            .await
        }
        Some(RoleKind::Records(handlers)) => sqs::run(handlers.clone(), layer).await,
    }
}
