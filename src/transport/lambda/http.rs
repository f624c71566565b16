//! HTTP events: `lambda_http` turns each into a request for the same app as the local server.
//! Before routing, this transport takes the API Gateway stage off the path and sets the
//! request's [`Deadline`] from the invocation's.

use crate::server::{Deadline, HttpApp, strip_front};
use http::Request;
use lambda_http::request::RequestContext;
use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::Service;

/// The app with what Lambda adds to a request taken into account. A request that did not come
/// through Lambda (the local server) passes unchanged.
#[derive(Debug, Clone)]
pub(crate) struct LambdaHttp {
    pub(crate) app: HttpApp,
    pub(crate) margin: Duration,
}

impl<B> Service<Request<B>> for LambdaHttp
where
    HttpApp: Service<Request<B>, Error = Infallible>,
{
    type Response = <HttpApp as Service<Request<B>>>::Response;
    type Error = Infallible;
    type Future = <HttpApp as Service<Request<B>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::<Request<B>>::poll_ready(&mut self.app, cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        if let Some(stage) = stage(&request).map(|s| format!("/{s}")) {
            strip_front(&mut request, &stage);
        }
        let deadline = request
            .extensions()
            .get::<lambda_http::Context>()
            .and_then(|ctx| super::deadline(ctx, self.margin));
        if let Some(at) = deadline {
            request.extensions_mut().insert(Deadline(at));
        }
        self.app.call(request)
    }
}

/// The API Gateway stage a request came through, when it is a named stage.
///
/// `lambda_http` puts the stage in front of the path (`/prod/tools`); it is taken off again so
/// routes match whatever the stage is called. `$default` stages add nothing.
fn stage<B>(request: &Request<B>) -> Option<&str> {
    let stage = match request.extensions().get::<RequestContext>()? {
        RequestContext::ApiGatewayV1(ctx) => ctx.stage.as_deref(),
        RequestContext::ApiGatewayV2(ctx) => ctx.stage.as_deref(),
        _ => None,
    }?;
    (stage != "$default" && !stage.is_empty()).then_some(stage)
}

/// Serves `app` to the Lambda Runtime API until the execution environment ends: with
/// `AWS_LAMBDA_MAX_CONCURRENCY` above 1 (Lambda Managed Instances) that many invocations at
/// once, each worker polling for its own; one at a time otherwise. The app is shared, so the
/// concurrency pool, caches and limits are the process's, as on the local server.
pub(crate) async fn run(app: LambdaHttp) -> Result<(), lambda_http::Error> {
    lambda_http::run_concurrent(Concurrent(app)).await
}

/// The app with its response turned into Lambda's before it leaves the worker: the
/// concurrent runtime moves responses between tasks and so needs a `Sync` body, which
/// axum's streaming body is not. The conversion is the one `lambda_http::run` applies.
#[derive(Clone)]
struct Concurrent(LambdaHttp);

impl Service<lambda_http::Request> for Concurrent {
    type Response = lambda_http::Response<lambda_http::Body>;
    type Error = Infallible;
    type Future = futures_util::future::BoxFuture<'static, Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Service::<lambda_http::Request>::poll_ready(&mut self.0, cx)
    }

    fn call(&mut self, request: lambda_http::Request) -> Self::Future {
        let context = request.extensions().get::<lambda_http::Context>().cloned();
        let answer = self.0.call(request);
        Box::pin(async move {
            let answered = async {
                let response = answer.await?;
                Ok(lambda_http::IntoResponse::into_response(response).await)
            };
            match context {
                Some(c) => {
                    crate::observe::invocation(
                        &c.request_id,
                        c.xray_trace_id.as_deref(),
                        c.tenant_id.as_deref(),
                        answered,
                    )
                    .await
                }
                None => answered.await,
            }
        })
    }
}
