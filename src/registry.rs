//! The protocol-neutral tool registry: tools are declared once with [`Tool::builder`], collected
//! with [`Registry::builder`] and resolved by id and version.
//!
//! Tool ids look like `Toolkit.Tool@1.2.3`. Each dot-separated part of the name uses letters,
//! digits, `_` and `-`; the listing name replaces the dots with `_` (`Toolkit_Tool`), and a call by
//! that form resolves too. Version resolution follows OXP: `@x.y.z` is exact, `@x` means exactly
//! `x.0.0`, and no version means the highest release (pre-releases only when a tool has no release).

use crate::tool::{ToolContext, ToolError};
use crate::validate::CompiledSchema;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RestrictFormats;
use semver::Version;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How a handler can fail.
#[derive(Debug)]
pub enum HandlerError {
    /// The input passed the schema but could not be turned into the handler's input type.
    InvalidInput(String),
    /// The tool itself failed.
    Tool(ToolError),
}

/// A type-erased tool handler: JSON in, JSON out.
pub type Handler =
    Arc<dyn Fn(Value, ToolContext) -> BoxFuture<Result<Value, HandlerError>> + Send + Sync>;

/// What a caller must supply before a tool runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requirements {
    /// Secret ids the tool reads.
    pub secrets: Vec<String>,
    /// Authorization providers (id and OAuth 2.0 scopes) whose token the tool needs.
    pub authorization: Vec<AuthorizationProvider>,
    /// Whether the caller must name the end user.
    pub user_id: bool,
}

impl Requirements {
    /// Whether nothing is required.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty() && self.authorization.is_empty() && !self.user_id
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

/// Input type for tools that take no parameters.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
pub struct NoInput {}

/// A tool declaration, checked when the [`Registry`] is built.
pub struct Tool {
    name: String,
    version: String,
    description: String,
    requirements: Requirements,
    idempotent: bool,
    input_schema: Value,
    output_schema: Option<Value>,
    handler: Handler,
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
    /// use oxp_lambda::{Tool, ToolContext, ToolError};
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
        ToolBuilder {
            name: name.into(),
            version: version.into(),
            description: String::new(),
            requirements: Requirements::default(),
            idempotent: true,
        }
    }
}

/// Declares a tool's metadata and requirements, then its handler.
#[derive(Debug, Clone)]
#[must_use = "a tool builder does nothing until a handler is given"]
pub struct ToolBuilder {
    name: String,
    version: String,
    description: String,
    requirements: Requirements,
    idempotent: bool,
}

impl ToolBuilder {
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

    /// Finishes with a typed async handler. The input and output JSON Schemas are generated from
    /// `I` and `O`; a tool whose output type is `()` declares no output and answers `null`.
    pub fn handler<I, O, F, Fut>(self, f: F) -> Tool
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        F: Fn(I, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let mut input_schema = schema_for::<I>(SchemaSettings::draft2020_12().for_deserialize());
        // The input type's own doc comment would repeat the tool description: OXP puts that
        // on the tool, and parameter descriptions stay on the properties.
        if let Some(object) = input_schema.as_object_mut() {
            object.remove("description");
        }
        let output_schema = schema_for::<O>(SchemaSettings::draft2020_12().for_serialize());
        let output_schema =
            (output_schema != serde_json::json!({"type": "null"})).then_some(output_schema);
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |input, ctx| {
            let f = Arc::clone(&f);
            // Everything happens inside the future so that a panic anywhere in the handler,
            // even before its first await, is caught where the future is polled.
            Box::pin(async move {
                let input: I = serde_json::from_value(input)
                    .map_err(|e| HandlerError::InvalidInput(e.to_string()))?;
                let output = f(input, ctx).await.map_err(HandlerError::Tool)?;
                serde_json::to_value(output).map_err(|e| {
                    HandlerError::Tool(ToolError::internal(format!(
                        "the tool output could not be serialized: {e}"
                    )))
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
            input_schema,
            output_schema,
            handler,
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

/// A tool in a built registry, its schemas compiled.
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
    /// JSON Schema of the input.
    pub input_schema: Value,
    /// JSON Schema of the output, if the tool returns something.
    pub output_schema: Option<Value>,
    pub(crate) input_validator: CompiledSchema,
    pub(crate) output_validator: Option<CompiledSchema>,
    pub(crate) handler: Handler,
}

impl fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredTool")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Why a registry could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryError {
    /// A tool name is empty or has characters outside `[A-Za-z0-9_-]` between dots.
    InvalidName(String),
    /// A version is not semantic versioning.
    InvalidVersion {
        /// Tool name.
        tool: String,
        /// What the version string was and why it is wrong.
        reason: String,
    },
    /// A schema is not a valid JSON Schema.
    InvalidSchema {
        /// Tool id.
        tool: String,
        /// `input` or `output`.
        which: &'static str,
        /// The compiler's reason.
        reason: String,
    },
    /// The input schema does not describe an object.
    InputNotObject(String),
    /// The same id is registered twice.
    Duplicate(String),
    /// Two different names give the same listing name.
    ListingNameClash {
        /// The listing name.
        listing_name: String,
        /// The first tool name.
        first: String,
        /// The second tool name.
        second: String,
    },
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidName(name) => write!(
                f,
                "tool name '{name}' is invalid: use dot-separated parts of letters, digits, '_' and '-'"
            ),
            Self::InvalidVersion { tool, reason } => {
                write!(f, "tool '{tool}' has an invalid version: {reason}")
            }
            Self::InvalidSchema {
                tool,
                which,
                reason,
            } => {
                write!(f, "tool '{tool}' has an invalid {which} schema: {reason}")
            }
            Self::InputNotObject(tool) => {
                write!(
                    f,
                    "tool '{tool}' has an input schema that does not accept an object"
                )
            }
            Self::Duplicate(id) => write!(f, "tool '{id}' is registered twice"),
            Self::ListingNameClash {
                listing_name,
                first,
                second,
            } => write!(
                f,
                "tools '{first}' and '{second}' would both be listed as '{listing_name}'"
            ),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Why a tool id did not resolve to a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// The id is not of the form `Name`, `Name@x.y.z` or `Name@x`.
    Malformed {
        /// The id as sent.
        tool_id: String,
        /// Why it is malformed.
        reason: &'static str,
    },
    /// No tool has that name.
    UnknownTool {
        /// The name as sent.
        name: String,
        /// Available tool names (at most [`MAX_LISTED`], then a count).
        available: String,
    },
    /// The tool exists but not in that version.
    UnknownVersion {
        /// Dotted name.
        name: String,
        /// Listing name.
        listing_name: String,
        /// The requested version.
        version: Version,
        /// Available versions.
        available: String,
    },
}

/// How many names an error message lists before it just counts the rest.
pub const MAX_LISTED: usize = 20;

impl ResolveError {
    /// A message for the user.
    pub fn user_message(&self) -> String {
        match self {
            Self::Malformed { tool_id, .. } => format!("Tool ID '{tool_id}' is not valid"),
            Self::UnknownTool { name, .. } => {
                format!("Tool '{}' was not found", name.replace('.', "_"))
            }
            Self::UnknownVersion { listing_name, .. } => {
                format!("Tool '{listing_name}' was not found")
            }
        }
    }

    /// A message for developers, naming what is available.
    pub fn developer_message(&self) -> String {
        match self {
            Self::Malformed { reason, .. } => {
                format!("{reason}; expected Toolkit.Tool, Toolkit.Tool@x.y.z or Toolkit.Tool@x")
            }
            Self::UnknownTool { name, available } => {
                format!("No tool named {name} is registered. Available tools: {available}")
            }
            Self::UnknownVersion {
                name,
                version,
                available,
                ..
            } => format!(
                "{name} version {version} is not available. Available versions: {available}"
            ),
        }
    }
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.developer_message())
    }
}

impl std::error::Error for ResolveError {}

/// All versions of one tool name, in ascending version order.
struct Family {
    versions: Vec<Arc<RegisteredTool>>,
    latest: usize,
}

/// Collects tools for [`Registry`].
#[derive(Debug, Default)]
#[must_use]
pub struct RegistryBuilder {
    tools: Vec<Tool>,
}

impl RegistryBuilder {
    /// Adds a tool.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds several tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Checks every tool (names, versions, schemas, duplicates) and compiles the schemas.
    pub fn build(self) -> Result<Registry, RegistryError> {
        Registry::new(self.tools)
    }
}

/// An immutable set of tools, resolved by id and version.
pub struct Registry {
    families: Vec<Family>,
    /// Both the dotted and the listing name map to a family.
    by_name: HashMap<String, usize>,
    /// Every version of every tool, sorted by name then version (the listing order).
    listing: Vec<Arc<RegisteredTool>>,
    /// Exact ids (`Name@x.y.z`) into `listing`: a fully qualified call resolves in one lookup.
    by_id: HashMap<String, usize>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.listing.iter().map(|t| &t.id))
            .finish()
    }
}

impl Registry {
    /// Starts a registry.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// Builds a registry from tools; see [`RegistryBuilder::build`].
    pub fn new(tools: Vec<Tool>) -> Result<Self, RegistryError> {
        let mut grouped: HashMap<String, Vec<Arc<RegisteredTool>>> = HashMap::new();
        for tool in tools {
            let registered = register(tool)?;
            grouped
                .entry(registered.name.clone())
                .or_default()
                .push(Arc::new(registered));
        }
        let mut names: Vec<String> = grouped.keys().cloned().collect();
        names.sort();
        let mut families = Vec::with_capacity(names.len());
        let mut by_name = HashMap::with_capacity(names.len() * 2);
        let mut listing = Vec::new();
        for name in names {
            let mut versions = grouped.remove(&name).unwrap_or_default();
            versions.sort_by(|a, b| a.version.cmp(&b.version));
            if let Some(pair) = versions.windows(2).find(|w| w[0].version == w[1].version) {
                return Err(RegistryError::Duplicate(pair[0].id.clone()));
            }
            let latest = versions
                .iter()
                .rposition(|t| t.version.pre.is_empty())
                .unwrap_or(versions.len() - 1);
            let index = families.len();
            let listing_name = versions[0].listing_name.clone();
            by_name.insert(name.clone(), index);
            if listing_name != name {
                if let Some(&other) = by_name.get(&listing_name) {
                    let first: &Family = &families[other];
                    return Err(RegistryError::ListingNameClash {
                        listing_name,
                        first: first.versions[0].name.clone(),
                        second: name,
                    });
                }
                by_name.insert(listing_name, index);
            }
            listing.extend(versions.iter().cloned());
            families.push(Family { versions, latest });
        }
        let by_id = listing
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
        Ok(Self {
            families,
            by_name,
            listing,
            by_id,
        })
    }

    /// Every version of every tool, sorted by name then version.
    pub fn tools(&self) -> &[Arc<RegisteredTool>] {
        &self.listing
    }

    /// The latest version of each tool, sorted by name.
    pub fn latest(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.families.iter().map(|f| &f.versions[f.latest])
    }

    /// Whether the registry is empty.
    pub fn is_empty(&self) -> bool {
        self.listing.is_empty()
    }

    /// Resolves `Name`, `Name@x.y.z` or `Name@x` (dotted or listing name).
    pub fn resolve(&self, tool_id: &str) -> Result<&Arc<RegisteredTool>, ResolveError> {
        if let Some(&i) = self.by_id.get(tool_id) {
            return Ok(&self.listing[i]);
        }
        let malformed = |reason| ResolveError::Malformed {
            tool_id: tool_id.to_owned(),
            reason,
        };
        let (name, version) = match tool_id.split_once('@') {
            Some((name, version)) => (name, Some(version)),
            None => (tool_id, None),
        };
        if !valid_name(name) {
            return Err(malformed(
                "the tool name is empty or has invalid characters",
            ));
        }
        let version = match version {
            None => None,
            Some(v) => Some(parse_requested_version(v).ok_or_else(|| {
                malformed("the version is neither x.y.z (semantic versioning) nor a major number x")
            })?),
        };
        let Some(&index) = self.by_name.get(name) else {
            return Err(ResolveError::UnknownTool {
                name: name.to_owned(),
                available: list_limited(self.families.iter().map(|f| f.versions[0].name.as_str())),
            });
        };
        let family = &self.families[index];
        match version {
            None => Ok(&family.versions[family.latest]),
            Some(version) => family
                .versions
                .binary_search_by(|t| t.version.cmp(&version))
                .map(|i| &family.versions[i])
                .map_err(|_| ResolveError::UnknownVersion {
                    name: family.versions[0].name.clone(),
                    listing_name: family.versions[0].listing_name.clone(),
                    version,
                    available: list_limited(
                        family.versions.iter().rev().map(|t| t.version.to_string()),
                    ),
                }),
        }
    }
}

fn register(tool: Tool) -> Result<RegisteredTool, RegistryError> {
    if !valid_name(&tool.name) {
        return Err(RegistryError::InvalidName(tool.name));
    }
    let version = Version::parse(&tool.version).map_err(|e| RegistryError::InvalidVersion {
        tool: tool.name.clone(),
        reason: format!("'{}': {e}", tool.version),
    })?;
    let id = format!("{}@{version}", tool.name);
    let compile = |schema: &Value, which| {
        CompiledSchema::compile(schema).map_err(|reason| RegistryError::InvalidSchema {
            tool: id.clone(),
            which,
            reason,
        })
    };
    let input_validator = compile(&tool.input_schema, "input")?;
    if !accepts_objects(&tool.input_schema) {
        return Err(RegistryError::InputNotObject(id));
    }
    let output_validator = tool
        .output_schema
        .as_ref()
        .map(|s| compile(s, "output"))
        .transpose()?;
    Ok(RegisteredTool {
        listing_name: tool.name.replace('.', "_"),
        name: tool.name,
        version,
        id,
        description: tool.description,
        requirements: tool.requirements,
        idempotent: tool.idempotent,
        input_schema: tool.input_schema,
        output_schema: tool.output_schema,
        input_validator,
        output_validator,
        handler: tool.handler,
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

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        })
}

/// `x.y.z[-pre][+build]` exactly, or `x` meaning `x.0.0`.
fn parse_requested_version(v: &str) -> Option<Version> {
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // Leading zeros are not semantic versioning (`01`), as in `x.y.z`.
        if v.len() > 1 && v.starts_with('0') {
            return None;
        }
        return v.parse::<u64>().ok().map(|major| Version::new(major, 0, 0));
    }
    Version::parse(v).ok()
}

fn list_limited<S: AsRef<str>>(items: impl ExactSizeIterator<Item = S>) -> String {
    let total = items.len();
    if total == 0 {
        return "none".to_owned();
    }
    let mut out = String::new();
    for (i, item) in items.take(MAX_LISTED).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(item.as_ref());
    }
    if total > MAX_LISTED {
        out.push_str(&format!(" and {} more", total - MAX_LISTED));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, version: &str) -> Tool {
        Tool::builder(name, version).raw_handler(json!({"type": "object"}), None, |_, _| async {
            Ok(Value::Null)
        })
    }

    fn registry(tools: &[(&str, &str)]) -> Registry {
        Registry::new(tools.iter().map(|(n, v)| tool(n, v)).collect()).unwrap()
    }

    fn resolved(r: &Registry, id: &str) -> String {
        r.resolve(id)
            .map(|t| t.id.clone())
            .unwrap_or_else(|e| format!("error: {e:?}"))
    }

    #[test]
    fn an_exact_version_resolves_exactly() {
        let r = registry(&[("A.B", "1.0.0"), ("A.B", "1.2.3"), ("A.B", "2.0.0")]);
        assert_eq!(resolved(&r, "A.B@1.2.3"), "A.B@1.2.3");
        assert!(matches!(
            r.resolve("A.B@1.2.4"),
            Err(ResolveError::UnknownVersion { .. })
        ));
    }

    #[test]
    fn shorthand_x_means_exactly_x_0_0() {
        let r = registry(&[("A.B", "1.0.0"), ("A.B", "1.5.0"), ("A.B", "2.1.0")]);
        assert_eq!(resolved(&r, "A.B@1"), "A.B@1.0.0");
        // Not "the latest 2.x": the spec says x.0.0.
        assert!(matches!(
            r.resolve("A.B@2"),
            Err(ResolveError::UnknownVersion { .. })
        ));
    }

    #[test]
    fn no_version_means_the_highest_release() {
        let r = registry(&[
            ("A.B", "1.0.0"),
            ("A.B", "10.0.0"),
            ("A.B", "9.9.9"),
            ("A.B", "11.0.0-beta.1"),
        ]);
        assert_eq!(
            resolved(&r, "A.B"),
            "A.B@10.0.0",
            "semver order, and releases before pre-releases"
        );
        assert_eq!(resolved(&r, "A.B@11.0.0-beta.1"), "A.B@11.0.0-beta.1");
        let only_pre = registry(&[("A.C", "1.0.0-alpha"), ("A.C", "1.0.0-beta")]);
        assert_eq!(resolved(&only_pre, "A.C"), "A.C@1.0.0-beta");
    }

    #[test]
    fn the_listing_name_resolves_too() {
        let r = registry(&[("Calculator.Add", "1.0.0")]);
        assert_eq!(resolved(&r, "Calculator_Add@1"), "Calculator.Add@1.0.0");
        assert_eq!(resolved(&r, "Calculator_Add"), "Calculator.Add@1.0.0");
    }

    #[test]
    fn malformed_ids_are_rejected() {
        let r = registry(&[("A.B", "1.0.0")]);
        for id in [
            "",
            "@1",
            "A.B@",
            "A.B@1.0",
            "A.B@01",
            "A.B@1.0.0@1",
            "A..B",
            "A.B@v1",
            "A B",
            "A.B@x",
            "A.B@1.0.0.0",
            "A.B@-1",
        ] {
            assert!(
                matches!(r.resolve(id), Err(ResolveError::Malformed { .. })),
                "{id:?}"
            );
        }
        assert!(matches!(
            r.resolve("A.C"),
            Err(ResolveError::UnknownTool { .. })
        ));
        assert!(matches!(
            r.resolve("A.B@99999999999999999999"),
            Err(ResolveError::Malformed { .. })
        ));
    }

    #[test]
    fn errors_name_what_is_available() {
        let r = registry(&[("A.B", "1.0.0"), ("A.B", "2.0.0"), ("C.D", "1.0.0")]);
        let e = r.resolve("A.B@3.0.0").unwrap_err();
        assert_eq!(e.user_message(), "Tool 'A_B' was not found");
        assert!(
            e.developer_message()
                .ends_with("Available versions: 2.0.0, 1.0.0")
        );
        let e = r.resolve("X.Y").unwrap_err();
        assert!(e.developer_message().ends_with("Available tools: A.B, C.D"));
    }

    #[test]
    fn long_lists_are_cut_short() {
        let names: Vec<String> = (0..50).map(|i| format!("T.N{i:02}")).collect();
        let r = Registry::new(names.iter().map(|n| tool(n, "1.0.0")).collect()).unwrap();
        let message = r.resolve("X.Y").unwrap_err().developer_message();
        assert!(message.ends_with("and 30 more"), "{message}");
    }

    #[test]
    fn duplicates_are_rejected_when_the_registry_is_built() {
        let err = Registry::new(vec![tool("A.B", "1.0.0"), tool("A.B", "1.0.0")]).unwrap_err();
        assert_eq!(err, RegistryError::Duplicate("A.B@1.0.0".into()));
        let err = Registry::new(vec![tool("A.B_C", "1.0.0"), tool("A_B.C", "1.0.0")]).unwrap_err();
        assert!(
            matches!(err, RegistryError::ListingNameClash { .. }),
            "{err}"
        );
    }

    #[test]
    fn invalid_declarations_are_build_errors() {
        assert!(matches!(
            Registry::new(vec![tool("A B", "1.0.0")]),
            Err(RegistryError::InvalidName(_))
        ));
        assert!(matches!(
            Registry::new(vec![tool("A.", "1.0.0")]),
            Err(RegistryError::InvalidName(_))
        ));
        assert!(matches!(
            Registry::new(vec![tool("A.B", "1.0")]),
            Err(RegistryError::InvalidVersion { .. })
        ));
        let bad_schema = Tool::builder("A.B", "1.0.0").raw_handler(
            json!({"type": "object", "properties": {"x": {"type": 5}}}),
            None,
            |_, _| async { Ok(Value::Null) },
        );
        assert!(matches!(
            Registry::new(vec![bad_schema]),
            Err(RegistryError::InvalidSchema { which: "input", .. })
        ));
        let bad_output = Tool::builder("A.B", "1.0.0").raw_handler(
            json!({"type": "object"}),
            Some(json!({"type": "nope"})),
            |_, _| async { Ok(Value::Null) },
        );
        assert!(matches!(
            Registry::new(vec![bad_output]),
            Err(RegistryError::InvalidSchema {
                which: "output",
                ..
            })
        ));
        let not_object = Tool::builder("A.B", "1.0.0").raw_handler(
            json!({"type": "string"}),
            None,
            |_, _| async { Ok(Value::Null) },
        );
        assert!(matches!(
            Registry::new(vec![not_object]),
            Err(RegistryError::InputNotObject(_))
        ));
    }

    #[test]
    fn the_listing_is_sorted_and_latest_is_per_tool() {
        let r = registry(&[("B.X", "2.0.0"), ("A.Y", "1.0.0"), ("B.X", "1.0.0")]);
        let ids: Vec<&str> = r.tools().iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["A.Y@1.0.0", "B.X@1.0.0", "B.X@2.0.0"]);
        let latest: Vec<&str> = r.latest().map(|t| t.id.as_str()).collect();
        assert_eq!(latest, ["A.Y@1.0.0", "B.X@2.0.0"]);
    }

    #[test]
    fn typed_tools_generate_self_contained_schemas() {
        #[derive(serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Address {
            /// Postal code.
            zip: String,
        }
        #[derive(serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Input {
            address: Address,
            count: Option<u32>,
        }
        let t = Tool::builder("A.B", "1.0.0")
            .handler(|_: Input, _| async { Ok::<_, ToolError>(1.5f64) });
        let r = Registry::new(vec![t]).unwrap();
        let tool = r.resolve("A.B").unwrap();
        let schema = tool.input_schema.to_string();
        assert!(
            !schema.contains("$ref") && !schema.contains("$defs") && !schema.contains("\"format\""),
            "{schema}"
        );
        assert_eq!(
            tool.input_schema["properties"]["address"]["properties"]["zip"]["type"],
            "string"
        );
        assert_eq!(tool.output_schema, Some(json!({"type": "number"})));
    }
}
