//! The async tool invocation adapter (RAP): the same [`crate::Registry`] served as a toolset whose
//! invocations are acknowledged at once and answered later, by POSTing a `tool_result` to
//! the caller's callback URL.
//!
//! | route | answer |
//! |---|---|
//! | `GET /.well-known/rap-toolset` | the toolset definition ([`wire::Toolset`]) |
//! | `POST /invoke` | 200 `{"status":"accepted"}`; the result goes to `callback_url` |
//! | `POST /close_thread` | 200 `{"status":"ok"}`, logged |
//! | `POST /cancel_tool_call` | 200, empty; cancels the named invocation if it runs here |
//!
//! The path of an invocation: [`routes`] checks what must be right to accept it at all (a
//! JSON object with `id`, `group_id` and a permitted `callback_url`), notes everything else
//! that is wrong as a [`job::Rejection`], and keeps a [`job::Job`] as the runner's work
//! ([`queue::Jobs`]) before answering 200. A [`worker::Worker`] runs the tool through the
//! invoker (the same call path as every protocol: validation, idempotency on the invocation
//! `id`, the one concurrency pool) to its answer, which the runner keeps and then has
//! [`deliver::Deliverer`] POST, retried by the runner's backoff; what cannot be delivered is
//! recorded by [`dead_letter::DeadLetters`].

pub(crate) mod answers;
mod audit;
pub(crate) mod authorize;
pub(crate) mod callback;
pub(crate) mod choice;
pub(crate) mod config;
pub(crate) mod dead_letter;
pub(crate) mod deliver;
pub(crate) mod events;
pub(crate) mod job;
pub(crate) mod messages;
mod once;
pub(crate) mod queue;
mod refusal;
pub(crate) mod result;
pub(crate) mod routes;
mod status;
pub(crate) mod talk;
pub(crate) mod toolset;
pub(crate) mod wire;
pub(crate) mod worker;

use callback::CallbackPolicy;
use config::RapConfig;
use governor::DefaultKeyedRateLimiter;
use oxp_lambda_core::invoke::Invoker;
use oxp_lambda_core::principal::Principal;
use queue::Jobs;
use std::sync::Arc;
use std::time::Duration;
use toolset::ServedToolset;
use worker::Worker;

/// The conversation thread of an async invocation, as a tool sees it through
/// [`ToolContext::extension`](crate::ToolContext::extension): `None` over other protocols.
///
/// ```
/// use oxp_lambda::{RapThread, ToolContext};
///
/// fn thread_of(ctx: &ToolContext) -> Option<&str> {
///     ctx.extension::<RapThread>().map(|t| t.group_id.as_str())
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RapThread {
    /// The thread the call belongs to (`group_id`).
    pub group_id: String,
    /// The thread's ancestors, root first (`thread_ancestors`), e.g. to inherit grants.
    pub thread_ancestors: Vec<String>,
}

/// The RAP adapter's state.
#[derive(Debug)]
pub(crate) struct Rap {
    toolset: Arc<ServedToolset>,
    queue: Jobs,
    policy: CallbackPolicy,
    limiter: Option<oxp_lambda_core::invoke::rate::CallRate>,
    /// Invocations running in this process (none in Lambda's HTTP function: the worker runs
    /// them).
    running: Arc<oxp_lambda_core::running::Running>,
    /// How calls talk back (questions' answers, cancellations, threads' subscriptions).
    talk: Arc<talk::Talkback>,
    /// Status checks (`/tool_call_status`) per caller.
    status_limiter: DefaultKeyedRateLimiter<String>,
}

impl Rap {
    /// Whether this server still tracks call `id` of `thread` by `caller`: an invocation of it
    /// accepted and not answered (kept as work, in any process sharing the store), or a live
    /// subscription it opened.
    pub(crate) async fn alive(
        &self,
        caller: Option<&str>,
        thread: &str,
        id: &str,
    ) -> Result<bool, oxp_lambda_core::durable::StateError> {
        let prefix = queue::call_prefix(caller, thread, id);
        if self.queue.runner().alive_under(&prefix).await? {
            return Ok(true);
        }
        self.talk.subscribed(caller, thread, id).await
    }

    /// `Err(wait)` when the caller is over the rate limit. The caller is the authenticated
    /// subject: a `user_id` is the caller's say-so, and varying it must not reset the limit.
    /// Without authentication every caller shares one allowance.
    fn check_rate(&self, principal: &Principal) -> Result<(), Duration> {
        match &self.limiter {
            Some(limiter) => limiter.check(principal.subject.as_deref()),
            None => Ok(()),
        }
    }
}

/// What the adapter's HTTP side and its worker share: the delivery of callbacks, the
/// dead-letter store, how calls talk back, and the delivery of subscription events.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    pub(crate) deliverer: deliver::Deliverer,
    pub(crate) dead_letters: Arc<dead_letter::DeadLetters>,
    pub(crate) talk: Arc<talk::Talkback>,
}

/// The parts `config` describes over `state`, the one question service and `subscriptions`
/// (registering RAP's delivery of subscription events with `runner`); `parks`: whether a call
/// waiting for the user past its worker's deadline parks (the worker role).
pub(crate) fn shared(
    config: &RapConfig,
    sdk: &crate::aws::SharedSdk,
    state: Option<Arc<dyn oxp_lambda_core::durable::StateStore>>,
    questions: Option<Arc<crate::work::Questions>>,
    subscriptions: Option<Arc<crate::subscriptions::Subscriptions>>,
    runner: Option<&Arc<crate::work::Runner>>,
    parks: bool,
) -> Result<Shared, String> {
    let deliverer = deliver::Deliverer::new(config.callbacks.clone(), config.retry.clone());
    let dead_letters = Arc::new(match &config.dead_letter_queue_url {
        None => dead_letter::DeadLetters::file_in_place(
            &config.dead_letter_file,
            config.dead_letter_max_bytes,
            config.dead_letter_max_bytes_per_caller,
        )?,
        Some(url) => dead_letter::DeadLetters::Sqs {
            client: crate::sqs::Sqs::connect(sdk)?,
            queue_url: url.clone(),
        },
    });
    if let (Some(subscriptions), Some(runner)) = (&subscriptions, runner) {
        events::EventDelivery::register(
            subscriptions.clone(),
            deliverer.clone(),
            dead_letters.clone(),
            runner,
        );
    }
    let talk = Arc::new(talk::Talkback {
        state,
        subscriptions,
        questions,
        choice_timeout: config.choice_timeout,
        parks,
    });
    Ok(Shared {
        deliverer,
        dead_letters,
        talk,
    })
}

/// Builds the worker `config` describes over `shared`: the served toolset, the deliverer and
/// the dead-letter store; `authorizing`: the users' authorizations, when the server runs
/// providers' flows.
pub(crate) fn build_worker(
    invoker: Arc<Invoker>,
    config: &RapConfig,
    shared: &Shared,
    authorizing: Option<authorize::Authorizing>,
) -> Result<Worker, String> {
    let toolset = Arc::new(ServedToolset::new(invoker.registry(), config)?);
    Ok(Worker {
        invoker,
        toolset,
        deliverer: shared.deliverer.clone(),
        dead_letters: shared.dead_letters.clone(),
        tool_timeout: config.tool_timeout,
        running: Arc::default(),
        authorizing,
        talk: shared.talk.clone(),
    })
}

/// Builds the adapter `config` describes: invocations kept as `runner`'s work and run in this
/// process (locally; `worker`: the worker role's runs), or by the worker role (in Lambda).
pub(crate) fn build(
    invoker: Arc<Invoker>,
    config: &RapConfig,
    shared: &Shared,
    authorizing: Option<authorize::Authorizing>,
    runner: Option<&Arc<crate::work::Runner>>,
    worker_role: bool,
) -> Result<Rap, String> {
    let Some(runner) = runner else {
        return Err(
            "RAP keeps every invocation it acknowledges in the state store: set OXP_STATE_TABLE (in Lambda), or serve it with the embedded store (OXP_STATE=embedded, the `embedded-state` feature)".into(),
        );
    };
    let worker = (runner.local() || worker_role)
        .then(|| build_worker(invoker.clone(), config, shared, authorizing))
        .transpose()?
        .map(Arc::new);
    let (toolset, running) = match &worker {
        Some(worker) => (worker.toolset.clone(), worker.running.clone()),
        None => (
            Arc::new(ServedToolset::new(invoker.registry(), config)?),
            Arc::default(),
        ),
    };
    Ok(Rap {
        toolset,
        queue: Jobs::new(runner.clone(), worker, config.max_pending),
        policy: config.callbacks.clone(),
        limiter: config
            .rate_limit
            .map(oxp_lambda_core::invoke::rate::CallRate::new),
        running,
        talk: shared.talk.clone(),
        status_limiter: status::limiter(),
    })
}
