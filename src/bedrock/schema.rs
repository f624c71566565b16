//! `oxp-lambda schema --bedrock-agent`: the action group's function schema
//! (`{"functions": [{name, description, parameters, requireConfirmation}]}`, as
//! `CreateAgentActionGroup`'s `functionSchema` and the CLI's `--function-schema` take it).
//!
//! Function details say less than JSON Schema: each parameter has one type among `string`,
//! `number`, `integer`, `boolean` and `array` (of those), a description and whether it is
//! required. An optional value (`["T", "null"]`) is `T`, not required; `enum` values move into
//! the description; bounds are dropped (the invoker still checks them on every call). A
//! parameter that is an object or a union, or a name or text Bedrock refuses, fails naming the
//! tool and the field.

use super::params::{Kind, declared_type};
use oxp_lambda_core::registry::RegisteredTool;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Bedrock's bounds on a function's description and a parameter's.
const MAX_FUNCTION_DESCRIPTION: usize = 1200;
const MAX_PARAMETER_DESCRIPTION: usize = 500;

/// The function schema of `tools`.
pub(crate) fn export(tools: &[Arc<RegisteredTool>]) -> Result<Value, String> {
    let mut functions = Vec::with_capacity(tools.len());
    for tool in tools {
        functions.push(function(tool).map_err(|e| format!("tool {}: {e}", tool.listing_name))?);
    }
    Ok(json!({ "functions": functions }))
}

/// `tool` as one function of the schema; `Err` names what Bedrock cannot take.
pub(super) fn function(tool: &RegisteredTool) -> Result<Value, String> {
    if !valid_name(&tool.listing_name) {
        return Err("the name is not a Bedrock function name ([0-9a-zA-Z] with single '_' or '-' between, at most 100)".into());
    }
    let description = tool.description.trim();
    if description.is_empty() || description.chars().count() > MAX_FUNCTION_DESCRIPTION {
        return Err(format!(
            "the description must have 1 to {MAX_FUNCTION_DESCRIPTION} characters"
        ));
    }
    let required: Vec<&str> = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut parameters = Map::new();
    let empty = Map::new();
    let properties = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (name, schema) in properties {
        let detail = parameter(name, schema, required.contains(&name.as_str()))
            .map_err(|e| format!("field '{name}': {e}"))?;
        parameters.insert(name.clone(), detail);
    }
    let mut entry = Map::new();
    entry.insert("name".into(), json!(tool.listing_name));
    entry.insert("description".into(), json!(description));
    entry.insert("parameters".into(), Value::Object(parameters));
    // A destructive tool asks the user before it runs.
    if tool.annotations.destructive == Some(true) {
        entry.insert("requireConfirmation".into(), json!("ENABLED"));
    }
    Ok(Value::Object(entry))
}

fn parameter(name: &str, schema: &Value, required: bool) -> Result<Value, String> {
    if !valid_name(name) {
        return Err("the name is not a Bedrock parameter name".into());
    }
    let kind = match declared_type(schema) {
        Some(t) => Kind::parse(t).ok_or_else(|| format!("type '{t}' cannot be expressed"))?,
        // An enum of strings without a type is a string.
        None if enum_values(schema).is_some() => Kind::String,
        None => return Err("a union or untyped value cannot be expressed".into()),
    };
    if kind == Kind::Array {
        let items = schema.get("items").and_then(declared_type);
        match items.and_then(Kind::parse) {
            Some(Kind::Array) | None => {
                return Err("arrays of objects, unions or arrays cannot be expressed".into());
            }
            Some(_) => {}
        }
    }
    let mut description = schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_owned();
    if let Some(values) = enum_values(schema) {
        if !description.is_empty() {
            description.push(' ');
        }
        description.push_str(&format!("One of: {values}."));
    }
    if description.chars().count() > MAX_PARAMETER_DESCRIPTION {
        return Err(format!(
            "the description is over {MAX_PARAMETER_DESCRIPTION} characters"
        ));
    }
    let mut detail = Map::new();
    if !description.is_empty() {
        detail.insert("description".into(), json!(description));
    }
    detail.insert("type".into(), json!(kind.as_str()));
    detail.insert("required".into(), json!(required));
    Ok(Value::Object(detail))
}

/// `enum` (or a `const`) values, listed for the description.
fn enum_values(schema: &Value) -> Option<String> {
    let values: Vec<String> = match (schema.get("enum"), schema.get("const")) {
        (Some(Value::Array(values)), _) => values
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect(),
        (_, Some(v)) => vec![v.as_str().map_or_else(|| v.to_string(), str::to_owned)],
        _ => return None,
    };
    (!values.is_empty()).then(|| values.join(", "))
}

/// `([0-9a-zA-Z][_-]?){1,100}`: letters and digits, at most one `_` or `-` after each.
fn valid_name(name: &str) -> bool {
    let mut alnum = 0;
    let mut previous_separator = true; // no leading separator
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            alnum += 1;
            previous_separator = false;
        } else if (c == '_' || c == '-') && !previous_separator {
            previous_separator = true;
        } else {
            return false;
        }
    }
    (1..=100).contains(&alnum)
}
