//! `POST /tool_call_status` (published `basic/tool-call-status.md`): a runtime that restarted
//! asks whether this server still tracks a call, `{"thread_id", "tool_call_id"}`, and prunes
//! every call answered `{"alive": false}`.
//!
//! Alive: an invocation of the call accepted and not yet answered (the runner's work, in any
//! process sharing the state store, right after a restart too), or a live subscription the
//! call opened. Read-only, behind the same authentication as `/invoke`, the caller's own calls
//! only (another caller's is unknown), and nothing but `alive` in the answer.
//!
//! | case | answer |
//! |---|---|
//! | tracked | 200 `{"alive": true}` |
//! | unknown, finished, cancelled, another caller's | 200 `{"alive": false}` |
//! | a body that is not `{"thread_id": string, "tool_call_id": string}` | 400 (the runtime prunes: it asked nothing) |
//! | over the caller's rate | 503 with `Retry-After` (a runtime keeps a call whose status is unknown; a 4xx would prune it) |
//! | the store did not answer | 503 (likewise) |

use crate::rap::Rap;
use crate::rap::refusal::error_response as refused;
use crate::rap::wire::CancelToolCall;
use crate::server::{CallContext, json_response};
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use governor::{DefaultKeyedRateLimiter, Quota};
use http::{HeaderValue, StatusCode, header};
use std::num::NonZeroU32;
use std::sync::Arc;

/// Status checks one caller may make: a runtime that restarts asks about every call it still
/// waits on, at once.
const PER_SECOND: NonZeroU32 = NonZeroU32::new(50).expect("not zero");
const BURST: NonZeroU32 = NonZeroU32::new(500).expect("not zero");

/// The limiter of status checks, per caller.
pub(crate) fn limiter() -> DefaultKeyedRateLimiter<String> {
    DefaultKeyedRateLimiter::keyed(Quota::per_second(PER_SECOND).allow_burst(BURST))
}

fn unknown_now(kind: &str, message: &str) -> Response {
    let mut response = refused(StatusCode::SERVICE_UNAVAILABLE, kind, message);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

pub(crate) async fn tool_call_status(
    State(rap): State<Arc<Rap>>,
    context: CallContext,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let subject = context.principal.subject.as_deref();
    let Some(request) = body.ok().and_then(|b| CancelToolCall::of_body(&b)) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "malformed_request",
            "The body must be {\"thread_id\": string, \"tool_call_id\": string}",
        );
    };
    if rap
        .status_limiter
        .check_key(&subject.unwrap_or_default().to_owned())
        .is_err()
    {
        return unknown_now("rate_limited", "Too many status checks; ask again shortly");
    }
    match rap
        .alive(subject, &request.thread_id, &request.tool_call_id)
        .await
    {
        Ok(alive) => {
            tracing::info!(target: "oxp::rap::audit", thread_id = request.thread_id.as_str(), id = request.tool_call_id.as_str(), alive, "tool_call_status");
            let body: &'static [u8] = match alive {
                true => br#"{"alive":true}"#,
                false => br#"{"alive":false}"#,
            };
            json_response(StatusCode::OK, Bytes::from_static(body))
        }
        Err(e) => {
            tracing::warn!(target: "oxp::rap", error = %e, "tool_call_status not answered");
            unknown_now(
                "unavailable",
                "The call's status cannot be read now; ask again",
            )
        }
    }
}
