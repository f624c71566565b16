//! Calls that talk back and outlive their answer: what a tool can say or ask before it answers
//! (progress, a view, a question for the user) and what it can leave running after (a
//! subscription to an event source). Protocol-free: the protocol a call came over gives it a
//! [`Talk`] channel, and says plainly what it cannot carry.
//!
//! A tool uses them through its [`ToolContext`](crate::ToolContext):
//!
//! ```
//! use oxp_lambda_core::talk::Ask;
//! use oxp_lambda_core::{ToolContext, ToolError};
//!
//! async fn deploy(ctx: ToolContext) -> Result<String, ToolError> {
//!     ctx.progress(0.0, Some(3.0), "checking").await;
//!     let choice = ctx
//!         .ask(Ask::new("Deploy to production?", ["Yes", "No"]).default(1))
//!         .await?; // over OXP 1.0: a clear `unsupported` error, never a hang
//!     ctx.view("deploy", serde_json::json!({"target": choice.label})).await;
//!     Ok(format!("chose {}", choice.label))
//! }
//! ```
//!
//! Progress and views are notifications: a protocol that cannot carry them says so in the
//! [`Reported`] answer and the call goes on. A question and a subscription change what the call
//! does, so a protocol that cannot carry them fails the call with [`TalkError::NotCarried`]
//! (class [`ErrorClass::Unsupported`](crate::ErrorClass::Unsupported)).

use crate::form::{Filled, Form};
use crate::sample::{Root, Sample, Sampled};
use serde_json::{Map, Value};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A boxed future borrowing the channel.
pub type TalkFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Longest progress message and question prompt, in characters (longer is cut).
pub const MAX_TEXT_CHARS: usize = 1024;
/// Most choices a question offers.
pub const MAX_CHOICES: usize = 32;
/// Longest choice label, in characters.
pub const MAX_CHOICE_CHARS: usize = 256;
/// Longest view type, source or topic name, in characters.
pub const MAX_NAME_CHARS: usize = 128;

/// How far a call got.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Done so far (in the tool's own unit).
    pub done: f64,
    /// The whole, when the tool knows it.
    pub total: Option<f64>,
    /// What is happening, for the user.
    pub message: Option<String>,
}

/// A question for the user: one of several labelled choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// What the user is asked.
    pub prompt: String,
    /// The labels, at least one.
    pub choices: Vec<String>,
    /// The choice taken when the user dismisses the question (an index into `choices`).
    pub default: usize,
    /// How long to wait for the answer at most (`None`: until the call's deadline).
    pub within: Option<Duration>,
}

impl Ask {
    /// Asks `prompt` with `choices`; the first is the default until [`Ask::default`] says
    /// otherwise.
    pub fn new<S: Into<String>>(
        prompt: impl Into<String>,
        choices: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            prompt: prompt.into(),
            choices: choices.into_iter().map(Into::into).collect(),
            default: 0,
            within: None,
        }
    }

    /// The choice taken when the user dismisses the question.
    #[must_use]
    pub fn default(mut self, index: usize) -> Self {
        self.default = index;
        self
    }

    /// Waits at most `limit` for the answer (never past the call's deadline).
    #[must_use]
    pub fn within(mut self, limit: Duration) -> Self {
        self.within = Some(limit);
        self
    }

    /// Checks the question: at least one choice, at most [`MAX_CHOICES`], a default among them,
    /// texts within bounds.
    pub fn check(&self) -> Result<(), TalkError> {
        let invalid = |why: &str| Err(TalkError::Invalid(why.to_owned()));
        if self.choices.is_empty() || self.choices.len() > MAX_CHOICES {
            return invalid("a question needs 1 to 32 choices");
        }
        if self.default >= self.choices.len() {
            return invalid("the default must be the index of a choice");
        }
        if self.prompt.chars().count() > MAX_TEXT_CHARS
            || self
                .choices
                .iter()
                .any(|c| c.is_empty() || c.chars().count() > MAX_CHOICE_CHARS)
        {
            return invalid("the prompt or a choice label is empty or too long");
        }
        Ok(())
    }
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The index of the choice.
    pub index: usize,
    /// Its label.
    pub label: String,
}

/// A named view the protocol keeps for the user: the latest content of each type wins.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The view's type (`"diff"`, `"sleep"`): what a client renders it as.
    pub view_type: String,
    /// Its content, a JSON object.
    pub content: Map<String, Value>,
}

/// A subscription to open: events of `topic` from event source `source` keep coming after the
/// call answered, until the subscription is cancelled, its thread closed, or its last event
/// (`max_events`) sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscribe {
    /// The event source (`demo`, `github`: `POST /webhooks/{source}`).
    pub source: String,
    /// What to receive of it (the source decides what a topic is).
    pub topic: String,
    /// The number of events after which the subscription ends (the last one says `final`).
    pub max_events: Option<u32>,
}

/// An open subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// Its id, to name in the call's answer (the runtime cancels it by the call's id).
    pub id: String,
}

/// Whether a notification reached the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reported {
    /// Sent to the caller.
    Sent,
    /// The protocol the call came over has no way to carry it (OXP 1.0: none).
    NotCarried,
    /// It could not be sent (the caller's endpoint did not take it): the call goes on.
    Failed,
}

pub use crate::talk_error::{
    ASKING_THE_CLIENTS_MODEL, ASKING_THE_USER, READING_THE_CLIENTS_ROOTS, TalkError,
};

/// What a protocol gives a call to talk back over. Each method has a default that says the
/// protocol cannot carry it, so a protocol implements what it has.
pub trait Talk: Send + Sync + fmt::Debug {
    /// The protocol's name, for errors (`oxp`, `rap`, `mcp`).
    fn protocol(&self) -> &'static str;

    /// Reports progress.
    fn progress(&self, progress: Progress) -> TalkFuture<'_, Reported> {
        let _ = progress;
        Box::pin(std::future::ready(Reported::NotCarried))
    }

    /// Publishes a view.
    fn view(&self, view: View) -> TalkFuture<'_, Reported> {
        let _ = view;
        Box::pin(std::future::ready(Reported::NotCarried))
    }

    /// Asks the user; `seq` numbers the questions of one call (0, 1, ...), so a call that runs
    /// again (a redelivered job) finds the question it asked before and its answer.
    fn ask(&self, ask: Ask, seq: u32) -> TalkFuture<'_, Result<Choice, TalkError>> {
        let _ = (ask, seq);
        let protocol = self.protocol();
        Box::pin(std::future::ready(Err(TalkError::NotCarried {
            what: ASKING_THE_USER,
            protocol,
        })))
    }

    /// Asks the user to fill in form number `seq` of the call (numbered with its questions).
    fn fill(&self, form: Form, seq: u32) -> TalkFuture<'_, Result<Filled, TalkError>> {
        let _ = (form, seq);
        let protocol = self.protocol();
        Box::pin(std::future::ready(Err(TalkError::NotCarried {
            what: "a form for the user",
            protocol,
        })))
    }

    /// Asks the client's model (request number `seq` of the call, numbered with its questions).
    fn sample(&self, sample: Sample, seq: u32) -> TalkFuture<'_, Result<Sampled, TalkError>> {
        let _ = (sample, seq);
        let protocol = self.protocol();
        Box::pin(std::future::ready(Err(TalkError::NotCarried {
            what: ASKING_THE_CLIENTS_MODEL,
            protocol,
        })))
    }

    /// Reads the client's roots (request number `seq` of the call, numbered with its
    /// questions).
    fn roots(&self, seq: u32) -> TalkFuture<'_, Result<Vec<Root>, TalkError>> {
        let _ = seq;
        let protocol = self.protocol();
        Box::pin(std::future::ready(Err(TalkError::NotCarried {
            what: READING_THE_CLIENTS_ROOTS,
            protocol,
        })))
    }

    /// Where the call's long part starts ([`TalkBack::detach`]): a protocol that can answer
    /// the request now and run the call again detached ends this run ([`TalkError::Parked`]);
    /// by default the call goes on.
    fn detach(&self) -> TalkFuture<'_, Result<(), TalkError>> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Opens a subscription; `seq` numbers the subscriptions of one call.
    fn subscribe(
        &self,
        subscribe: Subscribe,
        seq: u32,
    ) -> TalkFuture<'_, Result<Subscription, TalkError>> {
        let _ = (subscribe, seq);
        let protocol = self.protocol();
        Box::pin(std::future::ready(Err(TalkError::NotCarried {
            what: "a subscription",
            protocol,
        })))
    }
}

/// A protocol that carries nothing back (OXP 1.0's request and answer).
#[derive(Debug, Clone, Copy)]
pub struct Silent(pub &'static str);

impl Talk for Silent {
    fn protocol(&self) -> &'static str {
        self.0
    }
}

/// A call's channel as its tool holds it: the protocol's [`Talk`] and the numbering of its
/// questions and subscriptions. Clones share both.
#[derive(Clone)]
pub struct TalkBack {
    channel: Arc<dyn Talk>,
    asked: Arc<AtomicU32>,
    subscribed: Arc<AtomicU32>,
}

impl TalkBack {
    /// The channel of a call over a protocol that gives `channel`.
    pub fn new(channel: Arc<dyn Talk>) -> Self {
        Self {
            channel,
            asked: Arc::default(),
            subscribed: Arc::default(),
        }
    }

    /// Reports progress (`message` cut to [`MAX_TEXT_CHARS`]).
    pub async fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) -> Reported {
        let progress = Progress {
            done,
            total,
            message: message.map(|m| m.chars().take(MAX_TEXT_CHARS).collect()),
        };
        self.channel.progress(progress).await
    }

    /// Publishes view `view_type` with `content` (a JSON object; anything else is wrapped as
    /// `{"value": ...}`).
    pub async fn view(&self, view_type: &str, content: Value) -> Reported {
        let content = match content {
            Value::Object(map) => map,
            other => Map::from_iter([("value".to_owned(), other)]),
        };
        let view = View {
            view_type: view_type.chars().take(MAX_NAME_CHARS).collect(),
            content,
        };
        self.channel.view(view).await
    }

    /// Asks the user and waits for the answer. Questions asked at once (`tokio::join!` of
    /// two asks) are open at once, each waiting for its own answer; a call numbers its
    /// questions in the order they are first polled, so a call that runs again asks the same.
    pub async fn ask(&self, ask: Ask) -> Result<Choice, TalkError> {
        ask.check()?;
        let seq = self.asked.fetch_add(1, Ordering::Relaxed);
        self.channel.ask(ask, seq).await
    }

    /// Asks the user to fill in a form and waits for it. What the client submits is checked
    /// against the form's schema, as MCP asks of a server ("Servers SHOULD validate received
    /// data matches the requested schema"): an answer that does not fit is
    /// [`TalkError::UnfitAnswer`], never the tool's to read.
    pub async fn fill(&self, form: Form) -> Result<Filled, TalkError> {
        form.check().map_err(TalkError::Invalid)?;
        let schema = crate::schema::CompiledSchema::compile(&form.schema)
            .map_err(|e| TalkError::Invalid(format!("a form's schema does not compile: {e}")))?;
        // Numbered with the questions: a call's asks keep one order over its rounds.
        let seq = self.asked.fetch_add(1, Ordering::Relaxed);
        let filled = self.channel.fill(form, seq).await?;
        if let Filled::Accepted(values) = &filled {
            // A copy for the check: an answer is small (MCP bounds each at 32 KiB), asking rare.
            let values = Value::Object(values.clone());
            schema
                .check_input(&values)
                .map_err(TalkError::UnfitAnswer)?;
        }
        Ok(filled)
    }

    /// Asks the client's model and waits for its answer.
    pub async fn sample(&self, sample: Sample) -> Result<Sampled, TalkError> {
        sample.check().map_err(TalkError::Invalid)?;
        let seq = self.asked.fetch_add(1, Ordering::Relaxed);
        self.channel.sample(sample, seq).await
    }

    /// Reads the client's roots.
    pub async fn roots(&self) -> Result<Vec<Root>, TalkError> {
        let seq = self.asked.fetch_add(1, Ordering::Relaxed);
        self.channel.roots(seq).await
    }

    /// Marks where the call's long part starts ([`crate::ToolContext::detach`]).
    pub async fn detach(&self) -> Result<(), TalkError> {
        self.channel.detach().await
    }

    /// Opens a subscription.
    pub async fn subscribe(&self, subscribe: Subscribe) -> Result<Subscription, TalkError> {
        let named = |s: &str| !s.is_empty() && s.chars().count() <= MAX_NAME_CHARS;
        if !named(&subscribe.source) || !named(&subscribe.topic) || subscribe.max_events == Some(0)
        {
            return Err(TalkError::Invalid(
                "a subscription names a source and a topic of 1 to 128 characters, and at least one event".into(),
            ));
        }
        let seq = self.subscribed.fetch_add(1, Ordering::Relaxed);
        self.channel.subscribe(subscribe, seq).await
    }
}

impl Default for TalkBack {
    /// A channel that carries nothing (a call made in process).
    fn default() -> Self {
        Self::new(Arc::new(Silent("local")))
    }
}

impl fmt::Debug for TalkBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TalkBack")
            .field("protocol", &self.channel.protocol())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "talk_tests.rs"]
mod tests;
