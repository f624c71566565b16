//! Every error the OXP adapter answers, mapped to a response in one place.

use super::wire::{OXP_1_0, ServerErrorResponse, ValidationErrorResponse};
use crate::core::invoke::Rejection;
use crate::core::registry::ResolveError;
use crate::core::schema::ParameterErrors;
use crate::server::json;
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

/// An OXP error answer.
#[derive(Debug)]
pub(crate) enum ApiError {
    /// 400 `ServerErrorResponse`: an error before the tool ran.
    BadRequest {
        /// User-facing message.
        message: String,
        /// Developer detail.
        developer_message: Option<String>,
    },
    /// 422 `ValidationErrorResponse`.
    Validation(ParameterErrors),
    /// 413: the body is over the configured limit.
    PayloadTooLarge,
    /// 415: the content type is not JSON.
    UnsupportedMediaType,
    /// 400 with `WWW-Authenticate: Bearer`: missing or invalid credentials (which check failed
    /// is never said).
    Unauthenticated,
}

impl ApiError {
    /// A 400 with a user and a developer message.
    pub(crate) fn bad_request(
        message: impl Into<String>,
        developer_message: impl Into<String>,
    ) -> Self {
        Self::BadRequest {
            message: message.into(),
            developer_message: Some(developer_message.into()),
        }
    }
}

/// The user-facing message of a tool selector that resolved to nothing: OXP names tools by
/// their listing name.
fn unresolved(e: &ResolveError) -> String {
    match e {
        ResolveError::Malformed { tool_id, .. } => format!("Tool ID '{tool_id}' is not valid"),
        ResolveError::UnknownTool { name, .. } => format!(
            "Tool '{}' was not found",
            crate::core::naming::listing_name(name)
        ),
        ResolveError::UnknownVersion { listing_name, .. } => {
            format!("Tool '{listing_name}' was not found")
        }
    }
}

impl From<Rejection> for ApiError {
    fn from(rejection: Rejection) -> Self {
        match rejection {
            Rejection::Resolve(e) => Self::bad_request(unresolved(&e), e.to_string()),
            Rejection::UserBinding(e) => Self::bad_request(e.user_message(), e.developer_message()),
            Rejection::Missing(m) => Self::bad_request(m.user_message(), m.developer_message()),
            Rejection::InvalidInput(errors) => Self::Validation(errors),
            Rejection::KeyReused(key) => Self::bad_request(
                "This call ID was already used for a different call",
                format!(
                    "call_id '{key}' was used with another tool, input or user; use a new call_id"
                ),
            ),
            Rejection::Store(e) => Self::bad_request(
                "The tool server is temporarily unavailable; try again later",
                e.to_string(),
            ),
            Rejection::Busy { .. } => Self::bad_request(
                "The tool server is busy; try again shortly",
                "no free execution slot within the time limit (OXP_MAX_CONCURRENT_CALLS)",
            ),
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(rejection: BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::PayloadTooLarge
        } else {
            Self::bad_request("The request body could not be read", rejection.body_text())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message, developer_message) = match self {
            Self::BadRequest {
                message,
                developer_message,
            } => (StatusCode::BAD_REQUEST, message, developer_message),
            Self::Validation(parameter_errors) => {
                let body = ValidationErrorResponse {
                    schema: OXP_1_0.into(),
                    message: "Some input parameters are invalid".into(),
                    parameter_errors: Some(parameter_errors),
                };
                return json(StatusCode::UNPROCESSABLE_ENTITY, &body);
            }
            Self::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "The request body is too large".into(),
                Some("the body is over the server's limit (OXP_MAX_BODY_BYTES)".into()),
            ),
            Self::Unauthenticated => {
                let body = ServerErrorResponse {
                    schema: OXP_1_0.into(),
                    message: "Authentication failed".into(),
                    developer_message: Some(
                        "this server requires valid credentials (Authorization: Bearer <token>)"
                            .into(),
                    ),
                };
                let mut response = json(StatusCode::BAD_REQUEST, &body);
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return response;
            }
            Self::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "The request body must be JSON".into(),
                Some("send Content-Type: application/json".into()),
            ),
        };
        let body = ServerErrorResponse {
            schema: OXP_1_0.into(),
            message,
            developer_message,
        };
        json(status, &body)
    }
}
