//! The RAP HTTP routes: discovery, acknowledgement of invocations, thread closure.
//!
//! Only a request that cannot be accepted at all is answered with an error status, with a
//! JSON body `{"error": {"kind", "message"}}`: no usable callback (body not a JSON object,
//! `id`, `group_id` or `callback_url` missing, or a callback URL the policy refuses), a body
//! over the limit (413), a content type other than JSON (415), failed authentication (401),
//! a stale `toolset_version` (409), or a queue that did not take the job (503). Everything
//! else is acknowledged with 200 and reported to the callback.

use crate::auth::Authenticator;
use crate::rap::Rap;
use crate::rap::job::{Job, Rejection, rfc3339};
use crate::rap::queue::EnqueueError;
use crate::rap::refusal::Refusal;
pub(crate) use crate::rap::refusal::refused;
use crate::rap::wire::{CancelToolCall, CloseThread, MAX_ID_CHARS, ReplyTo, is_loggable_id};
use crate::rap::{answers::user_choice_response, status::tool_call_status};
use crate::server::{
    CallContext, Refused, StrippedPrefix, guard, json, json_response, only, post_json,
};
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::handler::Handler;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use axum::{Extension, Router};
use oxp_lambda_core::principal::Principal;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// The paths RAP serves (each and what lies under it), whose refusals by the plumbing in front
/// of routing it answers in its own shape ([`refused`]).
pub(crate) const PATHS: [&str; 6] = [
    "/.well-known/rap-toolset",
    "/invoke",
    "/close_thread",
    "/cancel_tool_call",
    "/tool_call_status",
    "/user_choice_response",
];

/// `handler` as a RAP `POST` route: a body not declared JSON is 415, another method 405, each
/// in RAP's shape.
fn post<H: Handler<T, Arc<Rap>>, T: 'static>(handler: H) -> MethodRouter<Arc<Rap>> {
    let not_json = || Refusal::UnsupportedMediaType.into_response();
    post_json(handler, not_json, refused)
}

/// The RAP routes, behind `auth`.
pub(crate) fn router(rap: Arc<Rap>, auth: &Arc<Authenticator>) -> Router {
    let discovery = only(get(discover), "GET, HEAD", refused);
    let routes = Router::new()
        .route("/.well-known/rap-toolset", discovery)
        .route("/invoke", post(invoke))
        .route("/close_thread", post(close_thread))
        .route("/cancel_tool_call", post(cancel_tool_call))
        .route("/tool_call_status", post(tool_call_status))
        .route("/user_choice_response/{token}", post(user_choice_response));
    guard(routes, auth, |_: &_, refused: &Refused| match refused {
        Refused::Unauthenticated => Refusal::Unauthenticated.into_response(),
        Refused::InsufficientScope { required } => {
            Refusal::InsufficientScope(required.join(" ")).into_response()
        }
    })
    .with_state(rap)
}

async fn discover(
    State(rap): State<Arc<Rap>>,
    prefix: Option<Extension<StrippedPrefix>>,
    headers: HeaderMap,
) -> Response {
    let definition = rap
        .toolset
        .definition(endpoint(&rap, &headers, prefix.as_ref()));
    json(StatusCode::OK, &definition)
}

/// Where invocations go: `OXP_RAP_ENDPOINT`, else derived from the request.
fn endpoint(rap: &Rap, headers: &HeaderMap, prefix: Option<&Extension<StrippedPrefix>>) -> String {
    let prefix = prefix.map(|Extension(p)| p.0.as_str());
    match rap.toolset.endpoint() {
        Some(endpoint) => endpoint.to_owned(),
        None => derived_endpoint(headers, prefix, rap.policy.lambda),
    }
}

/// `<scheme>://<host><stage and base path>/invoke`, from the discovery request. The host is the
/// request's `Host` (API Gateway and Function URLs set it to the name the caller used);
/// `X-Forwarded-Host` is not read, since any caller can send it and the endpoint tells runtimes
/// where to send invocations. Behind a proxy that rewrites `Host`, set `OXP_RAP_ENDPOINT`.
fn derived_endpoint(headers: &HeaderMap, prefix: Option<&str>, lambda: bool) -> String {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or_default().trim())
            .filter(|v| !v.is_empty())
    };
    let scheme = match text("x-forwarded-proto") {
        Some("http") => "http",
        Some(_) => "https",
        None if lambda => "https",
        None => "http",
    };
    let prefix = prefix.unwrap_or_default();
    match text(header::HOST.as_str()) {
        Some(host) => format!("{scheme}://{host}{prefix}/invoke"),
        None => format!("{prefix}/invoke"),
    }
}

async fn invoke(
    State(rap): State<Arc<Rap>>,
    context: CallContext,
    prefix: Option<Extension<StrippedPrefix>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // This server's URL as the caller reached it, for the URLs a call gives out.
    let base_url = endpoint(&rap, &headers, prefix.as_ref())
        .strip_suffix("/invoke")
        .filter(|b| b.starts_with("http"))
        .map(str::to_owned);
    let caller = context.principal.subject.clone();
    match accept(&rap, context.principal, context.traceparent, base_url, body).await {
        Ok(()) => json_response(
            StatusCode::OK,
            Bytes::from_static(br#"{"status":"accepted"}"#),
        ),
        Err(refusal) => {
            // A string, escaped by the formatter: the message may quote what the caller sent.
            let reason = refusal.message();
            tracing::info!(
                target: "oxp::rap::audit",
                caller = caller.as_deref(),
                received_at = %rfc3339(crate::rap::job::unix_ms(std::time::SystemTime::now())),
                outcome = "refused",
                reason = reason.as_str(),
            );
            refusal.into_response()
        }
    }
}

/// Acknowledges an invocation: `Ok` once its job is on the queue.
async fn accept(
    rap: &Rap,
    principal: Principal,
    traceparent: Option<String>,
    base_url: Option<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(), Refusal> {
    // First, before anything is read or queued: an invocation over the caller's allowance is
    // refused (429), so one caller's traffic is neither run nor delivered to any callback.
    // Every invocation that reaches this point counts, malformed or not.
    rap.check_rate(&principal)
        .map_err(|wait| Refusal::RateLimited {
            retry_after: wait.max(Duration::from_millis(1)),
        })?;
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Refusal::TooLarge
        } else {
            Refusal::Malformed(rejection.body_text())
        }
    })?;
    let value: Value =
        serde_json::from_slice(&body).map_err(|e| Refusal::Malformed(format!("not JSON: {e}")))?;
    let Value::Object(fields) = value else {
        return Err(Refusal::Malformed("the body must be a JSON object".into()));
    };
    let reply_to = ReplyTo::from_body(&fields).ok_or(Refusal::NoCallback)?;
    rap.policy
        .check_url(&reply_to.callback_url)
        .map_err(|refused| Refusal::CallbackRefused(refused.0))?;
    if let Some(sent) = fields.get("toolset_version").and_then(Value::as_str)
        && sent != rap.toolset.version()
    {
        return Err(Refusal::StaleToolset {
            current: rap.toolset.version().to_owned(),
        });
    }
    let mut job = Job::new(reply_to);
    job.principal = principal;
    job.traceparent = traceparent;
    job.base_url = base_url;
    if job.rejected.is_none() {
        job.rejected = read_invocation(&fields, &mut job).err();
    }
    if job.rejected.is_none()
        && rap
            .toolset
            .get(job.operation.as_deref().unwrap_or_default())
            .is_none()
    {
        job.rejected = Some(Rejection::UnknownOperation);
    }
    rap.queue.enqueue(job).await.map_err(|e| match e {
        EnqueueError::Full => Refusal::Busy,
        EnqueueError::CallerFull => Refusal::CallerBusy,
        EnqueueError::TooLarge => Refusal::TooLarge,
        EnqueueError::Unavailable(why) => {
            tracing::error!(target: "oxp::rap", error = %why, "invocation not enqueued");
            Refusal::Unavailable
        }
    })
}

/// Most thread ancestors accepted.
const MAX_ANCESTORS: usize = 64;

/// Copies the invocation's fields into `job`, or says which one is malformed.
fn read_invocation(fields: &Map<String, Value>, job: &mut Job) -> Result<(), Rejection> {
    let malformed = |detail: &str| Rejection::MalformedInvocation {
        detail: detail.to_owned(),
    };
    let optional_text = |name: &str| match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.chars().count() <= MAX_ID_CHARS => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(malformed(&format!(
            "`{name}` is longer than {MAX_ID_CHARS} characters"
        ))),
        Some(_) => Err(malformed(&format!("`{name}` must be a string or null"))),
    };
    job.operation = optional_text("operation")?;
    job.user_id = optional_text("user_id")?;
    if job.operation.as_deref().is_none_or(str::is_empty) {
        return Err(malformed("`operation` is required"));
    }
    optional_text("call_id")?;
    job.arguments = match fields.get("arguments") {
        Some(Value::Object(arguments)) => Value::Object(arguments.clone()),
        None => return Err(malformed("`arguments` is required")),
        Some(_) => return Err(malformed("`arguments` must be an object")),
    };
    job.thread_ancestors = match fields.get("thread_ancestors") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.len() > MAX_ANCESTORS => {
            return Err(malformed(&format!(
                "`thread_ancestors` has more than {MAX_ANCESTORS} entries"
            )));
        }
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .filter(|s| s.chars().count() <= MAX_ID_CHARS)
                    .map(str::to_owned)
            })
            .collect::<Option<_>>()
            .ok_or_else(|| {
                malformed(&format!(
                    "`thread_ancestors` must be an array of strings of at most {MAX_ID_CHARS} characters"
                ))
            })?,
        Some(_) => return Err(malformed("`thread_ancestors` must be an array of strings")),
    };
    Ok(())
}

/// `/close_thread`: the runtime closed a thread. The published spec's body is
/// `{"thread_id"}` (this adapter's first reading took `{"group_id"}`, still accepted); the answer
/// is 200 whatever the body, as the spec requires. The subscriptions the caller opened in the
/// thread end; tools keep their own state.
async fn close_thread(
    State(rap): State<Arc<Rap>>,
    context: CallContext,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let thread = body
        .ok()
        .and_then(|b| crate::server::object::<CloseThread>(&b))
        .and_then(|c| c.thread_id.or(c.group_id))
        .filter(|id| is_loggable_id(id));
    // The thread's subscriptions end with it.
    let ended = match &thread {
        Some(thread) => {
            rap.talk
                .close(context.principal.subject.as_deref(), thread)
                .await
        }
        None => 0,
    };
    tracing::info!(
        target: "oxp::rap",
        thread_id = thread.as_deref(),
        outcome = if thread.is_some() { "closed" } else { "malformed" },
        subscriptions_ended = ended,
        "thread closed"
    );
    json_response(StatusCode::OK, Bytes::from_static(br#"{"status":"ok"}"#))
}

/// `/cancel_tool_call`: fires the signal of the named invocation if it runs here for this
/// caller. Always 200 with an empty body, whatever the body held and whether the call was
/// found, as the published spec requires (the notification is advisory and fire-and-forget).
async fn cancel_tool_call(
    State(rap): State<Arc<Rap>>,
    context: CallContext,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let subject = context.principal.subject.as_deref();
    let request = body.ok().and_then(|b| CancelToolCall::of_body(&b));
    let outcome = match &request {
        None => "malformed",
        Some(c) => {
            // Marked for a call another process runs (only a call this server still tracks: a
            // cancellation of calls that never existed keeps nothing), and its subscriptions
            // ended, whatever runs here.
            let tracked = rap
                .alive(subject, &c.thread_id, &c.tool_call_id)
                .await
                .unwrap_or(true);
            let subscribed = tracked
                && rap
                    .talk
                    .cancel(subject, &c.thread_id, &c.tool_call_id)
                    .await;
            if rap.running.cancel(subject, &c.thread_id, &c.tool_call_id) {
                "cancelled"
            } else if subscribed {
                "subscription_cancelled"
            } else {
                "not_running"
            }
        }
    };
    // Ids only when well-formed (bounded); never the body.
    tracing::info!(
        target: "oxp::rap::audit",
        thread_id = request.as_ref().map(|c| c.thread_id.as_str()),
        id = request.as_ref().map(|c| c.tool_call_id.as_str()),
        outcome,
        "cancel_tool_call"
    );
    json_response(StatusCode::OK, Bytes::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_follows_the_discovery_request() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "abc.execute-api.example".parse().unwrap());
        assert_eq!(
            derived_endpoint(&headers, Some("/prod"), true),
            "https://abc.execute-api.example/prod/invoke"
        );
        headers.insert("x-forwarded-proto", "http".parse().unwrap());
        assert_eq!(
            derived_endpoint(&headers, None, true),
            "http://abc.execute-api.example/invoke"
        );
        assert_eq!(derived_endpoint(&HeaderMap::new(), None, false), "/invoke");
    }

    #[test]
    fn a_forwarded_host_from_the_caller_does_not_move_the_endpoint() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "abc.execute-api.example".parse().unwrap());
        headers.insert("x-forwarded-host", "attacker.example".parse().unwrap());
        assert_eq!(
            derived_endpoint(&headers, None, true),
            "https://abc.execute-api.example/invoke"
        );
    }
}
