//! Why a RAP request is not accepted (the routes' one error type), mapped to its response in
//! one place: the status, the `{"error": {"kind", "message", ...}}` body, and the headers
//! (`Retry-After`, `WWW-Authenticate`) each refusal carries.

use crate::rap::job::error;
use crate::rap::wire::{ErrorBody, ErrorText, MAX_ID_CHARS};
use crate::server::{ServerError, json};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::time::Duration;

/// Why a request is not accepted, mapped to a response in one place.
#[derive(Debug)]
pub(crate) enum Refusal {
    UnsupportedMediaType,
    TooLarge,
    Malformed(String),
    NoCallback,
    CallbackRefused(String),
    StaleToolset { current: String },
    Unauthenticated,
    InsufficientScope(String),
    Unavailable,
    Busy,
    CallerBusy,
    RateLimited { retry_after: Duration },
}

impl Refusal {
    pub(crate) fn message(&self) -> String {
        match self {
            Self::UnsupportedMediaType => {
                "The body must be JSON (Content-Type: application/json)".into()
            }
            Self::TooLarge => "The invocation is too large".into(),
            Self::Malformed(why) => {
                format!("The body cannot be read, and has no callback to report to: {why}")
            }
            Self::NoCallback => format!(
                "The invocation has no usable callback: `id` and `group_id` must be non-empty strings of at most {MAX_ID_CHARS} characters, and `callback_url` one of at most {} characters",
                crate::rap::wire::MAX_URL_CHARS
            ),
            Self::CallbackRefused(why) => format!("The callback URL is not allowed: {why}"),
            Self::StaleToolset { current } => format!(
                "The toolset has changed; reload /.well-known/rap-toolset (current version {current})"
            ),
            Self::Unauthenticated => "Authentication failed".into(),
            Self::InsufficientScope(required) => {
                format!("Not allowed: the token must grant the scopes {required}")
            }
            Self::Unavailable => "The invocation could not be queued; retry later".into(),
            Self::Busy => "The server has too many invocations in progress; retry shortly".into(),
            Self::CallerBusy => {
                "This caller has too many invocations in progress, or MCP tasks running or kept (a task counts until its result expires, an hour after it ends); retry once some have ended"
                    .into()
            }
            Self::RateLimited { .. } => {
                "Too many invocations for this caller; retry after the time Retry-After gives"
                    .into()
            }
        }
    }
}

/// `{"error": {"kind", "message", "can_retry": false}}` with `status`: a request a route refuses.
pub(crate) fn error_response(
    status: StatusCode,
    kind: &str,
    message: impl Into<String>,
) -> Response {
    let error = error(kind, message.into());
    json(status, &ErrorText { error })
}

/// What the plumbing refuses on a RAP route (a browser's request, another method, a body that
/// did not arrive, a request without one valid `Host`), in RAP's error shape with the refusal's
/// status and kind (`forbidden`, `method_not_allowed`, `request_timeout`, `malformed_body`,
/// `bad_request`).
pub(crate) fn refused(refusal: &ServerError) -> Response {
    error_response(
        refusal.status(),
        refusal.kind(),
        refusal.developer_message(),
    )
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, kind) = match &self {
            Self::UnsupportedMediaType => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            Self::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            Self::Malformed(_) | Self::NoCallback => {
                (StatusCode::BAD_REQUEST, "malformed_invocation")
            }
            Self::CallbackRefused(_) => (StatusCode::BAD_REQUEST, "callback_refused"),
            Self::StaleToolset { .. } => (StatusCode::CONFLICT, "stale_toolset"),
            Self::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
            Self::InsufficientScope(_) => (StatusCode::FORBIDDEN, "insufficient_scope"),
            Self::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Self::Busy => (StatusCode::SERVICE_UNAVAILABLE, "busy"),
            Self::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            Self::CallerBusy => (StatusCode::TOO_MANY_REQUESTS, "caller_busy"),
        };
        let retry_after = match &self {
            Self::RateLimited { retry_after } => Some(*retry_after),
            _ => None,
        };
        let body = ErrorText {
            error: ErrorBody {
                can_retry: matches!(
                    self,
                    Self::Unavailable | Self::Busy | Self::CallerBusy | Self::RateLimited { .. }
                ),
                retry_after_ms: retry_after
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                ..error(kind, self.message())
            },
        };
        let mut response = json(status, &body);
        if matches!(self, Self::Busy | Self::CallerBusy) {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        if let Some(wait) = retry_after {
            // Whole seconds, rounded up: `Retry-After` has no finer unit.
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
        }
        if matches!(self, Self::Unauthenticated) {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        if let Self::InsufficientScope(required) = &self
            && let Ok(value) = header::HeaderValue::from_str(&format!(
                "Bearer error=\"insufficient_scope\", scope=\"{required}\""
            ))
        {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}
