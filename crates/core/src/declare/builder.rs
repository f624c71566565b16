//! [`ToolBuilder`]: a tool's metadata and requirements, then its typed or raw handler, which
//! makes the [`Tool`].

use super::{
    Annotations, AuthorizationProvider, Handler, HandlerError, Requirements, TaskSupport, Tool,
};
use crate::content::{IntoToolOutput, ToolOutput};
use crate::state::StateNeed;
use crate::tool::{ToolContext, ToolError};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RestrictFormats;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Declares a tool's metadata and requirements, then its handler.
#[derive(Debug, Clone)]
#[must_use = "a tool builder does nothing until a handler is given"]
pub struct ToolBuilder {
    name: String,
    version: String,
    description: String,
    requirements: Requirements,
    idempotent: bool,
    asks_first: bool,
    task_support: Option<TaskSupport>,
    annotations: Annotations,
    timeout: Option<Duration>,
    state: Vec<StateNeed>,
}

impl ToolBuilder {
    /// A declaration of tool `name` at `version` with nothing set yet.
    pub(super) fn new(name: String, version: String) -> Self {
        Self {
            name,
            version,
            description: String::new(),
            requirements: Requirements::default(),
            idempotent: true,
            asks_first: false,
            task_support: None,
            annotations: Annotations::default(),
            timeout: None,
            state: Vec::new(),
        }
    }

    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Requires secret `id`; the tool reads it with [`ToolContext::secret`].
    pub fn secret(mut self, id: impl Into<String>) -> Self {
        self.requirements.secrets.push(id.into());
        self
    }

    /// Requires the caller's own token to grant `scopes` (beside the server-wide
    /// `OXP_REQUIRED_SCOPES`): a call whose token lacks one is refused before the tool runs.
    pub fn caller_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.requirements
            .caller_scopes
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Requires a token from authorization provider `id` with the given OAuth 2.0 scopes.
    pub fn authorization<S: Into<String>>(
        mut self,
        id: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        self.requirements.authorization.push(AuthorizationProvider {
            id: id.into(),
            scopes: scopes.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Needs the shared value of type `T` ([`RegistryBuilder::state`](crate::RegistryBuilder::state)),
    /// read with [`ToolContext::state`]: a registry without one fails to build.
    pub fn state<T: Send + Sync + 'static>(mut self) -> Self {
        let need = StateNeed::of::<T>();
        if !self.state.contains(&need) {
            self.state.push(need);
        }
        self
    }

    /// Opts out of idempotency: a repeated `call_id` runs the tool again (for tools whose
    /// answer should be fresh every time, such as a clock).
    pub fn not_idempotent(mut self) -> Self {
        self.idempotent = false;
        self
    }

    /// Requires the caller to name the end user (`context.user_id`).
    pub fn requires_user_id(mut self) -> Self {
        self.requirements.user_id = true;
        self
    }

    /// The tool's own time limit; the call's deadline is the first of this, the server's
    /// (`OXP_TOOL_TIMEOUT_MS`) and the transport's.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Sets every annotation at once.
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// A human-readable name for the tool.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.annotations.title = Some(title.into());
        self
    }

    /// Annotates the tool as read-only (and so not destructive).
    pub fn read_only(mut self) -> Self {
        self.annotations.read_only = Some(true);
        self.annotations.destructive = Some(false);
        self
    }

    /// Annotates the tool as destructive: clients should ask the user before calling it.
    pub fn destructive(mut self) -> Self {
        self.annotations.read_only = Some(false);
        self.annotations.destructive = Some(true);
        self
    }

    /// Annotates the tool as idempotent: calling it again with the same input does nothing
    /// more. (A hint for clients; the server's replay of a repeated `call_id` is apart, see
    /// [`ToolBuilder::not_idempotent`].)
    pub fn idempotent_hint(mut self) -> Self {
        self.annotations.idempotent = Some(true);
        self
    }

    /// Annotates whether the tool reaches outside systems.
    pub fn open_world(mut self, open: bool) -> Self {
        self.annotations.open_world = Some(open);
        self
    }

    /// Annotates the tool as long-running.
    pub fn long_running(mut self) -> Self {
        self.annotations.long_running = Some(true);
        self
    }

    /// The tool asks its questions within the call's request, and its long part starts where
    /// it calls [`ToolContext::detach`]: an MCP task starts there rather than with the call.
    pub fn asks_first(mut self) -> Self {
        self.asks_first = true;
        self
    }

    /// Whether a client may have the tool run as a task ([`TaskSupport`]; unset: `Optional`
    /// for a `long_running` tool, `Forbidden` otherwise). A deployment may still require a
    /// task of any tool (`OXP_MCP_TASK_REQUIRED`).
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = Some(support);
        self
    }

    /// Finishes with a typed async handler. The input and output JSON Schemas are generated from
    /// `I` and the output's value type; a tool whose value type is `()` declares no output and
    /// answers `null`. The handler returns the value, or a [`ToolOutput`] with content items
    /// and display segments beside it.
    pub fn handler<I, O, F, Fut>(self, f: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: IntoToolOutput,
        F: Fn(I, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let mut input_schema = schema_for::<I>(SchemaSettings::draft2020_12().for_deserialize());
        // The input type's own doc comment would repeat the tool description: OXP puts that
        // on the tool, and parameter descriptions stay on the properties.
        if let Some(object) = input_schema.as_object_mut() {
            object.remove("description");
        }
        let output_schema = schema_for::<O::Value>(SchemaSettings::draft2020_12().for_serialize());
        let output_schema =
            (output_schema != serde_json::json!({"type": "null"})).then_some(output_schema);
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |input, ctx| {
            let f = Arc::clone(&f);
            // Everything happens inside the future so that a panic anywhere in the handler,
            // even before its first await, is caught where the future is polled.
            Box::pin(async move {
                let input: I =
                    serde_json::from_value(input).map_err(|e| HandlerError::unreadable(&e))?;
                let output = f(input, ctx)
                    .await
                    .map_err(HandlerError::Tool)?
                    .into_output();
                let value = serde_json::to_value(output.value).map_err(|e| {
                    HandlerError::Tool(ToolError::internal(format!(
                        "the tool output could not be serialized: {e}"
                    )))
                })?;
                Ok(ToolOutput {
                    value,
                    content: output.content,
                    display_as: output.display_as,
                })
            })
        });
        self.finish(input_schema, output_schema, handler)
    }

    /// Finishes with a handler over raw JSON and hand-written schemas (`None`: no output).
    pub fn raw_handler<F, Fut>(
        self,
        input_schema: Value,
        output_schema: Option<Value>,
        f: F,
    ) -> Tool
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        let f = Arc::new(f);
        self.raw_output_handler(input_schema, output_schema, move |input, ctx| {
            let f = Arc::clone(&f);
            async move { f(input, ctx).await.map(ToolOutput::new) }
        })
    }

    /// Like [`ToolBuilder::raw_handler`], for a handler that answers content items and display
    /// segments beside its value.
    pub fn raw_output_handler<F, Fut>(
        self,
        input_schema: Value,
        output_schema: Option<Value>,
        f: F,
    ) -> Tool
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput<Value>, ToolError>> + Send + 'static,
    {
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |input, ctx| {
            let f = Arc::clone(&f);
            Box::pin(async move { f(input, ctx).await.map_err(HandlerError::Tool) })
        });
        self.finish(input_schema, output_schema, handler)
    }

    fn finish(self, input_schema: Value, output_schema: Option<Value>, handler: Handler) -> Tool {
        Tool {
            name: self.name,
            version: self.version,
            description: self.description,
            requirements: self.requirements,
            idempotent: self.idempotent,
            asks_first: self.asks_first,
            task_support: self.task_support,
            annotations: self.annotations,
            timeout: self.timeout,
            input_schema,
            output_schema,
            handler,
            state: self.state,
        }
    }
}

/// Generates a self-contained schema (no `$ref`, no non-standard formats such as `double`) that a
/// model can read as it is.
fn schema_for<T: JsonSchema>(settings: SchemaSettings) -> Value {
    let mut schema = settings
        .with(|s| s.inline_subschemas = true)
        .with_transform(RestrictFormats::default())
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}
