//! Direct invocations (the AgentCore Gateway Lambda target and Bedrock Agents action group
//! roles): the Runtime API loop with `lambda_runtime_api_client`, the client `lambda_runtime`
//! itself uses. A protocol served this way is a [`DirectHandler`] value.
//!
//! Not `lambda_runtime::run`: it parses the client context into a map of strings before the
//! handler runs, and a context it cannot parse (a gateway's `custom` entry that is a number or
//! an object) ends the process without an answer. Here the raw header goes to the adapter,
//! and every invocation gets an answer. With `AWS_LAMBDA_MAX_CONCURRENCY` (Lambda Managed
//! Instances) that many invocations are served at once; elsewhere one at a time.

use super::invocation::{Event, InvocationLayer, Meta};
use crate::server::DirectHandler;
use axum::body::Bytes;
use http::Request;
use http_body_util::BodyExt;
use lambda_runtime_api_client::{Client, body::Body};
use serde_json::Value;
use std::sync::Arc;
use tower::{Layer, Service, ServiceExt};

const NEXT: &str = "/2018-06-01/runtime/invocation/next";
/// Names the invocation an event is; echoed with its answer, as `lambda_runtime` does since
/// 1.4, so that a timed-out invocation's late answer is never taken for the next one's.
const INVOCATION_ID: &str = "lambda-runtime-invocation-id";
/// What a Runtime API event may not be larger than (Lambda's own limit is 6 MB).
const MAX_EVENT_BYTES: usize = 7 * 1024 * 1024;

/// Serves invocations until the environment ends, `workers` at once (Lambda Managed
/// Instances' `AWS_LAMBDA_MAX_CONCURRENCY`; 1 elsewhere); an error is a Runtime API that
/// stopped answering. Events over `max_bytes` (`OXP_MAX_BODY_BYTES`, as for every other
/// transport) are answered "too large" without being read further.
pub(crate) async fn run(
    handler: Arc<dyn DirectHandler>,
    layer: InvocationLayer,
    max_bytes: usize,
    workers: usize,
) -> Result<(), lambda_runtime::Error> {
    let client = Arc::new(Client::builder().build()?);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(serve(
            client.clone(),
            handler.clone(),
            layer.clone(),
            max_bytes.min(MAX_EVENT_BYTES),
        ));
    }
    // The first worker to fail ends the process: the Runtime API is gone.
    match tasks.join_next().await {
        Some(Ok(result)) => result,
        Some(Err(e)) => Err(e.into()),
        None => Ok(()),
    }
}

/// One direct event: its payload (or `None`, too large) and its raw client context.
type Direct = (Option<Bytes>, Option<Bytes>);

async fn serve(
    client: Arc<Client>,
    handler: Arc<dyn DirectHandler>,
    layer: InvocationLayer,
    max_bytes: usize,
) -> Result<(), lambda_runtime::Error> {
    let answering = handler.clone();
    let mut answer = layer.layer(tower::service_fn(move |event: Event<Direct>| {
        let handler = answering.clone();
        async move {
            let answer = match &event.payload {
                (Some(payload), client_context) => {
                    handler
                        .handle(payload, client_context.as_deref(), event.context)
                        .await
                }
                (None, _) => handler.too_large(),
            };
            Ok::<Value, std::convert::Infallible>(answer)
        }
    }));
    loop {
        let next = client.call(Request::get(NEXT).body(Body::empty())?).await?;
        let (parts, body) = next.into_parts();
        let payload = http_body_util::Limited::new(body, max_bytes)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .ok();
        let Some(meta) = Meta::of_headers(&parts.headers) else {
            tracing::error!("Runtime API event without a request id: skipped");
            continue;
        };
        let client_context = parts
            .headers
            .get("lambda-runtime-client-context")
            .map(|v| Bytes::copy_from_slice(v.as_bytes()));
        let request_id = meta.request_id().to_owned();
        let invocation_id = parts.headers.get(INVOCATION_ID).cloned();
        let event = Event::new((payload, client_context), meta);
        let Ok(value) = answer.ready().await?.call(event).await;
        let body = serde_json::to_vec(&value)?;
        let path = format!("/2018-06-01/runtime/invocation/{request_id}/response");
        let mut post = Request::post(path).header(http::header::CONTENT_TYPE, "application/json");
        if let Some(id) = invocation_id {
            post = post.header(INVOCATION_ID, id);
        }
        let response = client.call(post.body(Body::from(body))?).await?;
        if !response.status().is_success() {
            tracing::warn!(status = %response.status(), "Runtime API refused the response");
        }
    }
}
