//! Webhook event sources (`OXP_WEBHOOK_*`) as the value the app takes: `POST /webhooks/{source}`
//! feeding the subscriptions calls open, through `Assembly::events()` like any event source.

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
        // A signing key is the server's: a tool declaring it could forge events; and an empty or
        // short one signs nothing worth the name.
        let invoker = assembly.invoker();
        for source in &settings.sources {
            let whose = format!("the signing key of event source '{}'", source.id);
            crate::app::guards::kept_from_tools(invoker.registry(), &[&source.secret_id], &whose)?;
            crate::app::guards::long_enough(
                invoker.secrets(),
                &source.secret_id,
                crate::webhooks::MIN_KEY_BYTES,
            )?;
        }
        let webhooks = Webhooks::new(&settings, invoker.secrets().clone(), assembly.events());
        Ok(Contribution::http(|| {
            (
                crate::webhooks::router(Arc::new(webhooks)),
                &crate::webhooks::PATHS,
                crate::webhooks::plumbing_refused,
            )
        }))
    }
}
