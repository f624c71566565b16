//! Every error the OXP adapter answers, mapped to a response in one place.

use super::wire::{
    AuthorizationChallenge, MissingRequirements, OXP_1_0, ServerErrorResponse,
    ValidationErrorResponse,
};
use crate::server::{ServerError, json};
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use oxp_lambda_core::invoke::Rejection;
use oxp_lambda_core::refusal::Missing;
use oxp_lambda_core::schema::ParameterErrors;

/// An OXP error answer.
#[derive(Debug)]
pub(crate) enum ApiError {
    /// 400 `ServerErrorResponse`: an error before the tool ran.
    BadRequest {
        /// User-facing message.
        message: String,
        /// Developer detail.
        developer_message: Option<String>,
        /// What the caller must supply, when that is the problem.
        missing_requirements: Option<MissingRequirements>,
    },
    /// 422 `ValidationErrorResponse`.
    Validation(ParameterErrors),
    /// 400: the body is over the configured limit.
    PayloadTooLarge,
    /// 400: the content type is not JSON (refused still: browsers send forms without asking).
    UnsupportedMediaType,
    /// 401 with `WWW-Authenticate: Bearer`, as the published OpenAPI has it: missing or invalid
    /// credentials (which check failed is never said).
    Unauthenticated,
    /// 403 with `WWW-Authenticate: Bearer error="insufficient_scope"`: the token is valid but
    /// lacks scopes the server requires of every call (`OXP_REQUIRED_SCOPES`), named.
    InsufficientScope(Vec<String>),
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
            missing_requirements: None,
        }
    }
}

impl From<Rejection> for ApiError {
    /// The core's classification decides; only a refusal no retry can fix comes here (the
    /// call route answers the retryable ones as retryable failures).
    fn from(rejection: Rejection) -> Self {
        match rejection {
            Rejection::InvalidInput(errors) => Self::Validation(errors),
            // The tool's own scopes, as the server-wide ones: 403 naming them.
            Rejection::Missing(Missing::CallerScopes(scopes)) => Self::InsufficientScope(scopes),
            Rejection::Missing(Missing::UserId) => Self::BadRequest {
                message: rejection.user_message(),
                developer_message: Some(rejection.developer_detail()),
                missing_requirements: Some(MissingRequirements {
                    user_id: Some(true),
                    authorization: None,
                }),
            },
            Rejection::Missing(Missing::Authorization {
                challenge: Some(ref c),
                ..
            }) => Self::BadRequest {
                message: rejection.user_message(),
                developer_message: Some(rejection.developer_detail()),
                missing_requirements: Some(MissingRequirements {
                    user_id: None,
                    authorization: Some(vec![AuthorizationChallenge {
                        id: c.provider.clone(),
                        url: c.url.clone(),
                        check_url: Some(c.check_url.clone()),
                    }]),
                }),
            },
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

/// What the plumbing refuses on an OXP route (a browser's request, another method, a body
/// that did not arrive), as OXP answers an error before the tool ran: a `ServerErrorResponse`
/// with the refusal's status.
pub(crate) fn refused(refusal: &ServerError) -> Response {
    let body = ServerErrorResponse {
        schema: OXP_1_0.into(),
        message: refusal.message().into(),
        developer_message: Some(refusal.developer_message()),
        missing_requirements: None,
    };
    json(refusal.status(), &body)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message, developer_message, missing_requirements) = match self {
            Self::BadRequest {
                message,
                developer_message,
                missing_requirements,
            } => (
                StatusCode::BAD_REQUEST,
                message,
                developer_message,
                missing_requirements,
            ),
            Self::Validation(parameter_errors) => {
                let body = ValidationErrorResponse {
                    schema: OXP_1_0.into(),
                    message: "Some input parameters are invalid".into(),
                    parameter_errors: Some(parameter_errors),
                };
                return json(StatusCode::UNPROCESSABLE_ENTITY, &body);
            }
            Self::PayloadTooLarge => (
                StatusCode::BAD_REQUEST,
                "The request body is too large".into(),
                Some("the body is over the server's limit (OXP_MAX_BODY_BYTES)".into()),
                None,
            ),
            Self::Unauthenticated => {
                let body = ServerErrorResponse {
                    schema: OXP_1_0.into(),
                    message: "Authentication failed".into(),
                    developer_message: Some(
                        "this server requires valid credentials (Authorization: Bearer <token>)"
                            .into(),
                    ),
                    missing_requirements: None,
                };
                let mut response = json(StatusCode::UNAUTHORIZED, &body);
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return response;
            }
            Self::InsufficientScope(required) => {
                let body = ServerErrorResponse {
                    schema: OXP_1_0.into(),
                    message: "Not allowed: the credentials lack a required scope".into(),
                    developer_message: Some(format!(
                        "this server requires tokens granting the scopes: {}",
                        required.join(" ")
                    )),
                    missing_requirements: None,
                };
                let mut response = json(StatusCode::FORBIDDEN, &body);
                let challenge = format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{}\"",
                    required.join(" ")
                );
                if let Ok(value) = HeaderValue::from_str(&challenge) {
                    response
                        .headers_mut()
                        .insert(header::WWW_AUTHENTICATE, value);
                }
                return response;
            }
            Self::UnsupportedMediaType => (
                StatusCode::BAD_REQUEST,
                "The request body must be JSON".into(),
                Some("send Content-Type: application/json".into()),
                None,
            ),
        };
        let body = ServerErrorResponse {
            schema: OXP_1_0.into(),
            message,
            developer_message,
            missing_requirements,
        };
        json(status, &body)
    }
}
