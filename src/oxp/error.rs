//! Every error the OXP adapter answers, mapped to a response in one place.

use super::wire::{OXP_1_0, ServerErrorResponse, ValidationErrorResponse};
use crate::core::invoke::Rejection;
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

impl From<Rejection> for ApiError {
    /// The core's classification decides; only a refusal no retry can fix comes here (the
    /// call route answers the retryable ones as retryable failures).
    fn from(rejection: Rejection) -> Self {
        match rejection {
            Rejection::InvalidInput(errors) => Self::Validation(errors),
            other => Self::bad_request(other.user_message(), other.developer_detail()),
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
