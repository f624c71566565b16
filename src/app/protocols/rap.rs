//! The async tool invocation protocol (`OXP_RAP`, `OXP_RAP_*`) as the value the app takes: its
//! routes, its drain at shutdown, and the worker role (`OXP_LAMBDA_ROLE=worker`) fed by its SQS
//! queue.

use crate::app::protocol::{Assembly, BoxFuture, Contribution, Drain, Protocol};
use crate::config::{Config, ConfigError, Env};

use crate::rap::authorize::Authorizing;
use crate::rap::config::RapConfig;
use crate::server::LambdaRole;
use std::sync::Arc;
use std::time::Duration;

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
        RapConfig::from_env(env, server.tool_timeout, server.host)
    }

    fn build(&self, settings: RapConfig, assembly: &Assembly<'_>) -> Result<Contribution, String> {
        let worker_role = assembly.config.lambda_role == WORKER;
        // The worker serves MCP tasks too: RAP off, it has no part in it.
        if worker_role && settings.enabled && settings.queue_url.is_none() {
            return Err(
                "OXP_LAMBDA_ROLE=worker needs the RAP queue (set OXP_RAP_QUEUE_URL)".into(),
            );
        }
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
        let adapter = Arc::new(crate::rap::build(
            assembly.invoker.clone(),
            &settings,
            assembly.aws,
            &shared,
            authorizing(assembly),
            assembly.runner,
        )?);
        let mut contribution =
            Contribution::routes(crate::rap::routes::router(adapter.clone(), assembly.auth)).drain(
                Arc::new(Draining {
                    adapter,
                    timeout: settings.drain_timeout,
                }),
            );
        // The worker runs only where the role is served: an HTTP function enqueues, it does
        // not deliver. Its records are invocation jobs (subscriptions' events to deliver are
        // the runner's work, crate::work).
        if worker_role {
            let worker = Arc::new(crate::rap::build_worker(
                assembly.invoker.clone(),
                &settings,
                &shared,
                authorizing(assembly),
            )?);
            // Jobs kept in the state table are the runner's work; jobs queued whole (no table)
            // are the queue's records.
            if let Some(runner) = assembly.runner {
                let runs = crate::rap::queue::JobRuns {
                    worker: worker.clone(),
                    pending: None,
                };
                runner.register(crate::rap::queue::JOB, Arc::new(runs));
            }
            contribution = contribution.lambda_role(LambdaRole::records(WORKER, worker));
        }
        Ok(contribution)
    }
}

/// The users' authorizations, when the server runs providers' flows.
fn authorizing(assembly: &Assembly<'_>) -> Option<Authorizing> {
    Some(Authorizing {
        broker: assembly.user_tokens()?.clone(),
        timeout: assembly.config.oauth.pending_timeout,
    })
}

/// The in-process queue's invocations, finished (or dead-lettered) at shutdown.
struct Draining {
    adapter: Arc<crate::rap::Rap>,
    timeout: Duration,
}

impl Drain for Draining {
    fn drain(&self, timeout: Option<Duration>) -> BoxFuture<'_, usize> {
        Box::pin(self.adapter.drain(timeout.unwrap_or(self.timeout)))
    }
}
