//! The MCP adapter: `POST /mcp`, Streamable HTTP with the Rust MCP SDK (`rmcp`), stateless.
//!
//! Every request stands alone, so it works behind Lambda and any load balancer: no session
//! store. The one `Mcp-Session-Id` given out is self-contained (`elicit`: a handshake client
//! that shows forms gets one saying so, sealed, and is asked on the call's stream); answers
//! are JSON, but for a call whose tool reports progress or asks (an SSE stream, which Lambda
//! buffers unless it streams); `GET` (the server-to-client stream) and `DELETE` (ending a
//! session) are 405; a notification is 202 with no body; a 2025-03-26 batch is each of its
//! messages answered as if it came alone (`batch`). rmcp negotiates the revision: the
//! `initialize` handshake (2025-03-26 to 2025-11-25) and the handshake-free 2026-07-28.
//!
//! In front of rmcp this adapter adds what the other adapters have: authentication
//! (`OXP_AUTH`, 401 with `WWW-Authenticate`), the JSON content type (415), the body limit
//! (413), and JSON-RPC errors for what does not parse: -32700 for a body that is not JSON
//! (or nests deeper than 128), -32600 for JSON that is not a JSON-RPC message, -32602 for a
//! known method with malformed params, -32601 (from rmcp) for an unknown method.

mod batch;
mod call_ids;
mod call_tool;
mod declared;
mod definition;
mod discovery;
mod elicit;
mod exchange;
mod fast;
mod fast_meta;
mod handler;
mod listed;
mod message;
mod modern;
mod plumbing;
mod progress;
mod questions;
pub(crate) mod result;
mod round_trip;
mod sampling;
mod served;
mod task;

pub(crate) use served::{served, served_for_mcp};

pub(crate) use round_trip::{KEY_BYTES as STATE_KEY_BYTES, KEY_SECRET_ID as STATE_KEY_SECRET_ID};

pub(crate) use handler::Served;

use crate::auth::Authenticator;
use crate::server::{Refused, guard, is_json, post_json};
use crate::settings::{ConfigError, Env};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use handler::McpServer;
use http::request::Parts;
use http::{HeaderValue, StatusCode, header};
use message::{Message, Unread};
pub(crate) use plumbing::{RequestClosed, refused};
use plumbing::{cancelled_request, plain_error_as_rpc, rpc_error, unauthenticated};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use std::sync::Arc;

/// The MCP adapter's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfig {
    /// `OXP_MCP` (`on`, the default, or `off`): whether `/mcp` is served.
    pub enabled: bool,
    /// `OXP_MCP_TOOLS`: comma-separated `Name@x.y.z` pins; other tools serve their latest
    /// release (MCP names tools without versions).
    pub pins: Vec<String>,
    /// `OXP_MCP_ALLOWED_HOSTS`: comma-separated `Host` values (`api.example.com`,
    /// `example.com:8443`) `/mcp` accepts; empty (the default) accepts any. A loopback
    /// listener accepts only loopback hosts on every route regardless.
    pub allowed_hosts: Vec<String>,
    /// `OXP_MCP_RESOURCE_URL`: the `/mcp` URL as clients see it, for the protected resource
    /// metadata (`resource`); by default built from each request (see `discovery`).
    pub resource_url: Option<String>,
    /// `OXP_MCP_AUTHORIZATION_SERVERS`: comma-separated issuer URLs clients get tokens from;
    /// by default `OXP_JWT_ISSUER`.
    pub authorization_servers: Vec<String>,
    /// The scopes the protected resource metadata and the 401's challenge advertise: those
    /// every token must grant (`OXP_REQUIRED_SCOPES`, checked on every route by the
    /// authentication layer).
    pub scopes: Vec<String>,
    /// `OXP_MCP_TASK_QUEUE_URL`: in Lambda, the SQS queue a task's run goes to (its consumer
    /// is the worker role, `OXP_LAMBDA_ROLE=worker`); without it Lambda offers no tasks.
    pub task_queue_url: Option<String>,
    /// `OXP_MCP_TASK_REQUIRED`: comma-separated tools (`Reports.Build`) `/mcp` serves only as
    /// tasks, those this deployment cannot answer within a request (a run longer than its
    /// timeout): a client that does not declare the tasks extension gets -32021 naming it.
    pub task_required: Vec<String>,
    /// `OXP_MCP_SPENT_MARKS_PER_CALLER` (default 10,000): marks of spent request states and
    /// answers one caller's 2026-07-28 rounds keep in the state store at once, each for the
    /// state's 10 minutes (a round answered with one response writes two); past it the caller's
    /// next round is refused (-32005) until its oldest expire.
    pub spent_marks_per_caller: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            pins: Vec::new(),
            allowed_hosts: Vec::new(),
            resource_url: None,
            authorization_servers: Vec::new(),
            scopes: Vec::new(),
            task_queue_url: None,
            task_required: Vec::new(),
            spent_marks_per_caller: 10_000,
        }
    }
}

impl McpConfig {
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let enabled = match env.get("OXP_MCP").as_deref().map(str::trim) {
            None | Some("on") => true,
            Some("off") => false,
            Some(_) => return Err(crate::settings::invalid("OXP_MCP", "must be 'on' or 'off'")),
        };
        let resource_url = env.get("OXP_MCP_RESOURCE_URL").map(|u| u.trim().to_owned());
        if let Some(url) = &resource_url
            && !((url.starts_with("https://") || url.starts_with("http://"))
                && url.ends_with("/mcp")
                && !url.contains(['"', ' ', '?', '#']))
        {
            return Err(crate::settings::invalid(
                "OXP_MCP_RESOURCE_URL",
                "must be the absolute http(s) URL of /mcp, without query or fragment",
            ));
        }
        let mut authorization_servers = env.list("OXP_MCP_AUTHORIZATION_SERVERS");
        if authorization_servers.is_empty() {
            authorization_servers.extend(env.get("OXP_JWT_ISSUER"));
        }
        Ok(Self {
            enabled,
            pins: env.list("OXP_MCP_TOOLS"),
            allowed_hosts: env.list("OXP_MCP_ALLOWED_HOSTS"),
            resource_url,
            authorization_servers,
            scopes: Vec::new(),
            task_queue_url: env
                .get("OXP_MCP_TASK_QUEUE_URL")
                .map(|u| u.trim().to_owned()),
            task_required: env.list("OXP_MCP_TASK_REQUIRED"),
            spent_marks_per_caller: env
                .positive("OXP_MCP_SPENT_MARKS_PER_CALLER")?
                .unwrap_or(10_000),
        })
    }
}

/// The path MCP serves, whose refusals by the plumbing in front of routing it answers in its
/// own shape ([`refused`]).
pub(crate) const PATHS: [&str; 1] = ["/mcp"];

type Service = StreamableHttpService<McpServer, NeverSessionManager>;

struct Mcp {
    service: Service,
    /// The same server rmcp gets, for the fast path.
    server: McpServer,
    max_body_bytes: usize,
    /// No `OXP_MCP_ALLOWED_HOSTS`: any `Host` is served.
    any_host: bool,
}

/// The refusal of a body that is not JSON.
fn not_json() -> Response {
    rpc_error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Value::Null,
        -32600,
        "Content-Type must be application/json",
    )
}

/// The `/mcp` route, behind `auth`. `allowed_origins` (`OXP_ALLOWED_ORIGINS`) are the only
/// browser origins it answers: the MCP spec has servers check `Origin` on every request.
pub(crate) fn router(
    served: Arc<Served>,
    auth: &Arc<Authenticator>,
    config: &McpConfig,
    allowed_origins: &[String],
    max_body_bytes: usize,
    in_lambda: bool,
) -> Router {
    let mut settings = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_sse_retry(None)
        .with_max_request_body_bytes(max_body_bytes)
        .with_allowed_origins(allowed_origins.iter().cloned())
        .enforce_origin_validation();
    settings = if config.allowed_hosts.is_empty() {
        settings.disable_allowed_hosts()
    } else {
        settings.with_allowed_hosts(config.allowed_hosts.iter().cloned())
    };
    let server = McpServer(served);
    let factory = server.clone();
    let service = StreamableHttpService::new(
        move || Ok(factory.clone()),
        Arc::new(NeverSessionManager::default()),
        settings,
    );
    let state = Arc::new(Mcp {
        service,
        server,
        max_body_bytes,
        any_host: config.allowed_hosts.is_empty(),
    });
    let routes = Router::new().route(PATHS[0], post_json(serve, not_json, refused));
    if auth.is_none() {
        return routes.with_state(state);
    }
    let discovery = discovery::Discovery::new(config, in_lambda);
    let challenge = discovery.clone();
    guard(
        routes,
        auth,
        move |request: &Request, refused: &Refused| match refused {
            Refused::Unauthenticated => unauthenticated(challenge.challenge(request)),
            Refused::InsufficientScope { required } => {
                discovery::insufficient_scope(&challenge, request, required)
            }
        },
    )
    .merge(discovery::routes(discovery))
    .with_state(state)
}

async fn serve(State(mcp): State<Arc<Mcp>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, mcp.max_body_bytes).await else {
        return rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            Value::Null,
            -32600,
            &format!(
                "The request body is larger than {} bytes",
                mcp.max_body_bytes
            ),
        );
    };
    if batch::is_batch(&parts.headers, &bytes) {
        // Boxed: a batch's steps would make every request's future larger.
        return Box::pin(batch::serve(&mcp, parts, bytes)).await;
    }
    answer(&mcp, parts, bytes).await
}

/// The answer to one JSON-RPC message (a request's whole body, or one of a batch's).
async fn answer(mcp: &Arc<Mcp>, mut parts: Parts, bytes: Bytes) -> Response {
    // A plain `tools/call` is answered without rmcp's service (the fast path), which reads
    // the body and the headers in one pass of its own (the origin check below among them).
    if mcp.any_host
        && let Some((status, answer)) = fast::try_call(&mcp.server, &parts, &bytes).await
    {
        return crate::server::json_response(status, Bytes::from(answer));
    }
    // The MCP spec has servers validate `Origin`; the server's own loopback origin is not a
    // foreign page (the conformance suite sends it), so rmcp does not see it.
    if crate::server::same_loopback_origin(&parts.headers) {
        parts.headers.remove(header::ORIGIN);
    }
    // Any other body is read here, once; every step in front of rmcp reads `message`.
    let message = match Message::read(&bytes) {
        Ok(message) => Some(message),
        // A syntax error names a line and column, never the text it found.
        Err(Unread::NotJson(e)) => {
            let message = format!("Parse error: the body is not valid JSON ({e})");
            return rpc_error(StatusCode::BAD_REQUEST, Value::Null, -32700, &message);
        }
        // JSON but no message: rmcp checks the request's headers first, then refuses it.
        Err(Unread::NotMessage) => None,
    };
    // Read once for both steps below (the fast path read its own).
    let modern = modern::is_modern(&parts.headers);
    if let Some(message) = &message
        && let Some(answer) = before_rmcp(mcp, &parts, message, modern)
    {
        return answer;
    }
    // Boxed: inline, its state (its own steps around rmcp's) would make every request's
    // future larger, the fast path's too, which axum boxes by copying it whole.
    Box::pin(through_rmcp(mcp, parts, &bytes, message.as_ref(), modern)).await
}

/// What is answered without rmcp's service besides the fast path: a method 2026-07-28
/// removed; a cancellation is noted here and answered by rmcp.
fn before_rmcp(mcp: &Mcp, parts: &Parts, message: &Message<'_>, modern: bool) -> Option<Response> {
    if let Some(id) = cancelled_request(message) {
        let found = mcp.server.0.cancel(plumbing::subject(parts), &id);
        tracing::info!(target: "oxp::mcp", found, "notifications/cancelled");
    }
    if modern {
        return modern::removed_method(message);
    }
    None
}

/// The request through rmcp's service, which checks it as any other (host, origin, headers)
/// and runs it, and the answer as this adapter gives it (a client's answer to a question, a
/// session, each listed tool's task support, a modern revision's error statuses).
async fn through_rmcp(
    mcp: &Mcp,
    mut parts: Parts,
    bytes: &Bytes,
    message: Option<&Message<'_>>,
    modern: bool,
) -> Response {
    let listing = message.is_some_and(|m| m.is_request("tools/list"));
    let answering = message.and_then(|m| elicit::pending(&parts, m));
    let session = match message {
        Some(message) => elicit::session(&mcp.server, &parts, message).await,
        None => None,
    };
    // rmcp refuses a request without a Host even when any host is allowed; a Lambda event
    // need not carry one, and with no host list there is nothing to check it against.
    if mcp.any_host && !parts.headers.contains_key(header::HOST) && parts.uri.authority().is_none()
    {
        parts
            .headers
            .insert(header::HOST, HeaderValue::from_static("localhost"));
    }
    // rmcp runs the request in a task of its own, which a client closing its request (the
    // 2026-07-28 way to cancel, and any client's timeout) does not stop: the signal fires when
    // this future is dropped unanswered, and the call's tool sees it.
    let closed = RequestClosed::default();
    parts.extensions.insert(closed.clone());
    // rmcp's task for the request does not carry the Lambda invocation's fields: the request
    // does (call_tool.rs runs the call within them).
    if let Some(fields) = crate::observe::current_fields() {
        parts.extensions.insert(fields);
    }
    // A request of a session that does not answer a question may ask some: its own token
    // names them on its stream and in the store.
    let token = (answering.is_none() && parts.headers.contains_key(elicit::SESSION_HEADER))
        .then(call_ids::CallToken::new);
    if let Some(token) = &token {
        parts.extensions.insert(token.clone());
    }
    let mut guard = closed.guard();
    let request = http::Request::from_parts(parts, Body::from(bytes.clone()));
    // Boxed: rmcp's future is large, and would make every request's future (the fast path's
    // too) that large.
    let response = Box::pin(mcp.service.handle(request)).await;
    guard.disarm();
    // rmcp checked the request as any other (host, origin, headers) and, stateless, refused a
    // client's answer: one to a question of ours is recorded here.
    if let (Some(answering), Some(message)) = (answering, message)
        && response.status() == StatusCode::BAD_REQUEST
        && let Some(accepted) = elicit::answer(&mcp.server, &answering, message).await
    {
        return accepted;
    }
    if response.status().is_client_error() && !is_json(response.headers()) {
        return plain_error_as_rpc(response, message).await;
    }
    let mut response = response.map(Body::new);
    if let Some(token) = token {
        response = call_ids::renumbered(response, token);
    }
    if let Some(session) = session
        && response.status() == StatusCode::OK
    {
        response
            .headers_mut()
            .insert(elicit::SESSION_HEADER, session);
    }
    if listing && modern {
        response = listed::with_task_support(response, &mcp.server.0).await;
    }
    if modern {
        return modern::status_of_errors(response).await;
    }
    // A refusal in JSON (an `initialize` whose header and body name different versions)
    // quotes what the caller sent.
    if response.status().is_client_error() {
        return plumbing::refusal_shown(response).await;
    }
    response
}
