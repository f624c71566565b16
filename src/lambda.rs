//! The AWS Lambda transport: the same app as the local server, driven by `lambda_http`, which
//! accepts API Gateway REST (v1) and HTTP API (v2) events, Function URL events and ALB events.

use crate::http::StripPrefix;
use axum::Router;
use lambda_http::request::RequestContext;

/// The API Gateway stage a request came through, when it is a named stage.
///
/// `lambda_http` puts the stage in front of the path (`/prod/tools`); the router strips it
/// again so routes match whatever the stage is called. `$default` stages add nothing.
pub fn stage<B>(request: &axum::http::Request<B>) -> Option<&str> {
    let stage = match request.extensions().get::<RequestContext>()? {
        RequestContext::ApiGatewayV1(ctx) => ctx.stage.as_deref(),
        RequestContext::ApiGatewayV2(ctx) => ctx.stage.as_deref(),
        _ => None,
    }?;
    (stage != "$default" && !stage.is_empty()).then_some(stage)
}

/// Serves `app` to the Lambda Runtime API until the execution environment ends.
pub async fn run(app: StripPrefix<Router>) -> Result<(), lambda_http::Error> {
    lambda_http::run(app).await
}
