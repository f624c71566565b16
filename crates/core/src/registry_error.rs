//! Why a registry could not be built, and why a tool id resolved to no tool. Messages name
//! what is available, cut to [`MAX_LISTED`] names.

use crate::naming::shown;
use semver::Version;
use std::fmt;

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
    /// A tool needs shared state of a type no value was registered for.
    MissingState {
        /// Tool id.
        tool: String,
        /// The type's name.
        type_name: &'static str,
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
            Self::MissingState { tool, type_name } => write!(
                f,
                "tool '{tool}' needs shared state of type {type_name}: register one with RegistryBuilder::state"
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
    /// A protocol's name for no tool it serves (MCP's, RAP's, a Lambda target's: each serves
    /// one version of each of its tools, by listing name).
    NotServed {
        /// The name as sent.
        name: String,
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
    /// A message for developers, naming what is available.
    pub fn developer_message(&self) -> String {
        match self {
            Self::Malformed { reason, .. } => {
                format!("{reason}; expected Toolkit.Tool, Toolkit.Tool@x.y.z or Toolkit.Tool@x")
            }
            Self::UnknownTool { name, available } => format!(
                "No tool named {} is registered. Available tools: {available}",
                shown(name)
            ),
            Self::NotServed { name } => format!("No tool is served as {}", shown(name)),
            Self::UnknownVersion {
                name,
                version,
                available,
                ..
            } => format!(
                "{name} version {} is not available. Available versions: {available}",
                shown(&version.to_string())
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

/// `items` joined with commas, at most [`MAX_LISTED`] of them, then how many more (`none` when
/// there are none): how an error names what is available.
pub fn list_limited<S: AsRef<str>>(items: impl ExactSizeIterator<Item = S>) -> String {
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
