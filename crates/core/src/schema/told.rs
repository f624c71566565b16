//! A problem with a tool's input in words for its caller: the parameter it concerns and what
//! the schema asks of it, never the value sent. jsonschema's own messages quote the value
//! (`"sk_live_…" does not match "^[a-z]+$"`), and nothing a caller sent comes back in an error;
//! the names in a parameter's path that come from the input (an unexpected parameter, a key of
//! a map) are shown as every caller's name is ([`crate::naming::shown`]: bounded, no control
//! characters).

use super::{ParameterErrors, WHOLE_INPUT};
use crate::naming::{shown, shown_at_most};
use jsonschema::error::{TypeKind, ValidationErrorKind as Kind};
use jsonschema::paths::LocationSegment;
use jsonschema::{JsonType, ValidationError};

/// Most parameters one refusal names: an input of 10,000 unexpected keys is told of the first.
const MOST_NAMED: usize = 32;

/// Most problems read from the validator for one refusal.
pub(super) const MOST_READ: usize = 256;

/// `error` into `errors`, under the parameter it concerns (a second problem of the same
/// parameter joins the first).
pub(super) fn record(errors: &mut ParameterErrors, error: &ValidationError<'_>) {
    let path = dotted(error.instance_path().segments());
    match error.kind() {
        Kind::Required { property } => {
            // Told under the missing parameter itself, not under its parent object.
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            note(errors, joined(&path, &name), "Is required");
        }
        Kind::AdditionalProperties { unexpected } | Kind::UnevaluatedProperties { unexpected } => {
            for name in unexpected {
                note(errors, joined(&path, name), "Is not an accepted parameter");
            }
        }
        kind => note(errors, path, &asked(kind)),
    }
}

/// `message` under parameter `path` (the whole input when empty), shown bounded.
fn note(errors: &mut ParameterErrors, path: String, message: &str) {
    let key = if path.is_empty() {
        WHOLE_INPUT.to_owned()
    } else {
        shown(&path)
    };
    if let Some(known) = errors.get_mut(&key) {
        if !known.split("; ").any(|m| m == message) {
            known.push_str("; ");
            known.push_str(message);
        }
    } else if errors.len() < MOST_NAMED {
        errors.insert(key, message.to_owned());
    }
}

/// What the schema asks of a value, in its own terms (limits, patterns and options are the
/// tool's), never the value.
fn asked(kind: &Kind) -> String {
    match kind {
        Kind::Type {
            kind: TypeKind::Single(ty),
        } => format!("Must be {}", article(*ty)),
        Kind::Type {
            kind: TypeKind::Multiple(set),
        } => {
            let names: Vec<&str> = set.iter().map(article).collect();
            format!("Must be {}", names.join(" or "))
        }
        // The tool's own values and patterns, bounded: a schema may list thousands.
        Kind::Enum { options } => format!("Must be one of {}", listed(options)),
        Kind::Constant { expected_value } => format!("Must be {}", listed(expected_value)),
        Kind::Pattern { pattern } => {
            format!("Must match the pattern {}", shown_at_most(pattern, 256))
        }
        Kind::Format { format } => format!("Must be a valid {format}"),
        Kind::Maximum { limit } => format!("Must be at most {limit}"),
        Kind::ExclusiveMaximum { limit } => format!("Must be less than {limit}"),
        Kind::Minimum { limit } => format!("Must be at least {limit}"),
        Kind::ExclusiveMinimum { limit } => format!("Must be greater than {limit}"),
        Kind::MultipleOf { multiple_of } => format!("Must be a multiple of {multiple_of}"),
        Kind::MaxLength { limit } => {
            format!("Must be at most {} long", counted(*limit, "character"))
        }
        Kind::MinLength { limit } => {
            format!("Must be at least {} long", counted(*limit, "character"))
        }
        Kind::MaxItems { limit } => format!("Must have at most {}", counted(*limit, "item")),
        Kind::AdditionalItems { limit } => {
            format!("Must have at most {}", counted(*limit as u64, "item"))
        }
        Kind::MinItems { limit } => format!("Must have at least {}", counted(*limit, "item")),
        Kind::MaxProperties { limit } => {
            format!("Must have at most {}", counted(*limit, "property"))
        }
        Kind::MinProperties { limit } => {
            format!("Must have at least {}", counted(*limit, "property"))
        }
        Kind::UniqueItems => "Must not repeat an item".to_owned(),
        Kind::Contains => "Must contain an item of the form the schema asks".to_owned(),
        Kind::UnevaluatedItems { .. } => "Has items that are not accepted".to_owned(),
        Kind::PropertyNames { .. } => "Has a property name that is not accepted".to_owned(),
        Kind::AnyOf { .. } | Kind::OneOfNotValid { .. } => {
            "Must match one of the accepted forms".to_owned()
        }
        Kind::OneOfMultipleValid { .. } => {
            "Must match exactly one of the accepted forms".to_owned()
        }
        Kind::Not { .. } | Kind::FalseSchema => "Is not accepted".to_owned(),
        Kind::ContentEncoding { content_encoding } => {
            format!("Must be encoded as {content_encoding}")
        }
        Kind::ContentMediaType { content_media_type } => format!("Must be {content_media_type}"),
        // A custom keyword's message is its author's and may quote the value; anything else
        // (a pattern too costly to run, a reference) is named by its keyword.
        kind => format!("Fails `{}`", kind.keyword()),
    }
}

/// A schema's value as a message shows it: at most 256 characters of its JSON.
fn listed(value: &serde_json::Value) -> String {
    shown_at_most(&value.to_string(), 256)
}

/// `n` of `thing`, its plural as English writes it.
fn counted(n: u64, thing: &str) -> String {
    match (n, thing.strip_suffix('y')) {
        (1, _) => format!("1 {thing}"),
        (n, Some(stem)) => format!("{n} {stem}ies"),
        (n, None) => format!("{n} {thing}s"),
    }
}

/// `path` with `name` appended.
fn joined(path: &str, name: &str) -> String {
    match path.is_empty() {
        true => name.to_owned(),
        false => format!("{path}.{name}"),
    }
}

/// A location as a dotted path (`address.zip`, `tags.1`).
pub(super) fn dotted<'a>(segments: impl Iterator<Item = LocationSegment<'a>>) -> String {
    let mut path = String::new();
    for segment in segments {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(&segment.to_string());
    }
    path
}

fn article(ty: JsonType) -> &'static str {
    match ty {
        JsonType::Null => "null",
        JsonType::Boolean => "a boolean",
        JsonType::Integer => "an integer",
        JsonType::Number => "a number",
        JsonType::String => "a string",
        JsonType::Array => "an array",
        JsonType::Object => "an object",
    }
}
