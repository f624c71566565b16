//! What tools share and how they take it: values registered once with
//! [`RegistryBuilder::state`](crate::RegistryBuilder::state) (a database pool, an HTTP client),
//! typed secret names ([`SecretKey`]), and the wrappers the `#[tool]` attribute recognizes among
//! a tool function's parameters ([`State`], [`Input`]).

pub use crate::tool::{SecretKey, SharedState};
use crate::tool::{ToolContext, ToolError};
use std::any::{TypeId, type_name};

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
