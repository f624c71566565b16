//! Direct invocations (the AgentCore Gateway Lambda target and Bedrock Agents action group
//! roles): the Runtime API loop with `lambda_runtime_api_client`, the client `lambda_runtime`
//! itself uses. A protocol served this way is a [`DirectHandler`] value.
//!
//! Not `lambda_runtime::run`: it parses the client context into a map of strings before the
//! handler runs, and a context it cannot parse (a gateway's `custom` entry that is a number or
//! an object) ends the process without an answer. Here the raw header goes to the adapter,
//! and every invocation gets an answer. With `AWS_LAMBDA_MAX_CONCURRENCY` (Lambda Managed
//! Instances) that many invocations are served at once; elsewhere one at a time.

use http::{HeaderMap, Request};
use http_body_util::BodyExt;
use lambda_runtime_api_client::{Client, body::Body};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A protocol invoked directly by an AWS service: the raw event and client context in, the
/// JSON answer out. Every event gets an answer (never a function error), so the caller always
/// learns why.
pub(crate) trait DirectHandler: Send + Sync {
    /// Answers one event; `deadline` is the invocation's, less the margin.
    fn handle<'a>(
        &'a self,
        event: &'a [u8],
        client_context: Option<&'a [u8]>,
        deadline: Option<Instant>,
    ) -> Pin<Box<dyn Future<Output = Value> + Send + 'a>>;

    /// The answer to an event over the size limit.
    fn too_large(&self) -> Value;
}

const NEXT: &str = "/2018-06-01/runtime/invocation/next";
/// What a Runtime API event may not be larger than (Lambda's own limit is 6 MB).
const MAX_EVENT_BYTES: usize = 7 * 1024 * 1024;

/// Serves invocations until the environment ends; an error is a Runtime API that stopped
/// answering.
/// Events over `max_bytes` (`OXP_MAX_BODY_BYTES`, as for every other transport) are answered
/// "too large" without being read further.
pub(crate) async fn run(
    served: Arc<dyn DirectHandler>,
    margin: Duration,
    max_bytes: usize,
) -> Result<(), lambda_http::Error> {
    let client = Arc::new(Client::builder().build()?);
    let workers = std::env::var("AWS_LAMBDA_MAX_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 1)
        .unwrap_or(1);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..workers {
        tasks.spawn(serve(
            client.clone(),
            served.clone(),
            margin,
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

async fn serve(
    client: Arc<Client>,
    served: Arc<dyn DirectHandler>,
    margin: Duration,
    max_bytes: usize,
) -> Result<(), lambda_http::Error> {
    loop {
        let next = client.call(Request::get(NEXT).body(Body::empty())?).await?;
        let (parts, body) = next.into_parts();
        let event = http_body_util::Limited::new(body, max_bytes)
            .collect()
            .await
            .map(|b| b.to_bytes());
        let Some(request_id) = header(&parts.headers, "lambda-runtime-aws-request-id") else {
            tracing::error!("Runtime API event without a request id: skipped");
            continue;
        };
        let request_id = request_id.to_owned();
        let answer = match event {
            Ok(event) => {
                let deadline = deadline(&parts.headers, margin);
                let context = parts
                    .headers
                    .get("lambda-runtime-client-context")
                    .map(|v| v.as_bytes());
                crate::observe::invocation(
                    &request_id,
                    header(&parts.headers, "lambda-runtime-trace-id"),
                    header(&parts.headers, "lambda-runtime-aws-tenant-id"),
                    served.handle(&event, context, deadline),
                )
                .await
            }
            Err(_) => served.too_large(),
        };
        let body = serde_json::to_vec(&answer)?;
        let path = format!("/2018-06-01/runtime/invocation/{request_id}/response");
        let response = client
            .call(
                Request::post(path)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(Body::from(body))?,
            )
            .await?;
        if !response.status().is_success() {
            tracing::warn!(status = %response.status(), "Runtime API refused the response");
        }
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The invocation's deadline (`Lambda-Runtime-Deadline-Ms`, epoch milliseconds) less `margin`.
fn deadline(headers: &HeaderMap, margin: Duration) -> Option<Instant> {
    let at_ms: u64 = header(headers, "lambda-runtime-deadline-ms")?
        .parse()
        .ok()?;
    let now_ms = u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .ok()?
            .as_millis(),
    )
    .ok()?;
    let remaining = Duration::from_millis(at_ms.saturating_sub(now_ms));
    Some(Instant::now() + remaining.saturating_sub(margin))
}
