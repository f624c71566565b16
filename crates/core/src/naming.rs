//! The one naming rule every protocol shares: a tool's listing name (`Calculator_Add`) is its
//! dotted name (`Calculator.Add`) with each `.` as `_`, because model-facing tool names may not
//! contain dots. The registry resolves both forms.

/// The listing name of dotted tool name `name`.
pub(crate) fn listing_name(name: &str) -> String {
    name.replace('.', "_")
}
