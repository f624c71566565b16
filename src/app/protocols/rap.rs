//! The async tool invocation protocol (`OXP_RAP`, `OXP_RAP_*`) as the value the app takes: its
//! routes, and its runs as the runner's work (here, or in the worker role,
//! `OXP_LAMBDA_ROLE=worker`, which the runner's queue feeds).

use crate::app::protocol::{Assembly, Contribution, Protocol};
use crate::config::{Config, ConfigError, Env};

use crate::rap::authorize::Authorizing;
use crate::rap::config::RapConfig;
use std::sync::Arc;

use crate::server::WORKER;

/// RAP: invocations acknowledged at once, results delivered to the caller's callback.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rap;

impl Protocol for Rap {
    type Settings = RapConfig;

    fn name(&self) -> &'static str {
        "rap"
    }

    fn settings(&self, env: &Env<'_>, server: &Config) -> Result<RapConfig, ConfigError> {
        // Without authentication every call is the one anonymous caller's: no share to keep.
        let anonymous = matches!(server.auth, crate::auth::AuthConfig::None { .. });
        RapConfig::from_env(env, server.tool_timeout, server.host, anonymous)
    }

    fn build(&self, settings: RapConfig, assembly: &Assembly<'_>) -> Result<Contribution, String> {
        let worker_role = assembly.config.lambda_role == WORKER;
        if !settings.enabled {
            return Ok(Contribution::default());
        }
        let shared = crate::rap::shared(
            &settings,
            assembly.aws,
            assembly.state().cloned(),
            assembly.questions.cloned(),
            assembly.subscriptions.cloned(),
            assembly.runner,
            worker_role,
        )?;
        let authorizing = authorizing(assembly);
        if let Some(authorizing) = &authorizing {
            authorizing.answer_waits();
        }
        let adapter = Arc::new(crate::rap::build(
            assembly.invoker.clone(),
            &settings,
            &shared,
            authorizing,
            assembly.runner,
            worker_role,
        )?);
        // Its runs are the runner's work, let go or given up at shutdown by the runner's drain;
        // the worker role's records are the runner's messages.
        Ok(Contribution::http(|| {
            (
                crate::rap::routes::router(adapter, assembly.auth),
                &crate::rap::routes::PATHS,
                crate::rap::routes::refused,
            )
        }))
    }
}

/// The users' authorizations, when the server runs providers' flows.
fn authorizing(assembly: &Assembly<'_>) -> Option<Authorizing> {
    Some(Authorizing {
        broker: assembly.user_tokens()?.clone(),
        timeout: assembly.config.oauth.pending_timeout,
        questions: assembly.questions?.clone(),
    })
}
