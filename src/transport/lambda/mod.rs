//! The AWS Lambda transport: one [`invocation`] layer (Lambda's fields on every line, the
//! deadline computed once, metrics and spans flushed before the answer) over HTTP events
//! through `lambda_http` ([`http`], feature `lambda`: API Gateway REST and HTTP APIs, Function
//! URLs, ALB; answers buffered or streamed, `streaming.rs`), SQS batches ([`sqs`], feature
//! `lambda-records`) and direct invocations ([`direct`]). It runs the role a protocol serves as
//! a value ([`LambdaRole`]) and knows no protocol. A build with `lambda-runtime` alone (the functions that answer no
//! HTTP event) links no `lambda_http`: its HTTP role refuses to start.

pub(crate) mod direct;
#[cfg(feature = "lambda")]
pub(crate) mod event;
#[cfg(feature = "lambda")]
pub(crate) mod http;
#[cfg(not(feature = "lambda"))]
#[path = "http_off.rs"]
pub(crate) mod http;
pub(crate) mod invocation;
#[cfg(feature = "lambda-records")]
pub(crate) mod sqs;
#[cfg(not(feature = "lambda-records"))]
#[path = "sqs_off.rs"]
pub(crate) mod sqs;
#[cfg(feature = "lambda")]
pub(crate) mod streaming;
#[cfg(feature = "lambda")]
pub(crate) mod uri;

use crate::config::Config;
use crate::server::{LambdaRole, RoleKind};
use invocation::InvocationLayer;

/// Serves the Lambda Runtime API until the execution environment ends: `role`'s events, or
/// (`None`, `OXP_LAMBDA_ROLE=http`) HTTP events for `app`.
pub(crate) async fn run<S: http::Served>(
    app: S,
    role: Option<&LambdaRole>,
    config: &Config,
) -> Result<(), lambda_runtime::Error> {
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
        Some(RoleKind::Records(records)) => sqs::run(records.clone(), layer).await,
    }
}
