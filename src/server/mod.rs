//! HTTP plumbing that knows no protocol: JSON responses, the content-type check, the body
//! limit, the authentication layer, path-prefix stripping, `/health` and the 404; the call
//! context every protocol reads from a request ([`CallContext`]), the Lambda roles a protocol
//! may serve ([`LambdaRole`]) and the one reader of wire objects ([`Object`]). Protocol
//! adapters bring their own routers and error shapes; [`assemble`] puts them behind this.

mod context;
mod cors;
mod loopback;
mod object;
#[cfg(feature = "lambda-records")]
mod records;
#[cfg(not(feature = "lambda-records"))]
#[path = "records_off.rs"]
mod records;
mod refusal;
mod roles;
mod strip;

pub use context::{CallContext, Deadline};
pub(crate) use loopback::{is_loopback_host, is_own_loopback_origin, same_loopback_origin};
pub(crate) use object::{Object, object, objects, optional_object};
pub(crate) use records::{Records, records_role};
pub(crate) use refusal::{ServerError, Shape, Shapes};
pub(crate) use roles::RoleKind;
pub use roles::{BoxFuture, DirectHandler, Handled, LambdaRole, RecordHandler, WORKER};

pub(crate) use strip::StripPrefix;
#[cfg(any(feature = "rap", feature = "mcp"))]
pub(crate) use strip::StrippedPrefix;
#[cfg(feature = "lambda")]
pub(crate) use strip::strip_front;

use crate::auth::Authenticator;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::DefaultBodyLimit;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{MethodRouter, get};
use futures_util::future::{Either, Ready, ready};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Serialize;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The complete HTTP app: every adapter's routes behind the plumbing, and CORS for the allowed
/// origins' pages (none without them: no layer, no `Vary`).
pub(crate) type HttpApp = tower::util::Either<tower_http::cors::Cors<Routed>, Routed>;

/// The routes behind the body limit and the base-path stripping.
type Routed = StripPrefix<<DefaultBodyLimit as tower::Layer<Router>>::Service>;

/// Puts the adapters' `routes` behind `/health`, the 404 fallback (in the shape of the protocol
/// whose path it is under, `shapes`), the body limit and the base-path stripping, with CORS for
/// the pages of `allowed_origins`.
pub(crate) fn assemble(
    routes: Router,
    shapes: Shapes,
    max_body_bytes: usize,
    base_path: Option<&str>,
    allowed_origins: &[String],
) -> HttpApp {
    // A service, not a handler: a handler's extractor (the URI) linked axum-core's extraction
    // into the functions that serve no HTTP, whose build calls this too.
    let not_found = tower::service_fn(move |request: axum::extract::Request| {
        let answer = shapes.answer(request.uri().path(), ServerError::NotFound);
        std::future::ready(Ok::<_, Infallible>(answer))
    });
    let router = Router::new()
        .route("/health", only(get(health), "GET, HEAD", refusal::plain))
        .merge(routes)
        .fallback_service(not_found);
    // Around the router, not `Router::layer`: that wraps every route in a boxed service of its
    // own, cloned and its future boxed again on every request.
    let routed = StripPrefix {
        inner: tower::Layer::layer(&DefaultBodyLimit::max(max_body_bytes), router),
        base_path: base_path.map(Arc::from),
    };
    // Outermost: a preflight is answered before the base path, the body limit or a route.
    tower::Layer::layer(
        &tower::util::option_layer(cors::layer(allowed_origins)),
        routed,
    )
}

/// `route`, answering 405 with `Allow: allow` for other methods, in the protocol's `shape`.
pub(crate) fn only<S: Clone + Send + Sync + 'static>(
    route: MethodRouter<S>,
    allow: &'static str,
    shape: Shape,
) -> MethodRouter<S> {
    route.fallback(move || async move { ServerError::MethodNotAllowed { allow }.answered(shape) })
}

/// Why the authentication layer refused a request; each protocol answers it in its own shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// No credentials, or credentials that do not verify (401). Says nothing more: the reason
    /// is logged for the operator.
    Unauthenticated,
    /// Valid credentials whose token lacks scopes the server requires of every call
    /// (`OXP_REQUIRED_SCOPES`): 403, naming them (they are the server's, not the caller's).
    InsufficientScope {
        /// Every scope the server requires.
        required: Vec<String>,
    },
}

/// `router` behind authentication: the caller's principal goes into the request extensions,
/// and a request that fails, or whose token lacks a required scope, gets `refuse(request, why)`
/// (each protocol has its own answer). One rule for every route behind it, whichever
/// protocol's. Without authentication there is no layer at all.
pub(crate) fn guard<S, R>(router: Router<S>, auth: &Arc<Authenticator>, refuse: R) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    R: Fn(&axum::extract::Request, &Refused) -> Response + Clone + Send + Sync + 'static,
{
    if auth.is_none() {
        return router;
    }
    let auth = auth.clone();
    router.route_layer(middleware::from_fn(
        move |mut request: axum::extract::Request, next: Next| {
            let auth = auth.clone();
            let refuse = refuse.clone();
            async move {
                match auth
                    .authenticate(request.headers(), request.extensions())
                    .await
                {
                    Ok(authenticated) => {
                        let missing = auth.missing_scopes(&authenticated);
                        if !missing.is_empty() {
                            tracing::info!(target: "oxp::auth", outcome = "insufficient_scope", missing = missing.join(" ").as_str());
                            return refuse(
                                &request,
                                &Refused::InsufficientScope {
                                    required: auth.required_scopes().to_vec(),
                                },
                            );
                        }
                        // The caller carries its token's scopes to the call: a tool may require
                        // some of its own.
                        let mut principal = authenticated.principal;
                        principal.scopes = authenticated.scopes.as_ref().map(|g| g.0.clone());
                        request.extensions_mut().insert(principal);
                        if let Some(scopes) = authenticated.scopes {
                            request.extensions_mut().insert(scopes);
                        }
                        next.run(request).await
                    }
                    Err(reason) => {
                        // The reason is for operators only; it never includes the token.
                        // A string, escaped by the formatter (a token's header can quote text).
                        tracing::info!(target: "oxp::auth", outcome = "unauthenticated", reason = reason.0.as_str());
                        let mut refused = refuse(&request, &Refused::Unauthenticated);
                        if presents_bearer(request.headers()) {
                            invalid_token(refused.headers_mut());
                        }
                        refused
                    }
                }
            }
        },
    ))
}

/// Whether a request sent a bearer token (`Authorization: Bearer ...`).
fn presents_bearer(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().get(..7))
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
}

/// RFC 6750 3.1 (OAuth 2.1 5.3, which MCP's authorization names): a request whose token
/// failed gets `error="invalid_token"` in its bearer challenge, whichever protocol wrote the
/// challenge; one without a token gets none, so a client can tell a token to refresh from
/// one to get. Nothing says why the token failed.
fn invalid_token(headers: &mut http::HeaderMap) {
    let header = http::header::WWW_AUTHENTICATE;
    let Some(rest) = headers
        .get(&header)
        .and_then(|v| v.to_str().ok()?.strip_prefix("Bearer"))
    else {
        return;
    };
    let params = rest.trim_start();
    let challenge = match params {
        "" => "Bearer error=\"invalid_token\"".to_owned(),
        params => format!("Bearer error=\"invalid_token\", {params}"),
    };
    if let Ok(value) = http::HeaderValue::from_str(&challenge) {
        headers.insert(header, value);
    }
}

/// `router` accepting a body only as JSON: a `POST`, `PUT` or `PATCH` whose content type is not
/// JSON gets `refuse()` (each protocol has its own answer).
///
/// A browser sends a cross-origin request without asking the server first (no CORS
/// preflight) only with a "simple" content type (none, `text/plain`, a form): requiring JSON on
/// every route of every adapter keeps any web page the developer visits from calling a local
/// server with its server-held secrets.
pub(crate) fn json_only<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    refuse: fn() -> Response,
) -> Router<S> {
    router.route_layer(JsonOnly { inner: (), refuse })
}

/// `handler` as a `POST` route ([`only`]: 405 for other methods, in the protocol's `shape`) that
/// accepts a body only as JSON, as [`json_only`] has a router's routes do: the same layer, put
/// on the handler itself. The built-in protocols take their routes this way:
/// `Router::route_layer` wraps each route in a boxed service of its own, cloned and its future
/// boxed again on every request (about 660 instructions a call), where a handler's layer is
/// boxed with the handler, once.
pub(crate) fn post_json<H, T, S>(
    handler: H,
    refuse: fn() -> Response,
    shape: Shape,
) -> MethodRouter<S>
where
    H: axum::handler::Handler<T, S>,
    T: 'static,
    S: Clone + Send + Sync + 'static,
{
    let json_only = JsonOnly { inner: (), refuse };
    only(
        axum::routing::post(axum::handler::Handler::layer(handler, json_only)),
        "POST",
        shape,
    )
}

/// The layer (`inner: ()`) and the service of [`json_only`] and [`post_json`]: a check and the
/// route's own future, where axum's `from_fn` boxed a future of its own, boxed the route again
/// for `Next` and cloned it, on every call of every protocol (about 1,000 instructions a call).
#[derive(Clone)]
struct JsonOnly<S> {
    inner: S,
    refuse: fn() -> Response,
}

impl<S> tower::Layer<S> for JsonOnly<()> {
    type Service = JsonOnly<S>;

    fn layer(&self, inner: S) -> JsonOnly<S> {
        JsonOnly {
            inner,
            refuse: self.refuse,
        }
    }
}

impl<S> tower::Service<axum::extract::Request> for JsonOnly<S>
where
    S: tower::Service<axum::extract::Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: axum::extract::Request) -> Self::Future {
        let with_body = matches!(
            *request.method(),
            http::Method::POST | http::Method::PUT | http::Method::PATCH
        );
        let encoded = is_encoded(request.headers());
        if !with_body || (is_json(request.headers()) && !encoded) {
            return Either::Right(self.inner.call(request));
        }
        let mut refused = (self.refuse)();
        if encoded {
            // RFC 9110 15.5.16: the codings that would have been taken (none but the body).
            let identity = HeaderValue::from_static("identity");
            refused
                .headers_mut()
                .insert(header::ACCEPT_ENCODING, identity);
        }
        Either::Left(ready(Ok(refused)))
    }
}

/// Whether the body has a content coding (`Content-Encoding: gzip`): none is taken, so such a
/// body is refused as not JSON, where it would fail to parse as one.
fn is_encoded(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONTENT_ENCODING)
        .iter()
        .any(|value| {
            let value = value.to_str().unwrap_or("?");
            value
                .split(',')
                .map(str::trim)
                .any(|coding| !coding.is_empty() && !coding.eq_ignore_ascii_case("identity"))
        })
}

/// The media type of the body, without its parameters (`application/json` of
/// `application/json; charset=utf-8`), as sent: compare it without case. `None` without a
/// content type; empty for one that is not text.
pub(crate) fn media_type(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().unwrap_or("");
    Some(value.split(';').next().unwrap_or("").trim())
}

/// Whether the content type is JSON (`application/json`, `application/*+json`).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let Some(essence) = media_type(headers) else {
        return false;
    };
    let essence = essence.as_bytes();
    // Compared without case and without a lowercased copy: this runs on every call.
    let (type_, suffix) = ("application/".as_bytes(), "+json".as_bytes());
    essence.eq_ignore_ascii_case(b"application/json")
        || (essence.len() >= type_.len() + suffix.len()
            && essence[..type_.len()].eq_ignore_ascii_case(type_)
            && essence[essence.len() - suffix.len()..].eq_ignore_ascii_case(suffix))
}

pub(crate) use oxp_lambda_core::naming::shown;

/// A JSON response with `body`.
pub(crate) fn json_response(status: StatusCode, body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `body` serialized as a JSON response.
pub(crate) fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    // Most answers fit; growing from empty would copy the buffer several times.
    let mut bytes = Vec::with_capacity(256);
    match serde_json::to_writer(&mut bytes, body) {
        Ok(()) => json_response(status, Bytes::from(bytes)),
        // Wire types hold serde_json values, which cannot hold a non-finite float: a last
        // resort that still answers JSON.
        Err(_) => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            Bytes::from_static(br#"{"message":"Internal error"}"#),
        ),
    }
}

async fn health() -> Response {
    json_response(StatusCode::OK, Bytes::from_static(br#"{"status":"ok"}"#))
}
