//! Declaring a tool: [`Tool::builder`], its requirements, and a typed or raw handler. The
//! [`crate::Registry`] checks and compiles what is declared here.

mod builder;

pub use builder::ToolBuilder;

use crate::content::ToolOutput;
use crate::state::StateNeed;
use crate::tool::{ToolContext, ToolError};
use schemars::JsonSchema;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How a handler can fail.
#[derive(Debug)]
pub(crate) enum HandlerError {
    /// The input passed the schema but could not be turned into the handler's input type.
    InvalidInput(String),
    /// The tool itself failed.
    Tool(ToolError),
}

impl HandlerError {
    /// The input passed the schema but not `error`, serde's, turning it into the handler's input
    /// type: what was expected, never what was sent ([`crate::naming::unfit`]).
    pub(crate) fn unreadable(error: &serde_json::Error) -> Self {
        let unfit = crate::naming::unfit(error);
        Self::InvalidInput(format!("Does not match the tool's input type: {unfit}"))
    }
}

/// A type-erased tool handler: JSON in, a JSON value with its content out.
pub(crate) type Handler = Arc<
    dyn Fn(Value, ToolContext) -> BoxFuture<Result<ToolOutput<Value>, HandlerError>> + Send + Sync,
>;

/// What a caller must supply before a tool runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requirements {
    /// Secret ids the tool reads.
    pub secrets: Vec<String>,
    /// Authorization providers (id and OAuth 2.0 scopes) whose token the tool needs.
    pub authorization: Vec<AuthorizationProvider>,
    /// Whether the caller must name the end user.
    pub user_id: bool,
    /// OAuth scopes the caller's own token must grant (checked where authentication reports
    /// scopes; a server without authentication has no token to check).
    pub caller_scopes: Vec<String>,
}

impl Requirements {
    /// Whether nothing is required.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
            && self.authorization.is_empty()
            && !self.user_id
            && self.caller_scopes.is_empty()
    }
}

/// An authorization provider a tool requires a token for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationProvider {
    /// Provider id, e.g. `google`.
    pub id: String,
    /// OAuth 2.0 scopes the token must carry (empty when not OAuth 2.0 or unscoped).
    pub scopes: Vec<String>,
}

/// How a tool behaves, for clients deciding whether to ask the user first. Declared once and
/// served in each protocol's names: MCP `title` and `annotations` (`readOnlyHint`,
/// `destructiveHint`, `idempotentHint`, `openWorldHint`), RAP `annotations` (`readOnly`,
/// `destructive`, `idempotent`, `longRunning`, and `requiresAuth` from the tool's first
/// authorization provider). `None` leaves a hint out, so the protocol's default applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    /// A human-readable name for the tool.
    pub title: Option<String>,
    /// It only reads; it changes nothing.
    pub read_only: Option<bool>,
    /// It may destroy or overwrite something (meaningful when not read-only).
    pub destructive: Option<bool>,
    /// Calling it again with the same input has no further effect.
    pub idempotent: Option<bool>,
    /// It reaches outside systems (the web, third-party services) rather than a closed domain.
    pub open_world: Option<bool>,
    /// It may take minutes or more.
    pub long_running: Option<bool>,
}

impl Annotations {
    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Whether a client may have the tool run as a task it polls rather than wait for its answer
/// (MCP's `execution.taskSupport`, the tasks extension at 2026-07-28). A protocol without
/// tasks ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Never a task: the call answers in its request.
    Forbidden,
    /// A task for a client that takes tasks, an answer in the request for any other. Unset,
    /// this is what a `long_running` tool gets (and `Forbidden` any other).
    #[default]
    Optional,
    /// Only a task: a client that takes no tasks is told it lacks the capability.
    Required,
}

impl TaskSupport {
    /// Its name as MCP lists it (`forbidden`, `optional`, `required`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// Input type for tools that take no parameters.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
pub struct NoInput {}

/// A tool declaration, checked when the [`Registry`](crate::Registry) is built.
pub struct Tool {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) description: String,
    pub(crate) requirements: Requirements,
    pub(crate) idempotent: bool,
    pub(crate) asks_first: bool,
    pub(crate) task_support: Option<TaskSupport>,
    pub(crate) annotations: Annotations,
    /// The tool's own time limit ([`ToolBuilder::timeout`]); `None` leaves the server's.
    pub timeout: Option<Duration>,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) handler: Handler,
    pub(crate) state: Vec<StateNeed>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// Starts declaring tool `name` (e.g. `Calculator.Add`) at `version` (e.g. `1.0.0`).
    ///
    /// ```
    /// use oxp_lambda_core::{Tool, ToolContext, ToolError};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct AddInput {
    ///     /// The first number to add.
    ///     a: f64,
    ///     /// The second number to add.
    ///     b: f64,
    /// }
    ///
    /// async fn add(input: AddInput, _ctx: ToolContext) -> Result<f64, ToolError> {
    ///     Ok(input.a + input.b)
    /// }
    ///
    /// let tool = Tool::builder("Calculator.Add", "1.0.0")
    ///     .description("Adds two numbers together.")
    ///     .handler(add);
    /// ```
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ToolBuilder {
        ToolBuilder::new(name.into(), version.into())
    }
}
