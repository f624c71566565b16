//! What tools share and how they take it: values registered once with
//! [`RegistryBuilder::state`](crate::RegistryBuilder::state) (a database pool, an HTTP client),
//! typed secret names ([`SecretKey`]), and the wrappers the `#[tool]` attribute recognizes among
//! a tool function's parameters ([`State`], [`Input`]).

use crate::tool::{ToolContext, ToolError};
use http::Extensions;
use std::any::{TypeId, type_name};
use std::fmt;
use std::sync::Arc;

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

/// A tool's need for shared state of one type, checked when the registry is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateNeed {
    /// The type.
    pub id: TypeId,
    /// Its name, for the error that says it is missing.
    pub name: &'static str,
}

impl StateNeed {
    /// The need for a `T`.
    pub fn of<T: 'static>() -> Self {
        Self {
            id: TypeId::of::<T>(),
            name: type_name::<T>(),
        }
    }
}

/// A tool function's parameter taking the shared value of type `T` (a clone of it: share an
/// `Arc` or a handle that is cheap to clone). The `#[tool]` attribute declares the need, so a
/// registry without a `T` fails to build instead of failing calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct State<T>(pub T);

impl<T: Clone + Send + Sync + 'static> State<T> {
    /// Takes the value from the call's context.
    pub fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        ctx.state::<T>().cloned().map(State).ok_or_else(|| {
            ToolError::internal(format_args!(
                "no shared state of type {} (RegistryBuilder::state)",
                type_name::<T>()
            ))
        })
    }
}

/// A tool function's parameter taking the whole input as one `Deserialize + JsonSchema` type,
/// instead of one parameter per input property.
#[derive(Debug, Clone, Copy, Default)]
pub struct Input<T>(pub T);

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
