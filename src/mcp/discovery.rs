//! How an MCP client learns to get a token when authentication is on, as the MCP
//! authorization spec asks (OAuth 2.0 Protected Resource Metadata, RFC 9728):
//!
//! - `GET /.well-known/oauth-protected-resource/mcp` (and the root form, and the path-inserted
//!   form of RFC 9728 for a resource behind a prefix) answer the metadata without a token:
//!   `resource` (the `/mcp` URL as the client sees it), `authorization_servers`,
//!   `scopes_supported`, `bearer_methods_supported`;
//! - a 401 carries `WWW-Authenticate: Bearer resource_metadata="..."` (and `scope` when scopes
//!   are required), so the client finds the metadata without guessing;
//! - a token without the required scopes is a 403 `insufficient_scope` naming them (the
//!   authentication layer refuses it on every route; [`insufficient_scope`] is MCP's answer).
//!
//! `resource` is `OXP_MCP_RESOURCE_URL` when set (a custom domain with a base-path mapping
//! rewrites paths the function cannot see); otherwise it is built from the request: `https`
//! in Lambda (API Gateway, Function URLs and ALB listeners terminate TLS) or the local
//! server's `http`, the `Host` (never `X-Forwarded-Host`), and the stage and base path taken
//! off the path before routing.

use super::McpConfig;
use super::plumbing::rpc_error;
use crate::server::StrippedPrefix;
use axum::Router;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// Where the metadata is served, relative to the app (after the stage and base path).
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// What the metadata and the challenges say.
#[derive(Debug, Clone)]
pub(super) struct Discovery {
    resource_url: Option<String>,
    authorization_servers: Vec<String>,
    scopes: Vec<String>,
    /// `https` (Lambda) or `http` (the local server) for URLs built from the request.
    scheme: &'static str,
}

impl Discovery {
    pub(super) fn new(config: &McpConfig, in_lambda: bool) -> Arc<Self> {
        Arc::new(Self {
            resource_url: config.resource_url.clone(),
            authorization_servers: config.authorization_servers.clone(),
            scopes: config.scopes.clone(),
            scheme: if in_lambda { "https" } else { "http" },
        })
    }

    /// The `/mcp` URL for a request that reached the app with `prefix` taken off its path.
    fn resource(&self, request: &Request, path_prefix: &str) -> String {
        if let Some(url) = &self.resource_url {
            return url.clone();
        }
        format!("{}{path_prefix}/mcp", self.origin(request))
    }

    /// `scheme://host` of the request, the `Host` kept only when it is a plain host name or
    /// address (it is written into a header and a document).
    fn origin(&self, request: &Request) -> String {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()))
            .filter(|h| {
                !h.is_empty()
                    && h.len() <= 255
                    && h.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
            })
            .unwrap_or("localhost");
        format!("{}://{host}", self.scheme)
    }

    /// The metadata URL for a request to `/mcp`: beside the resource, so it is reachable
    /// through the same stage, base path or base-path mapping.
    fn metadata_url(&self, request: &Request) -> String {
        let resource = self.resource(request, &prefix_of(request));
        let base = resource.strip_suffix("/mcp").unwrap_or(&resource);
        format!("{base}{WELL_KNOWN}/mcp")
    }

    /// `WWW-Authenticate` of a 401.
    pub(super) fn challenge(&self, request: &Request) -> HeaderValue {
        let mut value = format!(
            "Bearer resource_metadata=\"{}\"",
            self.metadata_url(request)
        );
        if !self.scopes.is_empty() {
            value.push_str(&format!(", scope=\"{}\"", self.scopes.join(" ")));
        }
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }
}

fn prefix_of(request: &Request) -> String {
    request
        .extensions()
        .get::<StrippedPrefix>()
        .map(|p| p.0.clone())
        .unwrap_or_default()
}

#[derive(Serialize)]
struct Metadata<'a> {
    resource: String,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    authorization_servers: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    scopes_supported: &'a [String],
    bearer_methods_supported: [&'static str; 1],
    resource_name: &'static str,
}

/// The metadata routes, answered without a token.
pub(super) fn routes<S: Clone + Send + Sync + 'static>(discovery: Arc<Discovery>) -> Router<S> {
    let root = discovery.clone();
    let nested = discovery;
    Router::new()
        .route(
            WELL_KNOWN,
            get(move |request: Request| {
                let d = root.clone();
                async move { metadata(&d, &request, "") }
            }),
        )
        .route(
            &format!("{WELL_KNOWN}/{{*path}}"),
            get(move |request: Request| {
                let d = nested.clone();
                async move {
                    let tail = request
                        .uri()
                        .path()
                        .strip_prefix(WELL_KNOWN)
                        .unwrap_or_default()
                        .to_owned();
                    metadata(&d, &request, &tail)
                }
            }),
        )
}

/// The metadata for a request to the well-known path; `tail` is what follows it (`/mcp`, or
/// `/prod/mcp` when a client inserted the well-known segment before a prefix, RFC 9728 §3.1).
fn metadata(discovery: &Discovery, request: &Request, tail: &str) -> Response {
    let resource = match tail {
        "" | "/mcp" => discovery.resource(request, &prefix_of(request)),
        tail => match tail.strip_suffix("/mcp") {
            Some(prefix) if discovery.resource_url.is_none() => {
                discovery.resource(request, &format!("{}{prefix}", prefix_of(request)))
            }
            Some(_) => discovery.resource(request, ""),
            None => {
                return crate::server::ServerError::NotFound.into_response();
            }
        },
    };
    let body = Metadata {
        resource,
        authorization_servers: &discovery.authorization_servers,
        scopes_supported: &discovery.scopes,
        bearer_methods_supported: ["header"],
        resource_name: env!("CARGO_PKG_NAME"),
    };
    crate::server::json(StatusCode::OK, &body)
}

/// The 403 `insufficient_scope` for a token without every `required` scope, naming them
/// (MCP's authorization: scope challenge handling).
pub(super) fn insufficient_scope(
    discovery: &Discovery,
    request: &Request,
    required: &[String],
) -> Response {
    let mut response = rpc_error(
        StatusCode::FORBIDDEN,
        Value::Null,
        -32001,
        "Insufficient scope: the token lacks a scope this server requires",
    );
    let value = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\"",
        required.join(" "),
        discovery.metadata_url(request)
    );
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn request(host: &str, prefix: Option<&str>) -> Request {
        let mut request = Request::builder()
            .uri("/mcp")
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap();
        if let Some(prefix) = prefix {
            request
                .extensions_mut()
                .insert(StrippedPrefix(prefix.to_owned()));
        }
        request
    }

    #[test]
    fn in_lambda_urls_are_https_and_keep_the_api_gateway_stage() {
        let discovery = Discovery::new(&McpConfig::default(), true);
        let request = request("abc123.execute-api.eu-west-1.amazonaws.com", Some("/prod"));
        assert_eq!(
            discovery.challenge(&request),
            "Bearer resource_metadata=\"https://abc123.execute-api.eu-west-1.amazonaws.com/prod/.well-known/oauth-protected-resource/mcp\""
        );
    }

    #[test]
    fn a_host_that_is_not_a_plain_host_name_is_never_written_back() {
        let discovery = Discovery::new(&McpConfig::default(), false);
        let request = request("evil\"host, scope=\"admin", None);
        assert_eq!(
            discovery.challenge(&request),
            "Bearer resource_metadata=\"http://localhost/.well-known/oauth-protected-resource/mcp\""
        );
    }
}
