//! Bedrock's parameters (`{name, type, value}`, every value a string) as the tool's JSON
//! input: each value is converted to the type its property declares in the tool's input
//! schema (or, for a name the schema does not have, the type the event gives). A value that
//! does not convert stays a string, so the invoker's validation names the parameter and the
//! model is reprompted.

use serde::Deserialize;
use serde_json::{Map, Number, Value};

/// One parameter of the event.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Parameter {
    #[serde(default)]
    name: String,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    value: Value,
}

/// The JSON types a function parameter can have (Bedrock's `ParameterDetail.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    String,
    Number,
    Integer,
    Boolean,
    Array,
}

impl Kind {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "string" => Self::String,
            "number" => Self::Number,
            "integer" => Self::Integer,
            "boolean" => Self::Boolean,
            "array" => Self::Array,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::Boolean => "boolean",
            Self::Array => "array",
        }
    }
}

/// The single non-null type a property schema declares: `T`, `["T", "null"]`, or
/// `anyOf`/`oneOf` of `T` and `null`; `None` for anything else (objects, unions, no type).
pub(crate) fn declared_type(schema: &Value) -> Option<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => return Some(t),
        Some(Value::Array(types)) => {
            let mut non_null = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null");
            let first = non_null.next()?;
            return non_null.next().is_none().then_some(first);
        }
        _ => {}
    }
    let alternatives = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))?
        .as_array()?;
    let mut non_null = alternatives
        .iter()
        .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"));
    let only = non_null.next()?;
    if non_null.next().is_some() {
        return None;
    }
    declared_type(only)
}

/// Most parameters one event may carry.
pub(super) const MAX_PARAMETERS: usize = 256;
/// Most values all the parameters of one event may expand to (each array's elements counted):
/// a 1 MiB event of commas would otherwise become a million values.
pub(super) const MAX_VALUES: usize = 10_000;

/// The tool input of `parameters`, converted by `schema` (the tool's input schema); `Err` when
/// they are more, or expand to more values, than one event may hold.
pub(super) fn to_input<'a>(
    parameters: impl Iterator<Item = &'a Parameter>,
    schema: &Value,
) -> Result<Value, String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut input = Map::new();
    let mut budget = MAX_VALUES;
    for (i, p) in parameters.enumerate() {
        if i == MAX_PARAMETERS {
            return Err(format!(
                "the event has more than {MAX_PARAMETERS} parameters"
            ));
        }
        let property = properties.and_then(|props| props.get(&p.name));
        let kind = property
            .and_then(declared_type)
            .and_then(Kind::parse)
            .or_else(|| p.kind.as_deref().and_then(Kind::parse))
            .unwrap_or(Kind::String);
        let items = property
            .and_then(|prop| prop.get("items"))
            .and_then(declared_type)
            .and_then(Kind::parse)
            .unwrap_or(Kind::String);
        let value = convert(&p.value, kind, items, &mut budget)
            .ok_or_else(|| format!("the parameters expand to more than {MAX_VALUES} values"))?;
        input.insert(p.name.clone(), value);
    }
    Ok(Value::Object(input))
}

/// `value` converted to `kind`, counted against `budget`; `None` once the budget is spent.
fn convert(value: &Value, kind: Kind, items: Kind, budget: &mut usize) -> Option<Value> {
    *budget = budget.checked_sub(1)?;
    // Bedrock sends strings; a value that is already JSON of another type is taken as it is.
    let Value::String(text) = value else {
        return Some(value.clone());
    };
    Some(match kind {
        Kind::String => value.clone(),
        Kind::Integer => text
            .trim()
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| value.clone()),
        Kind::Number => number(text.trim()).unwrap_or_else(|| value.clone()),
        Kind::Boolean => match text.trim().to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => value.clone(),
        },
        Kind::Array => match array(text, items, budget)? {
            Some(array) => array,
            None => value.clone(),
        },
    })
}

fn number(text: &str) -> Option<Value> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(Value::from(i));
    }
    let f = text.parse::<f64>().ok()?;
    Number::from_f64(f).map(Value::Number)
}

/// A JSON array (`["a", "b"]`, `[1, 2]`), or the bracketed, comma-separated form the agent
/// often writes (`[a, b]`); each element converted to the items' type. `Some(None)`: not an
/// array; `None`: more elements than `budget` allows.
fn array(text: &str, items: Kind, budget: &mut usize) -> Option<Option<Value>> {
    let trimmed = text.trim();
    let elements: Vec<Value> = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Array(elements)) => elements,
        _ => {
            let Some(inner) = trimmed
                .strip_prefix('[')
                .and_then(|t| t.strip_suffix(']'))
                .map(str::trim)
            else {
                return Some(None);
            };
            if inner.is_empty() {
                Vec::new()
            } else {
                // Counted before anything is built from them.
                if inner.bytes().filter(|b| *b == b',').count() >= *budget {
                    return None;
                }
                inner
                    .split(',')
                    .map(|e| {
                        let e = e.trim();
                        let e = e
                            .strip_prefix('"')
                            .and_then(|e| e.strip_suffix('"'))
                            .unwrap_or(e);
                        Value::String(e.to_owned())
                    })
                    .collect()
            }
        }
    };
    if elements.len() > *budget {
        return None;
    }
    let converted = elements
        .iter()
        .map(|e| convert(e, items, Kind::String, budget))
        .collect::<Option<Vec<_>>>()?;
    Some(Some(Value::Array(converted)))
}
