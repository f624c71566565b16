//! The protocol-neutral tool registry: tools declared with [`Tool::builder`] are collected with
//! [`Registry::builder`], checked, their schemas compiled (at once, or when first needed:
//! [`RegistryBuilder::build`]), and resolved by id and version.
//!
//! Tool ids look like `Toolkit.Tool@1.2.3`. Each dot-separated part of the name uses letters,
//! digits, `_` and `-`; the listing name replaces the dots with `_` (`Toolkit_Tool`, see
//! [`crate::naming`]), and a call by that form resolves too. Version resolution: `@x.y.z`
//! is exact, `@x` means exactly `x.0.0`, and no version means the highest release (pre-releases
//! only when a tool has no release).

mod registered;

pub(crate) use crate::declare::HandlerError;
use crate::declare::Tool;
use crate::registry_error::list_limited;
pub use crate::registry_error::{RegistryError, ResolveError};
use crate::state::{SharedState, StateNeed};
use http::Extensions;
pub use registered::RegisteredTool;
use registered::register;
use semver::Version;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

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
    state: Extensions,
    provided: Vec<StateNeed>,
    compile_now: Option<bool>,
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

    /// Shares `value` with every call of every tool: a tool reads it with
    /// [`ToolContext::state`](crate::ToolContext::state) or takes it as a
    /// [`State<T>`](crate::State) parameter. One value per type; a second replaces the first.
    pub fn state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        let need = StateNeed::of::<T>();
        if !self.provided.contains(&need) {
            self.provided.push(need);
        }
        self
    }

    /// Whether [`RegistryBuilder::build`] compiles every schema (`true`, a debug build's
    /// default) or leaves each to its tool's first call (`false`, a release build's).
    pub fn compile_schemas_now(mut self, now: bool) -> Self {
        self.compile_now = Some(now);
        self
    }

    /// Checks every tool (names, versions, duplicates, the shared state it needs) and its
    /// schemas. A debug build (tests, `cargo run`) compiles every schema now and refuses an
    /// invalid one; a release build compiles each when a call first needs it, so that a Lambda
    /// function started for one call compiles that call's schemas alone, after its first poll
    /// (jsonschema checks the first schema it compiles against its meta-schema, whose
    /// validator it builds then: about a millisecond). [`Registry::compile_schemas`] compiles
    /// them all: [`oxp_lambda::run`](https://docs.rs/oxp-lambda) does before a local server
    /// starts and before a function initialized ahead of its calls polls.
    /// [`RegistryBuilder::compile_schemas_now`] chooses either way.
    pub fn build(self) -> Result<Registry, RegistryError> {
        for tool in &self.tools {
            if let Some(need) = tool.state.iter().find(|n| !self.provided.contains(n)) {
                return Err(RegistryError::MissingState {
                    tool: format!("{}@{}", tool.name, tool.version),
                    type_name: need.name,
                });
            }
        }
        let now = self.compile_now.unwrap_or(cfg!(debug_assertions));
        Registry::assemble(self.tools, SharedState::new(self.state), now)
    }
}

/// An immutable set of tools, resolved by id and version. Its maps hash with foldhash: their
/// keys are the server's own tool names, which no caller adds to, and SipHash cost every call
/// about 200 instructions of its lookup (`call_path/calculator_add`).
pub struct Registry {
    families: Vec<Family>,
    /// Both the dotted and the listing name map to a family.
    by_name: foldhash::HashMap<String, usize>,
    /// Every version of every tool, sorted by name then version (the listing order).
    listing: Vec<Arc<RegisteredTool>>,
    /// Exact ids (`Name@x.y.z`) into `listing`: a fully qualified call resolves in one lookup.
    by_id: foldhash::HashMap<String, usize>,
    state: SharedState,
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
        Self::builder().tools(tools).build()
    }

    /// The registry of `tools`, their schemas compiled now when `compile`.
    fn assemble(
        tools: Vec<Tool>,
        state: SharedState,
        compile: bool,
    ) -> Result<Self, RegistryError> {
        let mut grouped: HashMap<String, Vec<Arc<RegisteredTool>>> = HashMap::new();
        for tool in tools {
            let registered = register(tool)?;
            if compile {
                registered.compile_schemas()?;
            }
            grouped
                .entry(registered.name.clone())
                .or_default()
                .push(Arc::new(registered));
        }
        let mut names: Vec<String> = grouped.keys().cloned().collect();
        names.sort();
        let mut families = Vec::with_capacity(names.len());
        let mut by_name =
            foldhash::HashMap::with_capacity_and_hasher(names.len() * 2, Default::default());
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
            state,
        })
    }

    /// Compiles every tool's schemas that are not yet ([`RegistryBuilder::build`] says when
    /// they are): the first invalid one is the error.
    pub fn compile_schemas(&self) -> Result<(), RegistryError> {
        self.listing.iter().try_for_each(|t| t.compile_schemas())
    }

    /// The values shared with every call ([`RegistryBuilder::state`]).
    pub fn state(&self) -> &SharedState {
        &self.state
    }

    /// Every version of every tool, sorted by name then version.
    pub fn tools(&self) -> &[Arc<RegisteredTool>] {
        &self.listing
    }

    /// The latest version of each tool, sorted by name.
    pub fn latest(&self) -> impl Iterator<Item = &Arc<RegisteredTool>> {
        self.families.iter().map(|f| &f.versions[f.latest])
    }

    /// One version of each tool, as a protocol that names tools without versions serves them:
    /// the latest release, unless `pins` (`Name@x.y.z`, read from `variable`) picks another.
    /// Errors name a pin that resolves to no tool, or two pins of one tool.
    pub fn served(
        &self,
        pins: &[String],
        variable: &str,
    ) -> Result<Vec<Arc<RegisteredTool>>, String> {
        let mut pinned: HashMap<&str, &Arc<RegisteredTool>> = HashMap::new();
        for pin in pins {
            let tool = self
                .resolve(pin)
                .map_err(|e| format!("{variable}: '{pin}': {}", e.developer_message()))?;
            if pinned.insert(tool.name.as_str(), tool).is_some() {
                return Err(format!("{variable}: '{}' is pinned twice", tool.name));
            }
        }
        Ok(self
            .latest()
            .map(|latest| pinned.get(latest.name.as_str()).copied().unwrap_or(latest))
            .cloned()
            .collect())
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

/// Whether `name` is a dotted tool name: parts of letters, digits, `_` and `-`.
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

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
