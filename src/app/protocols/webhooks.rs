//! Webhook event sources (`OXP_WEBHOOK_*`) as the value the app takes: `POST /webhooks/{source}`
//! feeding the subscriptions RAP calls open.

use crate::app::protocol::{Assembly, Contribution, Protocol};
use crate::config::{Config, ConfigError, Env};
use crate::webhooks::{Webhooks, WebhooksConfig};
use std::sync::Arc;

/// The event sources.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventSources;

impl Protocol for EventSources {
    type Settings = WebhooksConfig;

    fn name(&self) -> &'static str {
        "webhooks"
    }

    fn settings(&self, env: &Env<'_>, _server: &Config) -> Result<WebhooksConfig, ConfigError> {
        WebhooksConfig::from_env(env)
    }

    fn build(
        &self,
        settings: WebhooksConfig,
        assembly: &Assembly<'_>,
    ) -> Result<Contribution, String> {
        // A signing key is the server's: a tool declaring it could forge events.
        let invoker = assembly.invoker();
        for source in &settings.sources {
            if let Some(tool) = invoker.registry().tools().iter().find(|t| {
                t.requirements
                    .secrets
                    .iter()
                    .any(|id| id.eq_ignore_ascii_case(&source.secret_id))
            }) {
                return Err(format!(
                    "tool {} requires secret '{}', the signing key of event source '{}': tools never get it",
                    tool.id, source.secret_id, source.id
                ));
            }
        }
        let webhooks = Webhooks::new(
            &settings,
            invoker.secrets().clone(),
            assembly.subscriptions.cloned(),
        );
        Ok(Contribution::routes(crate::webhooks::router(Arc::new(
            webhooks,
        ))))
    }
}
