//! `oxp-lambda schema --agentcore`: the gateway target's inline `toolSchema`, in the
//! gateway's schema subset (`type`, `description`, `properties`, `required`, `items`).
//!
//! What the subset cannot say but the function still checks is dropped: the invoker validates
//! every call against the tool's full schema, so a bound such as `minimum` only stops being a
//! hint to the model. `$ref`s are inlined, `["T", "null"]` and `anyOf: [T, null]` (an
//! optional value) become `T`, and `enum`/`const` move into the description. What would change
//! the meaning (`oneOf`, `anyOf`, `allOf` of several, `not`, conditionals, map-like
//! `additionalProperties`, tuples) fails, naming the tool and the keyword.

use crate::mcp::result::has_structured_output;
use oxp_lambda_core::registry::RegisteredTool;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Deepest `$ref` chain followed (a recursive type cannot be inlined).
const MAX_REF_DEPTH: usize = 32;

/// Keywords that carry meaning the subset cannot express.
const INEXPRESSIBLE: &[&str] = &[
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentSchemas",
    "dependentRequired",
    "prefixItems",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// The `toolSchema` of `tools`: `{"inlinePayload": [{name, description, inputSchema,
/// outputSchema?}]}`.
pub(crate) fn export(tools: &[Arc<RegisteredTool>]) -> Result<Value, String> {
    let mut payload = Vec::with_capacity(tools.len());
    for tool in tools {
        let fail = |e: Failure| {
            format!(
                "tool {}: {} at '{}' cannot be expressed in the AgentCore Gateway schema",
                tool.listing_name,
                e.what,
                if e.at.is_empty() { "/" } else { &e.at }
            )
        };
        let mut entry = Map::new();
        entry.insert("name".into(), json!(tool.listing_name));
        entry.insert("description".into(), json!(tool.description));
        let input = simplify(&tool.input_schema, &tool.input_schema, "", 0).map_err(fail)?;
        entry.insert("inputSchema".into(), input);
        if has_structured_output(tool)
            && let Some(output) = &tool.output_schema
        {
            let output = simplify(output, output, "/outputSchema", 0).map_err(fail)?;
            entry.insert("outputSchema".into(), output);
        }
        payload.push(Value::Object(entry));
    }
    Ok(json!({ "inlinePayload": payload }))
}

/// What cannot be expressed, and where.
#[derive(Debug)]
struct Failure {
    what: String,
    at: String,
}

fn failure(what: impl Into<String>, at: &str) -> Failure {
    Failure {
        what: what.into(),
        at: at.to_owned(),
    }
}

/// `schema` (a part of `root`, at `at`) in the subset.
fn simplify(schema: &Value, root: &Value, at: &str, depth: usize) -> Result<Value, Failure> {
    let Value::Object(map) = schema else {
        // `true` / `{}`: anything. The subset has no "any", so it stays an empty schema.
        return Ok(json!({}));
    };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        return inlined(map, reference, root, at, depth);
    }
    if let Some(branch) = optional_branch(map) {
        let mut inner = simplify(branch, root, at, depth)?;
        if let (Some(d), Value::Object(out)) = (map.get("description"), &mut inner) {
            out.entry("description").or_insert_with(|| d.clone());
        }
        return Ok(inner);
    }
    for keyword in INEXPRESSIBLE {
        if map.contains_key(*keyword) {
            return Err(failure(format!("the keyword '{keyword}'"), at));
        }
    }
    let mut out = Map::new();
    let mut description = map
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(t) = map.get("type") {
        out.insert("type".into(), single_type(t, at)?);
    }
    for (keyword, label) in [("enum", "One of"), ("const", "Always")] {
        if let Some(values) = map.get(keyword) {
            let note = format!("{label}: {}.", shown(values));
            description = Some(match description {
                Some(d) => format!("{d} {note}"),
                None => note,
            });
            if !out.contains_key("type")
                && let Some(t) = common_type(values)
            {
                out.insert("type".into(), json!(t));
            }
        }
    }
    if let Some(d) = description {
        out.insert("description".into(), json!(d));
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        let mut simplified = Map::new();
        for (name, property) in properties {
            let path = format!("{at}/properties/{name}");
            simplified.insert(name.clone(), simplify(property, root, &path, depth)?);
        }
        out.insert("properties".into(), Value::Object(simplified));
    }
    if let Some(required) = map.get("required") {
        out.insert("required".into(), required.clone());
    }
    if let Some(additional) = map.get("additionalProperties")
        && additional.is_object()
        && additional.as_object().is_some_and(|o| !o.is_empty())
    {
        return Err(failure(
            "the keyword 'additionalProperties' with a schema (a map)",
            at,
        ));
    }
    match map.get("items") {
        None => {}
        Some(items @ (Value::Object(_) | Value::Bool(_))) => {
            let path = format!("{at}/items");
            out.insert("items".into(), simplify(items, root, &path, depth)?);
        }
        Some(_) => return Err(failure("the keyword 'items' as a list (a tuple)", at)),
    }
    Ok(Value::Object(out))
}

/// The schema `reference` names (from `map`, at `at`), inlined in the subset; a description
/// beside the `$ref` describes this use, so it wins.
fn inlined(
    map: &Map<String, Value>,
    reference: &str,
    root: &Value,
    at: &str,
    depth: usize,
) -> Result<Value, Failure> {
    if depth >= MAX_REF_DEPTH {
        return Err(failure(format!("the recursive $ref '{reference}'"), at));
    }
    let target = resolve(reference, root).ok_or_else(|| {
        failure(
            format!("the $ref '{reference}' (only a '#/...' pointer into the schema is inlined)"),
            at,
        )
    })?;
    let mut inlined = simplify(target, root, at, depth + 1)?;
    if let (Some(d), Value::Object(out)) = (map.get("description"), &mut inlined) {
        out.insert("description".into(), d.clone());
    }
    Ok(inlined)
}

/// An `enum`'s or a `const`'s values as a description shows them.
fn shown(values: &Value) -> String {
    match values {
        Value::Array(items) => items
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// `#/$defs/Name` or `#/definitions/Name` in `root`.
fn resolve<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

/// The one non-null branch of `anyOf`/`oneOf: [T, {"type": "null"}]`, schemars' optional value.
fn optional_branch(map: &Map<String, Value>) -> Option<&Value> {
    let branches = map.get("anyOf").or_else(|| map.get("oneOf"))?.as_array()?;
    let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
    let mut rest = branches.iter().filter(|b| !is_null(b));
    let only = rest.next()?;
    (rest.next().is_none() && branches.len() == 2).then_some(only)
}

/// A `type` as one name: `["T", "null"]` is `T`.
fn single_type(t: &Value, at: &str) -> Result<Value, Failure> {
    match t {
        Value::String(_) => Ok(t.clone()),
        Value::Array(names) => {
            let mut rest = names.iter().filter(|n| n.as_str() != Some("null"));
            match (rest.next(), rest.next()) {
                (Some(one), None) => Ok(one.clone()),
                _ => Err(failure(format!("the type list {t}"), at)),
            }
        }
        _ => Err(failure("a 'type' that is not a name", at)),
    }
}

/// The JSON type every value of an `enum` (or a `const`) has, if one.
fn common_type(values: &Value) -> Option<&'static str> {
    let type_of = |v: &Value| match v {
        Value::String(_) => Some("string"),
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        _ => None,
    };
    match values {
        Value::Array(items) => {
            let first = type_of(items.first()?)?;
            items
                .iter()
                .all(|v| type_of(v) == Some(first))
                .then_some(first)
        }
        one => type_of(one),
    }
}
