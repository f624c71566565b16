//! The HTTP transport and OXP adapter: an `axum` router shared by the local server and Lambda.
//!
//! | route | answer |
//! |---|---|
//! | `GET /tools` | `ListToolsResponse` |
//! | `POST /tools/call`, `POST /call` | `CallToolResponse` (200), `ServerErrorResponse` (400), `ValidationErrorResponse` (422) |
//! | `GET /health` | `{"status":"ok"}` |
//! | `GET /.well-known/rap-toolset`, `POST /invoke`, `POST /close_thread` | the async adapter, see [`crate::rap`] |
//!
//! Every error is JSON shaped like `ServerErrorResponse`: 404 for an unknown path, 405 (with
//! `Allow`) for a wrong method, 413 over the body limit, 415 for a non-JSON content type.

use crate::auth::{Authenticator, Principal};
use crate::config::Config;
use crate::config::IdempotencyMode;
use crate::idempotency::MemoryStore;
use crate::invoke::{self, Idempotency, Refusal};
use crate::protocol::{
    self, CallToolRequest, CallToolResponse, CallToolResponseEnvelope, InputSchema,
    ListToolsResponse, OXP_1_0, ServerErrorResponse, ToolCallError, ToolDefinition,
    ValidationErrorResponse,
};
use crate::registry::{RegisteredTool, Registry, ResolveError};
use crate::secrets::Secrets;
use crate::tool::{Secret, ToolError};
use crate::validate::ParameterErrors;
use axum::Extension;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::Semaphore;
use tower::Service;

/// Shared state of the HTTP app.
#[derive(Debug)]
pub struct AppState {
    registry: Arc<Registry>,
    config: Config,
    secrets: Secrets,
    auth: Authenticator,
    idempotency: Option<Idempotency>,
    /// Bounds concurrent tool runs (`OXP_MAX_CONCURRENT_CALLS`).
    calls: Arc<Semaphore>,
    /// `GET /tools` never changes, so it is serialized once.
    listing: Bytes,
    /// The async adapter, when served.
    rap: Option<Arc<crate::rap::Rap>>,
}

impl AppState {
    /// Builds the state: `registry` served with `config`, server-held `secrets` and `auth`.
    /// Idempotency uses an in-memory store unless the configuration turns it off (see
    /// [`AppState::with_idempotency`]). [`crate::build_app`] builds every part from the
    /// configuration.
    pub fn new(
        registry: Arc<Registry>,
        config: Config,
        secrets: Secrets,
        auth: Authenticator,
    ) -> Self {
        let listing = ListToolsResponse {
            schema: OXP_1_0.into(),
            tools: registry
                .tools()
                .iter()
                .map(|t| tool_definition(t))
                .collect(),
        };
        let listing =
            Bytes::from(serde_json::to_vec(&listing).expect("tool definitions serialize"));
        let idempotency = (config.idempotency.mode != IdempotencyMode::Off).then(|| Idempotency {
            store: Arc::new(MemoryStore::new(config.idempotency.max_entries)),
            keep: config.idempotency.ttl,
        });
        let calls = Arc::new(Semaphore::new(config.max_concurrent_calls));
        Self {
            registry,
            config,
            secrets,
            auth,
            idempotency,
            calls,
            listing,
            rap: None,
        }
    }

    /// How callers authenticate.
    pub fn auth(&self) -> &Authenticator {
        &self.auth
    }

    /// Serves the async adapter (RAP routes) too.
    pub fn with_rap(mut self, rap: Arc<crate::rap::Rap>) -> Self {
        self.rap = Some(rap);
        self
    }

    /// The async adapter, when served.
    pub fn rap(&self) -> Option<&crate::rap::Rap> {
        self.rap.as_deref()
    }

    /// Replaces the idempotency store (`None`: every call runs).
    pub fn with_idempotency(mut self, idempotency: Option<Idempotency>) -> Self {
        self.idempotency = idempotency;
        self
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }
}

/// The OXP tool definition of a registered tool.
pub fn tool_definition(tool: &RegisteredTool) -> ToolDefinition {
    let r = &tool.requirements;
    ToolDefinition {
        id: tool.id.clone(),
        name: tool.listing_name.clone(),
        description: tool.description.clone(),
        version: tool.version.to_string(),
        input_schema: InputSchema {
            parameters: tool.input_schema.clone(),
        },
        output_schema: tool.output_schema.clone(),
        requirements: (!r.is_empty()).then(|| protocol::ToolRequirements {
            authorization: r
                .authorization
                .iter()
                .map(|a| protocol::AuthorizationRequirement {
                    id: a.id.clone(),
                    oauth2: (!a.scopes.is_empty()).then(|| protocol::OAuth2Requirement {
                        scopes: a.scopes.clone(),
                    }),
                })
                .collect(),
            secrets: r
                .secrets
                .iter()
                .map(|id| protocol::SecretRequirement { id: id.clone() })
                .collect(),
            user_id: r.user_id,
        }),
    }
}

/// The router with every route; paths are matched as they are (see [`app`] for prefixes).
pub fn router(state: AppState) -> Router {
    let state = Arc::new(state);
    let limit = state.config.max_body_bytes;
    let mut protected = Router::new()
        .route("/tools", only(get(list_tools), "GET, HEAD"))
        .route("/tools/call", only(post(call_tool), "POST"))
        .route("/call", only(post(call_tool), "POST"));
    // Without authentication every caller is the default principal: no layer needed.
    if !matches!(state.auth, Authenticator::None) {
        protected =
            protected.route_layer(middleware::from_fn_with_state(state.clone(), authenticate));
    }
    let mut routes = Router::new()
        .route("/health", only(get(health), "GET, HEAD"))
        .merge(protected);
    if state.rap.is_some() {
        routes = routes.merge(crate::rap::routes::router(state.clone()));
    }
    routes
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// The complete app, as [`app`] returns it.
pub type App = StripPrefix<Router>;

/// The complete app: [`router`] behind prefix stripping (the configured base path and an API
/// Gateway stage), usable by `axum::serve` and `lambda_http::run` alike.
pub fn app(state: AppState) -> StripPrefix<Router> {
    let base_path = state.config.base_path.clone().map(Arc::from);
    StripPrefix {
        inner: router(state),
        base_path,
    }
}

/// `route`, answering 405 with `Allow: allow` for other methods.
pub(crate) fn only(
    route: MethodRouter<Arc<AppState>>,
    allow: &'static str,
) -> MethodRouter<Arc<AppState>> {
    route.fallback(move || async move { ApiError::MethodNotAllowed { allow } })
}

/// Authenticates every OXP route; the principal goes into the request extensions.
async fn authenticate(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
    next: Next,
) -> Response {
    authenticated(&state, request, next, || {
        ApiError::Unauthenticated.into_response()
    })
    .await
}

/// Runs `next` with the caller's principal in the request extensions, or answers `refuse()`.
pub(crate) async fn authenticated(
    state: &AppState,
    mut request: axum::extract::Request,
    next: Next,
    refuse: impl FnOnce() -> Response,
) -> Response {
    match state
        .auth
        .authenticate(request.headers(), request.extensions())
        .await
    {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(reason) => {
            // The reason is for operators only; it never includes the token.
            tracing::info!(target: "oxp::auth", outcome = "unauthenticated", %reason);
            refuse()
        }
    }
}

async fn health() -> Response {
    json_response(StatusCode::OK, Bytes::from_static(br#"{"status":"ok"}"#))
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::NotFound(uri.path().to_owned())
}

async fn list_tools(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // A GET body is optional; when present it may carry `$schema`.
    let body = body.map_err(ApiError::from)?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        #[derive(Deserialize)]
        struct ListRequest<'a> {
            #[serde(rename = "$schema", borrow, default)]
            schema: Option<Cow<'a, str>>,
        }
        let request: ListRequest<'_> = parse_json(&body)?;
        check_version(request.schema.as_deref())?;
    }
    Ok(json_response(StatusCode::OK, state.listing.clone()))
}

/// The outer call body in one pass: what nearly every call is.
#[derive(Deserialize)]
struct FastEnvelope<'a> {
    #[serde(rename = "$schema", borrow, default)]
    schema: Option<Cow<'a, str>>,
    #[serde(default)]
    request: Option<CallToolRequest>,
}

/// The outer call body with `request` kept raw, so that for a body that does not parse the
/// version is checked before the request's shape, and errors say what is wrong first.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "$schema", borrow, default)]
    schema: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
}

/// The call in `body`. A well-formed body is parsed once; any other is parsed again in two
/// steps to report its first problem.
fn parse_call(body: &[u8]) -> Result<CallToolRequest, ApiError> {
    let missing_request = || {
        ApiError::bad_request(
            "The request body is not a valid tool call",
            "missing field `request`: the body must be {\"$schema\"?, \"request\": {...}}",
        )
    };
    if let Ok(envelope) = serde_json::from_slice::<FastEnvelope<'_>>(body) {
        check_version(envelope.schema.as_deref())?;
        return envelope.request.ok_or_else(missing_request);
    }
    let envelope: Envelope<'_> = parse_json(body)?;
    check_version(envelope.schema.as_deref())?;
    let raw = envelope.request.ok_or_else(missing_request)?;
    serde_json::from_str(raw.get()).map_err(|e| {
        ApiError::bad_request(
            "The request body is not a valid tool call",
            format!("request: {e}"),
        )
    })
}

async fn call_tool(
    State(state): State<Arc<AppState>>,
    principal: Option<Extension<Principal>>,
    lambda: Option<Extension<lambda_http::Context>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    check_content_type(&headers)?;
    let body = body.map_err(ApiError::from)?;
    let request = parse_call(&body)?;
    let tool_id = request.tool_id.clone();
    let call_id = request.call_id.clone();
    let principal = principal.map(|Extension(p)| p).unwrap_or_default();
    let deadline = lambda
        .and_then(|Extension(ctx)| crate::lambda::deadline(&ctx, state.config.deadline_margin));
    let outcome = run_call(&state, &principal, deadline, request)
        .await
        .inspect_err(|e| {
            // The one log line of a call rejected before its tool ran.
            tracing::info!(
                target: "oxp::call",
                call_id = call_id.as_deref(),
                tool_id = %tool_id,
                outcome = e.outcome(),
                reason = e.message(),
            );
        })?;
    Ok(json_value_response(StatusCode::OK, &outcome))
}

async fn run_call(
    state: &AppState,
    principal: &Principal,
    deadline: Option<std::time::Instant>,
    request: CallToolRequest,
) -> Result<CallToolResponseEnvelope, ApiError> {
    let tool = state.registry.resolve(&request.tool_id)?;
    let input = match request.input {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(input) => input,
    };
    let context = request.context.unwrap_or_default();
    let user_id = principal
        .bind_user_id(context.user_id)
        .map_err(|e| ApiError::bad_request(e.user_message(), e.developer_message()))?;
    let supplied = invoke::Supplied {
        call_id: request.call_id,
        trace_id: request.trace_id,
        user_id,
        authorization: context
            .authorization
            .into_iter()
            .map(|t| (t.id, Secret::new(t.token)))
            .collect(),
        secrets: context
            .secrets
            .into_iter()
            .map(|s| (s.id, Secret::new(s.value)))
            .collect(),
    };
    let keyed = supplied.call_id.is_some();
    let mut ctx = invoke::prepare(tool, supplied, &state.secrets)
        .await
        .map_err(|m| ApiError::bad_request(m.user_message(), m.developer_message()))?;
    invoke::check_input(tool, &input).map_err(ApiError::Validation)?;
    ctx.deadline = deadline;
    let call_id = ctx.call_id.clone();
    let timeout = state.config.tool_timeout;
    // A free slot is taken at once; waiting for one counts against the call's time limit.
    let _slot = match state.calls.try_acquire() {
        Ok(slot) => slot,
        Err(_) => {
            let waited = match invoke::limit(timeout, deadline) {
                Some(limit) => tokio::time::timeout(limit, state.calls.acquire())
                    .await
                    .ok(),
                None => Some(state.calls.acquire().await),
            };
            match waited {
                Some(Ok(slot)) => slot,
                _ => return Ok(busy(call_id)),
            }
        }
    };
    let outcome = invoke::call(tool, input, ctx, timeout, keyed, state.idempotency.as_ref())
        .await
        .map_err(|refusal| match refusal {
            Refusal::InvalidInput(errors) => ApiError::Validation(errors),
            Refusal::KeyReused(key) => ApiError::bad_request(
                "This call ID was already used for a different call",
                format!(
                    "call_id '{key}' was used with another tool, input or user; use a new call_id"
                ),
            ),
            Refusal::Store(e) => ApiError::bad_request(
                "The tool server is temporarily unavailable; try again later",
                e.to_string(),
            ),
        })?;
    let duration_ms = (outcome.duration.as_secs_f64() * 1e6).round() / 1e3;
    let result = match outcome.result {
        Ok(value) => CallToolResponse {
            call_id,
            duration: Some(duration_ms),
            success: true,
            value: Some(value),
            error: None,
        },
        Err(error) => CallToolResponse {
            call_id,
            duration: Some(duration_ms),
            success: false,
            value: None,
            error: Some(call_error(error)),
        },
    };
    Ok(CallToolResponseEnvelope {
        schema: OXP_1_0.into(),
        result,
    })
}

/// Every execution slot stayed taken for the whole time limit.
fn busy(call_id: String) -> CallToolResponseEnvelope {
    let error = ToolError::new("The tool server is busy; try again shortly")
        .developer_message(
            "no free execution slot within the time limit (OXP_MAX_CONCURRENT_CALLS)",
        )
        .retry_after(std::time::Duration::from_secs(1));
    CallToolResponseEnvelope {
        schema: OXP_1_0.into(),
        result: CallToolResponse {
            call_id,
            duration: Some(0.0),
            success: false,
            value: None,
            error: Some(call_error(error)),
        },
    }
}

fn call_error(e: ToolError) -> ToolCallError {
    ToolCallError {
        message: e.message,
        developer_message: e.developer_message,
        can_retry: e.can_retry.then_some(true),
        additional_prompt_content: e.additional_prompt_content,
        retry_after_ms: e.retry_after_ms,
    }
}

/// Absent or JSON (`application/json`, `application/*+json`); anything else is 415.
pub(crate) fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    // Absent is accepted (many clients omit it); anything present must be JSON.
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
    {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType)
    }
}

fn check_version(schema: Option<&str>) -> Result<(), ApiError> {
    if protocol::is_supported_version(schema) {
        return Ok(());
    }
    Err(ApiError::bad_request(
        format!(
            "OXP version '{}' is not supported. Supported versions: {}",
            schema.unwrap_or_default(),
            protocol::SUPPORTED_VERSIONS.join(", ")
        ),
        "send one of the supported versions in $schema, or omit it to use the latest",
    ))
}

fn parse_json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        use serde_json::error::Category;
        match e.classify() {
            Category::Eof if body.iter().all(u8::is_ascii_whitespace) => ApiError::bad_request(
                "The request body is empty",
                "send a JSON object such as {\"request\": {\"tool_id\": \"...\"}}",
            ),
            Category::Syntax | Category::Eof | Category::Io => {
                ApiError::bad_request("The request body is not valid JSON", e.to_string())
            }
            Category::Data => ApiError::bad_request(
                "The request body is not a valid tool call",
                format!("{e}: the body must be a JSON object"),
            ),
        }
    })
}

/// Every HTTP error this adapter answers, mapped to a response in one place.
#[derive(Debug)]
pub enum ApiError {
    /// 400 `ServerErrorResponse`: an error before the tool ran.
    BadRequest {
        /// User-facing message.
        message: String,
        /// Developer detail.
        developer_message: Option<String>,
    },
    /// 422 `ValidationErrorResponse`.
    Validation(ParameterErrors),
    /// 404: no such route.
    NotFound(String),
    /// 405: the route exists for other methods.
    MethodNotAllowed {
        /// Value of the `Allow` header.
        allow: &'static str,
    },
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
    pub fn bad_request(message: impl Into<String>, developer_message: impl Into<String>) -> Self {
        Self::BadRequest {
            message: message.into(),
            developer_message: Some(developer_message.into()),
        }
    }
}

impl ApiError {
    /// How a call rejected with this error is labelled in logs.
    fn outcome(&self) -> &'static str {
        match self {
            Self::Validation(_) => "invalid_input",
            _ => "rejected",
        }
    }

    /// The user-facing message, for logs.
    fn message(&self) -> &str {
        match self {
            Self::BadRequest { message, .. } => message,
            Self::Validation(_) => "Some input parameters are invalid",
            _ => "",
        }
    }
}

impl From<ResolveError> for ApiError {
    fn from(e: ResolveError) -> Self {
        Self::bad_request(e.user_message(), e.developer_message())
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
                return json_value_response(StatusCode::UNPROCESSABLE_ENTITY, &body);
            }
            Self::NotFound(path) => (
                StatusCode::NOT_FOUND,
                "Not found".into(),
                Some(format!(
                    "no route for {path}; routes: GET /tools, POST /tools/call, POST /call, GET /health, and with the async adapter GET /.well-known/rap-toolset, POST /invoke, POST /close_thread"
                )),
            ),
            Self::MethodNotAllowed { allow } => {
                let body = ServerErrorResponse {
                    schema: OXP_1_0.into(),
                    message: "Method not allowed".into(),
                    developer_message: Some(format!("this route accepts {allow}")),
                };
                let mut response = json_value_response(StatusCode::METHOD_NOT_ALLOWED, &body);
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(allow));
                return response;
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
                let mut response = json_value_response(StatusCode::BAD_REQUEST, &body);
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
        json_value_response(status, &body)
    }
}

fn json_value_response<T: serde::Serialize>(status: StatusCode, body: &T) -> Response {
    // Most answers fit; growing from empty would copy the buffer several times.
    let mut bytes = Vec::with_capacity(256);
    match serde_json::to_writer(&mut bytes, body) {
        Ok(()) => json_response(status, Bytes::from(bytes)),
        // Only a tool's non-finite float could get here; tool output is a serde_json::Value,
        // which cannot hold one, so this is a last resort that still answers JSON.
        Err(_) => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            Bytes::from_static(br#"{"$schema":"urn:oxp:1.0","message":"Internal error"}"#),
        ),
    }
}

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

/// Strips the configured base path and an API Gateway stage from the request path before
/// routing, so `/prod/tools` reaches `/tools`.
#[derive(Debug, Clone)]
pub struct StripPrefix<S> {
    inner: S,
    base_path: Option<Arc<str>>,
}

impl<S, B> Service<Request<B>> for StripPrefix<S>
where
    S: Service<Request<B>, Error = Infallible>,
{
    type Response = S::Response;
    type Error = Infallible;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let stage = crate::lambda::stage(&request).map(|s| format!("/{s}"));
        let mut stripped = String::new();
        for prefix in [stage.as_deref(), self.base_path.as_deref()]
            .into_iter()
            .flatten()
        {
            if let Some(uri) = strip(request.uri(), prefix) {
                *request.uri_mut() = uri;
                stripped.push_str(prefix);
            }
        }
        if !stripped.is_empty() {
            request.extensions_mut().insert(StrippedPrefix(stripped));
        }
        self.inner.call(request)
    }
}

/// What [`StripPrefix`] took off the front of the path (`/prod/api`), for building URLs
/// that point back at this server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrippedPrefix(pub String);

/// `uri` without `prefix` (only at a segment boundary), or `None` when it does not start with it.
fn strip(uri: &Uri, prefix: &str) -> Option<Uri> {
    let rest = uri.path().strip_prefix(prefix)?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let path = if rest.is_empty() { "/" } else { rest };
    let path_and_query = match uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_stripped_at_segment_boundaries_only() {
        let uri: Uri = "/prod/tools?x=1".parse().unwrap();
        assert_eq!(strip(&uri, "/prod").unwrap(), "/tools?x=1");
        let uri: Uri = "/production/tools".parse().unwrap();
        assert!(strip(&uri, "/prod").is_none());
        let uri: Uri = "https://h.example/prod".parse().unwrap();
        assert_eq!(strip(&uri, "/prod").unwrap().path(), "/");
    }
}
