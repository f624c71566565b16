//! The tool-authoring API: what a tool receives ([`ToolContext`]) and how it fails ([`ToolError`]).
//!
//! Nothing here is specific to a protocol: every adapter translates to and from these.

pub use crate::tool_error::ToolError;
pub use http::Extensions;

use crate::form::{Filled, Form};
use crate::sample::{Root, Sample, Sampled};
use crate::talk::{Ask, Choice, Reported, Subscribe, Subscription, TalkBack, TalkError};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A secret or token value. `Debug` and `Display` never show it; read it with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<Arc<str>>) -> Self {
        Self(value.into())
    }

    /// The value itself. Keep it out of logs, errors and tool output.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Everything a tool knows about the call besides its input.
///
/// A tool only sees the secrets and authorization tokens it declared in its requirements.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    /// Unique id of this call (the client's idempotency key, or a generated UUID).
    pub call_id: String,
    /// Client trace or span id.
    pub trace_id: Option<String>,
    /// The caller's W3C trace context, well-formed: pass it on (as the `traceparent` header)
    /// in requests the tool makes, so the caller's trace follows the call.
    pub traceparent: Option<String>,
    /// The end user the call is made for.
    pub user_id: Option<String>,
    /// Authorization tokens by provider id (only the providers the tool requires).
    pub authorization: HashMap<String, Secret>,
    /// Secrets by id (only the secrets the tool requires).
    pub secrets: HashMap<String, Secret>,
    /// When the call ends: the first of the transport's deadline (Lambda's, less its margin),
    /// the tool's own limit and `OXP_TOOL_TIMEOUT_MS`, fixed when the call arrived. The slot
    /// wait already spent part of it. `None` only when no limit applies at all.
    pub deadline: Option<Instant>,
    /// Fires when the call is cancelled: the caller went away, the protocol cancelled it (RAP
    /// `/cancel_tool_call`, MCP `notifications/cancelled`), or the deadline passed. See
    /// [`ToolContext::cancelled`].
    pub cancellation: Cancellation,
    /// What the protocol the call came over adds, as typed values (for example the async
    /// protocol's thread, `RapThread`). A new protocol adds a type here, never a field to this
    /// struct.
    pub extensions: Extensions,
    /// The values the registry shares with every call ([`ToolContext::state`]).
    pub state: SharedState,
    /// How the call talks back before it answers, and what it leaves running after: progress,
    /// views, questions for the user, subscriptions ([`crate::talk`]), as far as its protocol
    /// carries them.
    pub talk: TalkBack,
}

impl ToolContext {
    /// The secret `id`, if the tool declared it and it was supplied.
    pub fn secret(&self, id: &str) -> Option<&str> {
        self.secrets.get(id).map(Secret::expose)
    }

    /// The secret `key`, which the tool declared ([`ToolBuilder::secret`](crate::ToolBuilder::secret)
    /// or the `#[tool]` attribute's `secrets`): the invoker supplies every declared secret
    /// before the tool runs, so the error only means the tool did not declare it.
    pub fn expose(&self, key: SecretKey) -> Result<&str, ToolError> {
        self.secret(key.id()).ok_or_else(|| {
            ToolError::internal(format_args!("secret {key} was read but not declared"))
        })
    }

    /// The shared value of type `T` ([`RegistryBuilder::state`](crate::RegistryBuilder::state)).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.state.get::<T>()
    }

    /// The token for authorization provider `id`, if the tool declared it and it was supplied.
    pub fn token(&self, id: &str) -> Option<&str> {
        self.authorization.get(id).map(Secret::expose)
    }

    /// The protocol's value of type `T`, when the call came over a protocol that sets one.
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }

    /// Time left before [`ToolContext::deadline`] (zero once it passed); `None` without one.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Completes when the call is cancelled; select on it to stop early and answer what was
    /// done. After a cancellation the tool has a short grace period to return (its result is
    /// still delivered where the protocol has somewhere to deliver it); then it is dropped.
    ///
    /// ```
    /// use oxp_lambda_core::{ToolContext, ToolError};
    /// use std::time::Duration;
    ///
    /// async fn wait(ctx: ToolContext) -> Result<&'static str, ToolError> {
    ///     tokio::select! {
    ///         () = tokio::time::sleep(Duration::from_secs(60)) => Ok("done"),
    ///         () = ctx.cancelled() => Ok("stopped early"),
    ///     }
    /// }
    /// ```
    pub async fn cancelled(&self) {
        self.cancellation.cancelled().await;
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// Reports how far the call got (`done` of `total`, in the tool's own unit) with a message
    /// for the user: MCP's progress notifications, RAP's `progress` view. Never fails the call:
    /// the answer says whether it was carried.
    pub async fn progress(&self, done: f64, total: Option<f64>, message: &str) -> Reported {
        self.talk.progress(done, total, Some(message)).await
    }

    /// Publishes view `view_type` with `content` (a JSON object): RAP's `view_update`, the
    /// latest of each type winning. Never fails the call.
    pub async fn view(&self, view_type: &str, content: serde_json::Value) -> Reported {
        self.talk.view(view_type, content).await
    }

    /// Asks the user to choose and waits for the answer (the default when they dismiss the
    /// question): RAP's `user_choice`, MCP's elicitation. A protocol that cannot ask (OXP 1.0)
    /// fails with [`TalkError::NotCarried`], which `?` turns into an `unsupported` tool error.
    pub async fn ask(&self, ask: Ask) -> Result<Choice, TalkError> {
        self.talk.ask(ask).await
    }

    /// Asks the user to fill in a form (named fields: text, numbers, booleans) and waits for it:
    /// MCP's form elicitation, at 2026-07-28 an `input_required` round. A protocol without forms
    /// (OXP 1.0, RAP) fails with [`TalkError::NotCarried`]. Never for secrets.
    pub async fn fill(&self, form: Form) -> Result<Filled, TalkError> {
        self.talk.fill(form).await
    }

    /// Asks the client's model to continue a conversation and waits for its answer: MCP's
    /// sampling (at 2026-07-28 an `input_required` round, at 2025-06-18 and 2025-11-25 a request
    /// on the call's stream). A protocol or client that cannot carry it (OXP 1.0, RAP, an MCP
    /// client that did not declare `sampling`) fails with [`TalkError::NotCarried`]. MCP
    /// 2026-07-28 deprecates sampling (SEP-2577): it keeps working, but a new tool is better
    /// given what it needs as arguments.
    pub async fn sample(&self, sample: Sample) -> Result<Sampled, TalkError> {
        self.talk.sample(sample).await
    }

    /// Reads the client's roots (the directories or projects its user works in): MCP's
    /// `roots/list`, carried as [`ToolContext::sample`] is (and, like it, deprecated by MCP
    /// 2026-07-28, SEP-2577).
    pub async fn roots(&self) -> Result<Vec<Root>, TalkError> {
        self.talk.roots().await
    }

    /// Marks where the call's long part starts, in a tool declared
    /// [`asks_first`](crate::ToolBuilder::asks_first). Where the protocol can go on without the
    /// request (an MCP 2026-07-28 client that takes tasks), the request is answered with a task
    /// now and this run ends with [`TalkError::Parked`] (return it with `?`); the task runs the
    /// tool again from its start, its questions answered at once, so do nothing before this
    /// point that must not run twice. Everywhere else it returns at once and the call goes on.
    pub async fn detach(&self) -> Result<(), TalkError> {
        self.talk.detach().await
    }

    /// Opens a subscription to `subscribe.topic` of an event source: the call answers now and
    /// the events keep coming (RAP's `subscription_event`) until the subscription is cancelled,
    /// its thread closed, or its last event sent.
    pub async fn subscribe(&self, subscribe: Subscribe) -> Result<Subscription, TalkError> {
        self.talk.subscribe(subscribe).await
    }
}

/// A call's cancellation signal, shared by every clone: cancelling one cancels all. A tool can
/// hand a clone to tasks it spawns so they stop with the call.
#[derive(Debug, Clone, Default)]
pub struct Cancellation(CancellationToken);

impl Cancellation {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires the signal (again: a no-op).
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// Whether it fired.
    pub fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Completes once it fired.
    pub async fn cancelled(&self) {
        self.0.cancelled().await;
    }
}

/// The values a registry shares with every call of its tools, one per type. Cloning it is a
/// reference count.
#[derive(Clone, Default)]
pub struct SharedState(Arc<Extensions>);

impl SharedState {
    /// Wraps the values registered with [`RegistryBuilder::state`](crate::RegistryBuilder::state).
    pub fn new(values: Extensions) -> Self {
        Self(Arc::new(values))
    }

    /// The shared value of type `T`, if one was registered.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.0.get::<T>()
    }
}

impl fmt::Debug for SharedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedState").finish_non_exhaustive()
    }
}

/// The name of a secret a tool reads, declared once as a constant so that a typo is a
/// compile error rather than a missing value at run time.
///
/// ```
/// use oxp_lambda_core::{SecretKey, Tool, ToolContext, ToolError};
///
/// const CRM_KEY: SecretKey = SecretKey::new("CRM_API_KEY");
///
/// async fn call_crm(ctx: &ToolContext) -> Result<usize, ToolError> {
///     let key = ctx.expose(CRM_KEY)?;
///     Ok(key.len())
/// }
///
/// let builder = Tool::builder("Crm.Ping", "1.0.0").secret(CRM_KEY);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SecretKey(&'static str);

impl SecretKey {
    /// The secret named `id` (as the server holds it and as callers send it).
    pub const fn new(id: &'static str) -> Self {
        Self(id)
    }

    /// The id.
    pub const fn id(self) -> &'static str {
        self.0
    }
}

impl From<SecretKey> for String {
    fn from(key: SecretKey) -> Self {
        key.0.to_owned()
    }
}

impl fmt::Display for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}
