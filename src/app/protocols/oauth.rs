//! The users' authorization routes (`/oauth/{provider}/...`) as a value the app takes: served
//! when a provider is configured (the broker is among the assembly's shared parts).

use crate::app::StartError;
use crate::app::protocol::{Assembly, Contribution, Protocol};
use crate::oauth::Broker;
use crate::server::json;
use http::StatusCode;
use std::sync::Arc;

/// The OAuth flow's routes.
pub(crate) struct OAuthRoutes;

impl Protocol for OAuthRoutes {
    fn build(&self, assembly: &Assembly<'_>) -> Result<Contribution, StartError> {
        let Some(broker) = assembly.shared.get::<Arc<Broker>>() else {
            return Ok(Contribution::default());
        };
        let auth = assembly.auth.clone();
        Ok(Contribution::routes(crate::oauth::routes::router(
            broker.clone(),
            move |forget| {
                crate::server::guard(forget, &auth, |_| {
                    json(
                        StatusCode::UNAUTHORIZED,
                        &serde_json::json!({"error": "authentication failed"}),
                    )
                })
            },
        )))
    }
}
