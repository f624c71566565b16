//! A tool as a built registry holds it: what its declaration said, checked ([`register`]),
//! with its schemas' validators, compiled at once or at their first use.

use crate::declare::{Annotations, Handler, Requirements, Tool};
use crate::naming;
use crate::refusal::Rejection;
use crate::registry_error::RegistryError;
use crate::schema::CompiledSchema;
use semver::Version;
use serde_json::Value;
use std::fmt;
use std::sync::OnceLock;

/// A tool in a built registry, its schemas compiled at once or when first needed.
pub struct RegisteredTool {
    /// Dotted name, e.g. `Calculator.Add`.
    pub name: String,
    /// Listing name, e.g. `Calculator_Add`.
    pub listing_name: String,
    /// Version.
    pub version: Version,
    /// `name@version`.
    pub id: String,
    /// What the tool does.
    pub description: String,
    /// Requirements.
    pub requirements: Requirements,
    /// Whether a repeated `call_id` replays the stored outcome (see [`crate::idempotency`]).
    pub idempotent: bool,
    /// Its questions come before its long part ([`crate::ToolBuilder::asks_first`]).
    pub asks_first: bool,
    /// Whether a client may have it run as a task ([`crate::ToolBuilder::task_support`], else
    /// `Optional` for a long-running tool and `Forbidden` for any other).
    pub task_support: crate::declare::TaskSupport,
    /// How the tool behaves, for clients (title, read-only, destructive, ...).
    pub annotations: Annotations,
    /// The tool's own time limit, if it set one.
    pub timeout: Option<std::time::Duration>,
    /// JSON Schema of the input.
    pub input_schema: Value,
    /// JSON Schema of the output, if the tool returns something.
    pub output_schema: Option<Value>,
    input_validator: OnceLock<Result<CompiledSchema, String>>,
    output_validator: OnceLock<Result<CompiledSchema, String>>,
    pub(crate) handler: Handler,
    /// Its calls' metric handles, registered by its first call over each protocol.
    pub(crate) metrics: crate::metric_handles::ToolMetrics,
}

impl RegisteredTool {
    /// Checks `input` against the tool's input schema, as the call path does before a run: what
    /// a protocol keeps for a later run (an MCP task's arguments) is checked before it is kept.
    /// An input schema that does not compile refuses every call ([`Rejection::InvalidSchema`]).
    pub fn check_input(&self, input: &Value) -> Result<(), Rejection> {
        // Tool input is always an object, whatever a hand-written schema leaves open.
        if !input.is_object() {
            return Err(Rejection::InvalidInput(
                crate::schema::ParameterErrors::from([(
                    crate::schema::WHOLE_INPUT.to_owned(),
                    "Must be an object".to_owned(),
                )]),
            ));
        }
        self.input_validator()
            .map_err(Rejection::InvalidSchema)?
            .check_input(input)
            .map_err(Rejection::InvalidInput)
    }

    /// Compiles the tool's schemas if they are not yet: what [`Registry::compile_schemas`](super::Registry::compile_schemas) does
    /// for each tool.
    pub fn compile_schemas(&self) -> Result<(), RegistryError> {
        self.input_validator()?;
        self.output_validator().transpose()?;
        Ok(())
    }

    fn input_validator(&self) -> Result<&CompiledSchema, RegistryError> {
        self.compiled(&self.input_validator, &self.input_schema, "input")
    }

    /// The output schema's validator, when the tool declares one.
    pub(crate) fn output_validator(&self) -> Option<Result<&CompiledSchema, RegistryError>> {
        let schema = self.output_schema.as_ref()?;
        Some(self.compiled(&self.output_validator, schema, "output"))
    }

    fn compiled<'a>(
        &self,
        cell: &'a OnceLock<Result<CompiledSchema, String>>,
        schema: &Value,
        which: &'static str,
    ) -> Result<&'a CompiledSchema, RegistryError> {
        cell.get_or_init(|| CompiledSchema::compile(schema))
            .as_ref()
            .map_err(|reason| RegistryError::InvalidSchema {
                tool: self.id.clone(),
                which,
                reason: reason.clone(),
            })
    }

    /// Whether a run of the tool that was interrupted (its process died or stopped) may simply
    /// run again: it is read-only or idempotent by its own annotations. Any other tool's
    /// interrupted run is ended with a message its caller sees, never run twice unasked.
    pub fn may_run_again(&self) -> bool {
        self.annotations.read_only == Some(true) || self.annotations.idempotent == Some(true)
    }
}

impl fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredTool")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The registered form of `tool`, its name, version and input schema checked.
pub(super) fn register(tool: Tool) -> Result<RegisteredTool, RegistryError> {
    if !super::valid_name(&tool.name) {
        return Err(RegistryError::InvalidName(tool.name));
    }
    let version = Version::parse(&tool.version).map_err(|e| RegistryError::InvalidVersion {
        tool: tool.name.clone(),
        reason: format!("'{}': {e}", tool.version),
    })?;
    let id = format!("{}@{version}", tool.name);
    if !accepts_objects(&tool.input_schema) {
        return Err(RegistryError::InputNotObject(id));
    }
    Ok(RegisteredTool {
        listing_name: naming::listing_name(&tool.name),
        name: tool.name,
        version,
        id,
        description: tool.description,
        requirements: tool.requirements,
        idempotent: tool.idempotent,
        asks_first: tool.asks_first,
        task_support: tool
            .task_support
            .unwrap_or(if tool.annotations.long_running == Some(true) {
                crate::declare::TaskSupport::Optional
            } else {
                crate::declare::TaskSupport::Forbidden
            }),
        annotations: tool.annotations,
        timeout: tool.timeout,
        input_schema: tool.input_schema,
        output_schema: tool.output_schema,
        input_validator: OnceLock::new(),
        output_validator: OnceLock::new(),
        handler: tool.handler,
        metrics: Default::default(),
    })
}

/// Whether a schema's declared `type` allows an object (schemas with required fields reject `{}`).
fn accepts_objects(schema: &Value) -> bool {
    match schema.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        Some(_) => false,
    }
}
