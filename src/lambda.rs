//! The AWS Lambda transport: the same app as the local server, driven by `lambda_http`, which
//! accepts API Gateway REST (v1) and HTTP API (v2) events, Function URL events and ALB events.

use crate::http::StripPrefix;
use axum::Router;
use lambda_http::request::RequestContext;
use std::time::{Duration, Instant, SystemTime};

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

/// When a tool must have finished: the invocation deadline minus `margin`, so the caller gets
/// an answer before Lambda stops the function.
pub fn deadline(ctx: &lambda_http::Context, margin: Duration) -> Option<Instant> {
    let remaining = ctx.deadline().duration_since(SystemTime::now()).ok()?;
    Some(Instant::now() + remaining.saturating_sub(margin))
}

/// Serves `app` to the Lambda Runtime API until the execution environment ends.
pub async fn run(app: StripPrefix<Router>) -> Result<(), lambda_http::Error> {
    lambda_http::run(app).await
}

/// Serves RAP invocation batches from SQS (`OXP_LAMBDA_ROLE=worker`) until the execution
/// environment ends. Results must be delivered or dead-lettered `margin` before the
/// invocation deadline; records that are neither come back in `batchItemFailures`.
pub async fn run_worker(
    worker: std::sync::Arc<crate::rap::worker::Worker>,
    margin: Duration,
) -> Result<(), lambda_http::Error> {
    use aws_lambda_events::event::sqs::SqsEvent;
    use lambda_http::{LambdaEvent, service_fn};
    lambda_http::lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let worker = worker.clone();
        async move {
            let deadline = deadline(&event.context, margin);
            Ok::<_, lambda_http::Error>(worker.handle_batch(event.payload, deadline).await)
        }
    }))
    .await
}

/// The caller's subject as an API Gateway authorizer verified it: `None` when the request has
/// no authorizer context at all, `Some(sub)` otherwise (`sub` itself may be absent).
///
/// Read from, in order: JWT authorizer claims (`authorizer.jwt.claims.sub`), Cognito user pool
/// claims of REST APIs (`authorizer.claims.sub`), Lambda authorizer context (`sub` or
/// `principalId`), and IAM authorization (`userArn`).
pub fn authorizer_subject(extensions: &axum::http::Extensions) -> Option<Option<String>> {
    let authorizer = match extensions.get::<RequestContext>()? {
        RequestContext::ApiGatewayV1(ctx) => Some(&ctx.authorizer),
        RequestContext::ApiGatewayV2(ctx) => ctx.authorizer.as_ref(),
        _ => None,
    }?;
    if let Some(jwt) = &authorizer.jwt {
        return Some(jwt.claims.get("sub").cloned());
    }
    if let Some(iam) = &authorizer.iam {
        return Some(iam.user_arn.clone().or_else(|| iam.user_id.clone()));
    }
    let fields = &authorizer.fields;
    if fields.is_empty() {
        return None;
    }
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let sub = fields
        .get("claims")
        .and_then(|c| c.get("sub"))
        .and_then(text)
        .or_else(|| fields.get("sub").and_then(text))
        .or_else(|| fields.get("principalId").and_then(text));
    Some(sub)
}
