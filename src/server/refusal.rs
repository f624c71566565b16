//! What the plumbing refuses before any protocol reads a request ([`ServerError`]: a browser's
//! request from a page or a name not allowed, a method the route does not take, a body that
//! did not arrive or does not read, no route), answered in the shape of the protocol whose
//! route was asked: each protocol gives its [`Shape`], for the routes it builds
//! ([`super::only`]) and for the paths it serves ([`Shapes`], which the checks in front of
//! routing and the 404 read). A path no protocol serves gets the plumbing's own
//! `{"message", "developer_message"}`.

use super::json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use std::sync::Arc;

/// A refusal of the plumbing's, before any protocol reads the request.
#[derive(Debug)]
pub(crate) enum ServerError {
    /// 404: no such route. The path is not repeated: nothing the caller sent comes back.
    NotFound,
    /// 405: the route exists for other methods.
    MethodNotAllowed {
        /// Value of the `Allow` header.
        allow: &'static str,
    },
    /// 403: the request is refused for where it comes from (the reason says why).
    Forbidden(&'static str),
    /// 408: the body did not arrive in time; the connection is closed.
    RequestTimeout,
    /// 400: the body could not be read (a malformed chunk).
    BodyUnreadable,
    /// 400: an HTTP/1.1 request without a `Host`, or any with two or an invalid one (RFC 9112,
    /// section 3.2: the server MUST answer 400).
    BadHost,
}

/// A protocol's answer to a [`ServerError`], in its own shape (OXP's error object, RAP's, a
/// JSON-RPC error) with the refusal's status; the plumbing adds the headers the refusal
/// carries (`Allow`, `Connection: close`).
pub(crate) type Shape = fn(&ServerError) -> Response;

impl ServerError {
    /// Its status.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::BodyUnreadable | Self::BadHost => StatusCode::BAD_REQUEST,
        }
    }

    /// Its name, for a protocol whose errors carry a kind (`forbidden`).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::Forbidden(_) => "forbidden",
            Self::RequestTimeout => "request_timeout",
            Self::BodyUnreadable => "malformed_body",
            Self::BadHost => "bad_request",
        }
    }

    /// What it says to a user.
    pub(crate) fn message(&self) -> &'static str {
        match self {
            Self::NotFound => "Not found",
            Self::MethodNotAllowed { .. } => "Method not allowed",
            Self::Forbidden(_) => "Forbidden",
            Self::RequestTimeout => "Request timeout",
            Self::BodyUnreadable => "The request body could not be read",
            Self::BadHost => "Bad request",
        }
    }

    /// What it says to a developer, and to the log.
    pub(crate) fn developer_message(&self) -> String {
        match self {
            Self::NotFound => "no route for this method and path".into(),
            Self::MethodNotAllowed { allow } => format!("this route accepts {allow}"),
            Self::Forbidden(why) => (*why).into(),
            Self::RequestTimeout => {
                "the request body did not arrive in time (OXP_BODY_READ_TIMEOUT_MS)".into()
            }
            Self::BodyUnreadable => "the request body is not well-formed HTTP".into(),
            Self::BadHost => {
                "an HTTP/1.1 request carries one valid Host header (RFC 9112, section 3.2)".into()
            }
        }
    }

    /// The answer `shape` gives, with the headers the refusal carries.
    pub(crate) fn answered(self, shape: Shape) -> Response {
        let mut response = shape(&self);
        let headers = response.headers_mut();
        match self {
            Self::MethodNotAllowed { allow } => {
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            Self::RequestTimeout => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Self::NotFound | Self::Forbidden(_) | Self::BodyUnreadable | Self::BadHost => {}
        }
        response
    }
}

impl IntoResponse for ServerError {
    /// In the plumbing's own shape.
    fn into_response(self) -> Response {
        self.answered(plain)
    }
}

/// The plumbing's own shape: `{"message", "developer_message"}`.
pub(super) fn plain(refusal: &ServerError) -> Response {
    #[derive(Serialize)]
    struct ErrorBody {
        message: &'static str,
        developer_message: String,
    }
    let body = ErrorBody {
        message: refusal.message(),
        developer_message: refusal.developer_message(),
    };
    json(refusal.status(), &body)
}

/// Which protocol's [`Shape`] answers a refusal of a request to a path, for the checks in front
/// of routing: each protocol's paths (a path and what lies under it), after the base path. One
/// `Arc` (cloned into each request's body read), none while no protocol gave a shape.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shapes(Option<Arc<Table>>);

#[derive(Debug)]
struct Table {
    paths: Vec<(&'static str, Shape)>,
    base_path: Option<String>,
}

impl Shapes {
    /// `paths` with the protocols' shapes, under `base_path` (`OXP_BASE_PATH`).
    pub(crate) fn new(paths: Vec<(&'static str, Shape)>, base_path: Option<&str>) -> Self {
        let base_path = base_path.map(str::to_owned);
        Self(Some(Arc::new(Table { paths, base_path })))
    }

    /// `refusal` of a request to `path`, in the shape of the protocol that serves it.
    pub(crate) fn answer(&self, path: &str, refusal: ServerError) -> Response {
        let shape = self.0.as_deref().and_then(|table| {
            let path = match &table.base_path {
                Some(base) => path.strip_prefix(base.as_str()).unwrap_or(path),
                None => path,
            };
            let under = |served: &str| {
                path.strip_prefix(served)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            };
            table.paths.iter().find(|(served, _)| under(served))
        });
        refusal.answered(shape.map_or(plain, |(_, shape)| *shape))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(refusal: &ServerError) -> Response {
        let mut response = plain(refusal);
        response
            .headers_mut()
            .insert("x-shape", HeaderValue::from_static("marked"));
        response
    }

    #[test]
    fn a_refusal_is_answered_in_the_shape_of_the_protocol_serving_its_path_and_under_it() {
        let shapes = Shapes::new(vec![("/mcp", marked), ("/tools", marked)], Some("/api"));
        let shaped = |path: &str| {
            let response = shapes.answer(path, ServerError::Forbidden("no"));
            assert_eq!(response.status(), StatusCode::FORBIDDEN);
            response.headers().contains_key("x-shape")
        };
        assert!(shaped("/api/mcp") && shaped("/mcp") && shaped("/api/tools/call"));
        assert!(!shaped("/api/mcpx") && !shaped("/health") && !shaped("/api/toolsx"));
    }

    #[test]
    fn the_headers_a_refusal_carries_are_added_to_any_shape() {
        let refused = ServerError::MethodNotAllowed { allow: "POST" }.answered(marked);
        assert_eq!(refused.headers()[header::ALLOW], "POST");
        let timed_out = ServerError::RequestTimeout.answered(marked);
        assert_eq!(timed_out.headers()[header::CONNECTION], "close");
        assert_eq!(timed_out.status(), StatusCode::REQUEST_TIMEOUT);
    }
}
