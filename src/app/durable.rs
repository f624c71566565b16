//! The app's durable parts: the stores (the program's or the configured ones), the runner of
//! acknowledged work and what it serves in Lambda, the questions its runs ask, and the let-go
//! of unfinished work at shutdown.

use super::StartError;
use super::protocol;
use crate::config::Config;
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::idempotency::{Idempotency, IdempotencyStore};
use std::sync::Arc;

/// The runner of acknowledged work over `state` (none without a store): in Lambda it sends
/// work to the worker's queue.
fn work_runner(
    state: Option<&Arc<dyn StateStore>>,
    config: &Config,
    sdk: &crate::aws::SharedSdk,
) -> Result<Option<Arc<crate::work::Runner>>, StartError> {
    let Some(store) = state else {
        return Ok(None);
    };
    let env = config.env();
    let settings = crate::work::Settings::from_env(&env).map_err(StartError::Config)?;
    let runner = crate::work::Runner::new(store.clone(), settings);
    if config.runtime.lambda {
        let queue = [
            "OXP_WORK_QUEUE_URL",
            "OXP_MCP_TASK_QUEUE_URL",
            "OXP_RAP_QUEUE_URL",
        ]
        .into_iter()
        .find_map(|name| env.get(name));
        if let Some(url) = queue {
            let sqs = crate::sqs::Sqs::connect(sdk).map_err(StartError::State)?;
            runner.wake_with(Arc::new(crate::work::queue::Queue { sqs, url }));
        }
    }
    Ok(Some(runner))
}

/// Lambda's worker role, which runs the runner's queued messages (and the schedule's sweeps);
/// none in a build that takes no SQS batch (feature `lambda-records`). (A local server sweeps
/// for work itself, once every protocol registered its kinds of work.)
pub(super) fn serve_work(
    runner: &Arc<crate::work::Runner>,
    config: &Config,
) -> Option<crate::server::LambdaRole> {
    if !config.runtime.lambda || config.lambda_role != crate::server::WORKER {
        return None;
    }
    crate::server::records_role(crate::server::WORKER, || {
        Arc::new(crate::work::WorkRecords(runner.clone()))
    })
}

/// The durable parts of an app: its stores, its runner of acknowledged work and its questions.
pub(super) struct Durable {
    pub(super) state: Option<Arc<dyn StateStore>>,
    pub(super) idempotency: Option<Idempotency>,
    pub(super) runner: Option<Arc<crate::work::Runner>>,
    pub(super) questions: Option<Arc<crate::work::Questions>>,
    /// The store may be shared with other processes (DynamoDB, or one the program gave).
    pub(super) shared: bool,
    /// An earlier run left state to resume.
    pub(super) recovering: bool,
}

/// Builds the durable parts the configuration names, or takes the stores the program gave
/// (`state_store`, `idempotency_store`); a state file an earlier run left is opened now.
pub(super) async fn durable(
    config: &Config,
    sdk: &crate::aws::SharedSdk,
    state_store: Option<Arc<dyn StateStore>>,
    idempotency_store: Option<Arc<dyn IdempotencyStore>>,
) -> Result<Durable, StartError> {
    let durable = parts(config, sdk, state_store, idempotency_store)?;
    left_opens(&durable, config).await?;
    Ok(durable)
}

/// The durable parts, built.
fn parts(
    config: &Config,
    sdk: &crate::aws::SharedSdk,
    state_store: Option<Arc<dyn StateStore>>,
    idempotency_store: Option<Arc<dyn IdempotencyStore>>,
) -> Result<Durable, StartError> {
    // Whether an earlier run left state to resume: looked at before anything opens it.
    let recovering = matches!(
        &config.state,
        crate::state::StateConfig::Embedded { path: Some(path), .. } if path.exists()
    );
    // A store the program gives may be shared with other processes, as DynamoDB is.
    let shared =
        state_store.is_some() || matches!(config.state, crate::state::StateConfig::DynamoDb { .. });
    let state = match state_store {
        Some(store) => Some(store),
        None => crate::state::build(&config.state, sdk).map_err(StartError::State)?,
    };
    let idempotency = match idempotency_store {
        Some(store) => Some(Idempotency {
            store,
            keep: config.idempotency.ttl,
        }),
        None => crate::idempotency::build(&config.idempotency, state.as_ref(), sdk)
            .map_err(StartError::Idempotency)?,
    };
    // Acknowledged work always has a store: the state store, or (a local server with
    // OXP_STATE=off: no state for calls that talk back) one in memory of its own. In
    // Lambda none is made up: a protocol that acknowledges work refuses to start.
    let work_store = state.clone().or_else(|| {
        let local = !config.runtime.lambda;
        local.then(|| crate::state::embedded::store_cached(None, 1 << 20).ok())?
    });
    let runner = work_runner(work_store.as_ref(), config, sdk)?;
    if let Some(runner) = &runner {
        // The embedded file this process took is its alone (its lock proves any earlier
        // holder dead); one in memory ends with the process.
        let in_memory = state.is_none()
            || matches!(
                &config.state,
                crate::state::StateConfig::Embedded { path: None, .. }
            );
        runner.store_is(!shared, shared || !in_memory);
    }
    let questions = state.as_ref().map(|store| {
        let questions = Arc::new(crate::work::Questions::new(store.clone()));
        if let Some(runner) = &runner {
            questions.wakes(runner);
        }
        questions
    });
    Ok(Durable {
        state,
        idempotency,
        runner,
        questions,
        shared,
        recovering,
    })
}

/// At shutdown the runner's unfinished work is let go for another process to take over (or,
/// with a store that ends with the process, given up through its protocol), after waiting up
/// to what is left of `OXP_WORK_DRAIN_SECS` for it.
struct LetGo(Arc<crate::work::Runner>);

impl protocol::Drain for LetGo {
    fn drain(&self, timeout: std::time::Duration) -> protocol::BoxFuture<'_, usize> {
        Box::pin(self.0.drain(timeout))
    }
}

/// The runner's part once the protocols registered their kinds of work: what runs here is let
/// go at shutdown for another process to take over, and a local server looks for work to take
/// over from the start when the store may hold some already (`may_hold_work`: others share it, or
/// an earlier run left some). With the drain period (`OXP_WORK_DRAIN_SECS`) the local server's
/// requests in flight share at shutdown.
pub(super) fn start(
    runner: Option<&Arc<crate::work::Runner>>,
    config: &Config,
    may_hold_work: bool,
) -> (Option<Arc<dyn protocol::Drain>>, std::time::Duration) {
    let Some(runner) = runner else {
        return (None, crate::work::Settings::default().drain);
    };
    // Only a local server has work of its own to look for: a build that serves no HTTP runs
    // outside Lambda only to say it cannot, and links no sweeper.
    if super::http_side::SERVES_LOCALLY && !config.runtime.lambda {
        runner.sweep_every_tick(may_hold_work);
    }
    let drain = runner.settings().drain;
    (Some(Arc::new(LetGo(runner.clone()))), drain)
}

/// The state file an earlier run left (`recovering`), opened now rather than by the first
/// request that needs it: one that does not open (no database: another file named, or one
/// damaged past repair) fails the start naming it, where the server would otherwise serve and
/// refuse every invocation, answer and subscription as "try again later".
async fn left_opens(durable: &Durable, config: &Config) -> Result<(), StartError> {
    let (true, Some(state)) = (durable.recovering, &durable.state) else {
        return Ok(());
    };
    let crate::state::StateConfig::Embedded {
        path: Some(path), ..
    } = &config.state
    else {
        return Ok(());
    };
    match state.get("oxp", "start").await {
        Ok(_) => Ok(()),
        Err(e) => Err(StartError::State(format!(
            "OXP_STATE_PATH {} does not open: {} (name another file, or move this one aside to start with no state: what it held, acknowledged calls among it, is then not resumed)",
            path.display(),
            e.0
        ))),
    }
}
