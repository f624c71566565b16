//! The one call path. Every protocol adapter turns its request into a [`Call`] and hands it to
//! [`Invoker::invoke`], which alone resolves the tool, binds the user to the caller, checks the
//! tool's requirements and loads its secrets, validates the input, takes a slot of the one
//! concurrency pool, applies idempotency, runs the tool with a time limit and panic isolation,
//! checks its output, and writes the one log line of the call. The adapter only translates the
//! [`Outcome`] or [`Rejection`] back to its wire format.

mod call;
mod claim;
mod local;
pub mod metrics;
mod prepare;
pub mod rate;
mod refused;
mod requirements;
mod run;
mod slots;
mod trace;
mod watch;

pub use call::{Call, Disposition, Outcome, Target, TimeLimit};
pub use trace::traceparent;

pub use crate::refusal::{RETRY_AFTER, Rejection};
pub use run::CANCEL_GRACE;

use crate::idempotency::{Claim, Fingerprinted, Idempotency, fingerprint, scoped_key};
use crate::registry::{RegisteredTool, Registry, ResolveError};
use crate::secrets::Secrets;
use crate::talk::{Silent, TalkBack};
use crate::tokens::UserTokens;
use crate::tool::ToolContext;
use claim::{claimed, claimed_before, keep, release};
use prepare::{credentials_of, deadline_of};
use slots::Slots;
use std::sync::Arc;
use std::time::{Duration, Instant};
use watch::{Held, Watch};

/// How long a claim is held when a call has no deadline.
const UNBOUNDED_HOLD: Duration = Duration::from_secs(15 * 60);
/// Added to the time left before a call's deadline for the in-progress hold, to cover storing
/// the outcome.
const HOLD_MARGIN: Duration = Duration::from_secs(5);

/// Runs calls: one per process, shared by every protocol adapter and transport.
#[derive(Debug)]
pub struct Invoker {
    registry: Arc<Registry>,
    secrets: Secrets,
    idempotency: Option<Idempotency>,
    slots: Slots,
    timeout: Option<Duration>,
    tokens: Option<Arc<dyn UserTokens>>,
    rate: Option<rate::CallRate>,
}

impl Invoker {
    /// An invoker of `registry`'s tools: at most `max_concurrent` at once, each within
    /// `timeout` unless the call brings its own.
    pub fn new(
        registry: Arc<Registry>,
        secrets: Secrets,
        idempotency: Option<Idempotency>,
        max_concurrent: usize,
        timeout: Option<Duration>,
    ) -> Self {
        Self {
            registry,
            secrets,
            idempotency,
            slots: Slots::new(max_concurrent),
            timeout,
            tokens: None,
            rate: None,
        }
    }

    /// At most `limit` calls per caller per period (its principal's subject; calls without one
    /// are one anonymous caller's): a call past it is refused before anything else is read
    /// ([`Rejection::RateLimited`], with the wait), whatever protocol it came over.
    #[must_use]
    pub fn with_rate_limit(mut self, limit: rate::RateLimit) -> Self {
        self.rate = Some(rate::CallRate::new(limit));
        self
    }

    /// At most `per_caller` of the calls running at once one caller's (its principal's subject;
    /// calls without one have no share): a caller's calls past it wait for one of its own to
    /// end, holding no slot, so one caller's slow calls never take every slot. At or above the
    /// pool's size, no share is kept.
    #[must_use]
    pub fn with_calls_per_caller(mut self, per_caller: usize) -> Self {
        self.slots = self.slots.with_share(per_caller);
        self
    }

    /// The users' tokens the server holds: a tool's token the caller did not send comes from
    /// there, for the call's user ([`Principal::token_owner`](crate::Principal::token_owner)).
    #[must_use]
    pub fn with_user_tokens(mut self, tokens: Arc<dyn UserTokens>) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// The tools.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The server-held secrets (cached), for a protocol that needs one of its own (an event
    /// source's signing key): tools get only those they declare.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The idempotency store calls with a call id claim, and how long outcomes are kept.
    pub fn idempotency(&self) -> Option<&Idempotency> {
        self.idempotency.as_ref()
    }

    /// Runs `call`, and logs one line for it whatever happens, even when this future is
    /// dropped before it ends (the call is then cancelled and its claim released).
    pub async fn invoke(&self, call: Call) -> Result<Outcome, Rejection> {
        let mut watch = Watch::new(&call);
        let result = self.run(call, &mut watch).await;
        watch.finish(&result);
        result
    }

    /// Counts one call of `caller` (a principal's subject) against its rate
    /// ([`Self::with_rate_limit`]) now, for a protocol that accepts a call to run it later (an
    /// MCP task): its runs are then [`Call::rate_counted`], so a call the caller was told is
    /// accepted never ends by its caller's rate.
    pub fn count_call(&self, caller: Option<&str>) -> Result<(), Rejection> {
        match &self.rate {
            Some(rate) => rate
                .check(caller)
                .map_err(|retry_after| Rejection::RateLimited { retry_after }),
            None => Ok(()),
        }
    }

    /// Counts `call` against its caller's rate, first of all: one over it reads nothing more.
    fn admit(&self, call: &Call) -> Result<(), Rejection> {
        match call.rate_counted {
            true => Ok(()),
            false => self.count_call(call.principal.subject.as_deref()),
        }
    }

    async fn run(&self, mut call: Call, watch: &mut Watch) -> Result<Outcome, Rejection> {
        let arrived = Instant::now();
        self.admit(&call)?;
        let tool = self.tool_of(&call.target)?;
        watch.resolved(&tool);
        let deadline = self.deadline(&call, arrived, &tool);
        let user_id = call
            .principal
            .bind_user_id(call.user_id.take())
            .map_err(Rejection::UserBinding)?
            .filter(|u| !u.is_empty());
        let valid = tool.check_input(&call.input);
        let keyed = call.call_id.is_some() && tool.idempotent && valid.is_ok();
        let call_id = call
            .call_id
            .take()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let claim = keyed
            .then(|| self.claim_of(&tool, user_id.as_deref(), &call, &call_id))
            .flatten();
        // The requirements (secrets read, maybe from AWS) and the claim (a conditional write)
        // side by side: a cold call waits for one round trip, not two.
        let (required, claimed) = tokio::join!(
            requirements::check(
                &tool,
                &call.principal,
                user_id.as_deref(),
                call.authorization,
                call.secrets,
                self.holdings(),
            ),
            claimed(claim.as_ref(), deadline)
        );
        watch.claim = claim.filter(|_| matches!(claimed, Some(Ok(Claim::Acquired))));
        // Refused for what it always was, in that order: nothing of it stays claimed.
        let granted = match (required, valid, claimed.transpose()) {
            (Err(missing), ..) => Err(Rejection::Missing(missing)),
            (_, Err(invalid), _) => Err(invalid),
            (_, _, Err(e)) => Err(Rejection::Store(e)),
            (Ok(granted), Ok(()), Ok(None | Some(Claim::Acquired))) => Ok(granted),
            (Ok(_), Ok(()), Ok(Some(other))) => return claimed_before(other, call_id, tool),
        };
        let (authorization, secrets, vaulted) = match granted {
            Ok(granted) => granted,
            Err(refused) => return release(watch, refused).await,
        };
        let caller = call.principal.subject.as_deref();
        let _slot = match self.slots.take_or_wait(caller, deadline).await {
            Ok(slot) => slot,
            Err(full) => return release(watch, full.busy(call_id)).await,
        };
        let cancellation = call.cancellation.unwrap_or_default();
        watch.cancellation = Some(cancellation.clone());
        let ctx = ToolContext {
            call_id,
            trace_id: call.trace_id,
            traceparent: call.traceparent,
            user_id,
            authorization,
            secrets,
            deadline,
            cancellation: cancellation.clone(),
            extensions: call.extensions,
            state: self.registry.state().clone(),
            talk: TalkBack::new(call.talk.unwrap_or_else(|| Arc::new(Silent(call.protocol)))),
        };
        let mut executed = run::execute(tool, call.input, ctx, deadline).await;
        if refused::names_one(&executed) {
            let tokens = self.tokens.as_deref();
            executed = Box::pin(refused::reauthorize(executed, tokens, vaulted)).await;
        }
        // Held until the outcome is stored: a call dropped meanwhile still lets its claim go.
        let (Some(idem), Some(held)) = (&self.idempotency, &watch.claim) else {
            return executed;
        };
        let executed = keep(idem, held, executed, &cancellation).await;
        watch.claim = None;
        executed
    }

    /// What a call's requirements are met from: the server's secrets, the users' tokens.
    fn holdings(&self) -> requirements::Holdings<'_> {
        requirements::Holdings {
            secrets: &self.secrets,
            tokens: self.tokens.as_deref(),
        }
    }

    /// The tool `target` names.
    fn tool_of(&self, target: &Target) -> Result<Arc<RegisteredTool>, Rejection> {
        match target {
            Target::Tool(tool) => Ok(tool.clone()),
            Target::Id(id) => self
                .registry
                .resolve(id)
                .map(Arc::clone)
                .map_err(Rejection::Resolve),
            Target::Unserved(name) => Err(Rejection::Resolve(ResolveError::NotServed {
                name: name.clone(),
            })),
        }
    }

    /// One deadline for the whole call: the slot wait, the claim and the run share it.
    fn deadline(&self, call: &Call, arrived: Instant, tool: &RegisteredTool) -> Option<Instant> {
        let limit = match call.timeout {
            TimeLimit::Server => self.timeout,
            TimeLimit::Within(limit) => Some(limit),
            TimeLimit::Unlimited => None,
        };
        deadline_of(arrived, call.deadline, limit, tool.timeout)
    }

    /// The claim a call of `tool` with `call_id` makes when it has a key and the tool is
    /// idempotent: keyed with what the caller sent, before the requirements take what the tool
    /// declared (a repeat with other credentials is another call).
    fn claim_of(
        &self,
        tool: &RegisteredTool,
        user_id: Option<&str>,
        call: &Call,
        call_id: &str,
    ) -> Option<Held> {
        let idem = self.idempotency.as_ref()?;
        let credentials = credentials_of(&call.authorization, &call.secrets);
        let credentials: Vec<(&str, &str)> = credentials
            .iter()
            .map(|(id, value)| (id.as_str(), value.expose()))
            .collect();
        let print = fingerprint(&Fingerprinted {
            tool_id: &tool.id,
            user_id,
            input: &call.input,
            credentials: &credentials,
        });
        Some(Held {
            store: idem.store.clone(),
            key: scoped_key(
                call.protocol,
                call.principal.subject.as_deref(),
                call.call_scope.as_deref(),
                call_id,
            ),
            print,
        })
    }
}
