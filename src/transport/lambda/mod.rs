//! The AWS Lambda transport: HTTP events through `lambda_http` ([`http`]: API Gateway REST and
//! HTTP APIs, Function URLs, ALB) and SQS batches of async invocations ([`sqs`]).

#[cfg(any(feature = "agentcore", feature = "bedrock-agent"))]
pub(crate) mod direct;
pub(crate) mod http;
#[cfg(feature = "rap-sqs")]
pub(crate) mod sqs;

use std::time::{Duration, Instant, SystemTime};

/// When a call must have finished: the invocation deadline minus `margin`, so the caller gets
/// an answer before Lambda stops the function.
pub(crate) fn deadline(ctx: &lambda_http::Context, margin: Duration) -> Option<Instant> {
    let remaining = ctx.deadline().duration_since(SystemTime::now()).ok()?;
    Some(Instant::now() + remaining.saturating_sub(margin))
}
