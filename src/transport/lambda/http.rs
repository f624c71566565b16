//! HTTP events: `lambda_http` turns each into a request for the same app as the local server.
//! Before routing, the API Gateway stage comes off the path ([`prepare`]); the invocation layer
//! sets the request's deadline from the invocation's.

use super::invocation::{InvocationLayer, Invoked, Meta};
use super::uri::Buildable;
use crate::server::{Deadline, strip_front};
use http::Request;
use lambda_http::request::RequestContext;
use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower::{Layer, Service, ServiceExt};

/// Whether `request` was made from a Lambda event (the runtime adds its request context); if
/// so, takes the API Gateway stage off its path, and gives it the invocation's deadline (less
/// `margin`) unless the invocation layer did (the app called directly with a Lambda event).
///
/// `lambda_http` puts a named stage in front of the path (`/prod/tools`); it is taken off again
/// so routes match whatever the stage is called. `$default` stages add nothing.
pub(crate) fn prepare<B>(request: &mut Request<B>, margin: Duration) -> bool {
    let Some(context) = request.extensions().get::<RequestContext>() else {
        return false;
    };
    let stage = match context {
        RequestContext::ApiGatewayV1(ctx) => ctx.stage.as_deref(),
        RequestContext::ApiGatewayV2(ctx) => ctx.stage.as_deref(),
        _ => None,
    }
    .filter(|s| *s != "$default" && !s.is_empty())
    .map(|s| format!("/{s}"));
    if let Some(stage) = stage {
        strip_front(request, &stage);
    }
    if request.extensions().get::<Deadline>().is_none()
        && let Some(context) = request.extensions().get::<lambda_http::Context>()
        && let Some(at) = super::invocation::deadline(context.deadline, margin)
    {
        request.extensions_mut().insert(Deadline(at));
    }
    true
}

/// What an app must be to answer HTTP events: a service of `lambda_http`'s requests.
pub(crate) trait Served:
    Service<
        lambda_http::Request,
        Response = axum::response::Response,
        Error = Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + 'static
{
}

impl<S> Served for S where
    S: Service<
            lambda_http::Request,
            Response = axum::response::Response,
            Error = Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + 'static
{
}

impl Invoked for lambda_http::Request {
    fn meta(&self) -> Option<Meta> {
        self.extensions()
            .get::<lambda_http::Context>()
            .map(Meta::of_context)
    }

    fn set_deadline(&mut self, at: Instant) {
        self.extensions_mut().insert(Deadline(at));
    }
}

/// Serves `app` to the Lambda Runtime API until the execution environment ends: with
/// `AWS_LAMBDA_MAX_CONCURRENCY` above 1 (Lambda Managed Instances) that many invocations at
/// once, each worker polling for its own; one at a time otherwise. The app is shared, so the
/// concurrency pool, caches and limits are the process's, as on the local server. With
/// `streaming`, each answer is streamed ([`super::streaming`]); buffered otherwise.
pub(crate) async fn run<S: Served>(
    app: S,
    layer: InvocationLayer,
    streaming: bool,
) -> Result<(), lambda_runtime::Error> {
    // `lambda_http`'s own `run_concurrent` and `run_with_streaming_response_concurrent`, each
    // event's URI parts made buildable first (`uri.rs`: the conversion panics on some).
    if streaming {
        let app = layer.layer(app.map_response(super::streaming::flush_at_end));
        let events = Buildable(lambda_http::StreamAdapter::from(app));
        return lambda_runtime::run_concurrent(events).await;
    }
    let events = Buildable(lambda_http::Adapter::from(layer.layer(Concurrent(app))));
    lambda_runtime::run_concurrent(events).await
}

/// The app with its response turned into Lambda's before it leaves the worker: the
/// concurrent runtime moves responses between tasks and so needs a `Sync` body, which
/// axum's streaming body is not. The conversion is the one `lambda_http::run` applies.
#[derive(Clone)]
struct Concurrent<S>(S);

impl<S> Service<lambda_http::Request> for Concurrent<S>
where
    S: Service<lambda_http::Request, Response = axum::response::Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = lambda_http::Response<lambda_http::Body>;
    type Error = Infallible;
    type Future = futures_util::future::BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: lambda_http::Request) -> Self::Future {
        let answer = self.0.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(lambda_http::IntoResponse::into_response(response).await)
        })
    }
}
