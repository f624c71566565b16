//! The OXP adapter: `GET /tools` and `POST /tools/call` (also `POST /call`) over the invoker.
//!
//! | route | answer |
//! |---|---|
//! | `GET /tools` | `ListToolsResponse` |
//! | `POST /tools/call`, `POST /call` | `CallToolResponse` (200), `ServerErrorResponse` (400), `ValidationErrorResponse` (422) |
//!
//! Errors of the adapter are `ServerErrorResponse`s: 400 before the tool ran (with
//! `WWW-Authenticate` when authentication failed), 413 over the body limit, 415 for a non-JSON
//! content type. [`wire`] holds the serde types, [`call`] the translation of a call.

mod call;
mod error;
pub(crate) mod wire;

use crate::auth::Authenticator;
use crate::server::{Refused, guard, only, post_json};
use axum::Router;
use axum::body::Bytes;
use axum::response::IntoResponse;
use axum::routing::get;
use error::ApiError;
use oxp_lambda_core::invoke::Invoker;
use oxp_lambda_core::registry::RegisteredTool;
use std::sync::Arc;
use wire::{InputSchema, ListToolsResponse, OXP_1_0, ToolDefinition};

/// The adapter's state.
#[derive(Debug)]
pub(crate) struct Oxp {
    invoker: Arc<Invoker>,
    /// `GET /tools` never changes, so it is serialized once, at the first listing.
    listing: std::sync::OnceLock<Bytes>,
}

impl Oxp {
    fn listing(&self) -> Bytes {
        self.listing
            .get_or_init(|| {
                let tools: Vec<ToolDefinition> = self
                    .invoker
                    .registry()
                    .tools()
                    .iter()
                    .map(|t| tool_definition(t))
                    .collect();
                let listing = ListToolsResponse {
                    schema: OXP_1_0.into(),
                    items: tools.clone(),
                    tools,
                };
                Bytes::from(serde_json::to_vec(&listing).expect("tool definitions serialize"))
            })
            .clone()
    }
}

/// The refusal of a body that is not JSON.
fn not_json() -> axum::response::Response {
    ApiError::UnsupportedMediaType.into_response()
}

/// The paths OXP serves (each and what lies under it), whose refusals by the plumbing in front
/// of routing it answers in its own shape ([`refused`]).
pub(crate) const PATHS: [&str; 2] = ["/tools", "/call"];

pub(crate) use error::refused;

/// The OXP routes, behind `auth`.
pub(crate) fn router(invoker: Arc<Invoker>, auth: &Arc<Authenticator>) -> Router {
    let state = Arc::new(Oxp {
        invoker,
        listing: std::sync::OnceLock::new(),
    });
    let routes = Router::new()
        .route("/tools", only(get(call::list_tools), "GET, HEAD", refused))
        .route("/tools/call", post_json(call::call_tool, not_json, refused))
        .route("/call", post_json(call::call_tool, not_json, refused));
    guard(routes, auth, |_: &_, refused: &Refused| match refused {
        Refused::Unauthenticated => ApiError::Unauthenticated.into_response(),
        Refused::InsufficientScope { required } => {
            ApiError::InsufficientScope(required.clone()).into_response()
        }
    })
    .with_state(state)
}

/// The OXP tool definition of a registered tool.
pub(crate) fn tool_definition(tool: &RegisteredTool) -> ToolDefinition {
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
        requirements: (!r.is_empty()).then(|| wire::ToolRequirements {
            authorization: r
                .authorization
                .iter()
                .map(|a| wire::AuthorizationRequirement {
                    id: a.id.clone(),
                    oauth2: (!a.scopes.is_empty()).then(|| wire::OAuth2Requirement {
                        scopes: a.scopes.clone(),
                    }),
                })
                .collect(),
            secrets: r
                .secrets
                .iter()
                .map(|id| wire::SecretRequirement { id: id.clone() })
                .collect(),
            user_id: r.user_id,
        }),
    }
}
