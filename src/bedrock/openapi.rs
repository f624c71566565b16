//! `oxp-lambda schema --bedrock-agent-api`: the action group's API schema (OpenAPI 3.0.0, as
//! `CreateAgentActionGroup`'s `apiSchema` and the CLI's `--api-schema` take it), for a group
//! defined with one rather than with function details.
//!
//! Each tool is the operation `POST /<listing name>` (its `operationId` the listing name), its
//! parameters the properties of a JSON request body. Bedrock takes a subset of OpenAPI 3.0 and
//! asks that constraints be described rather than declared, so each property is what the
//! function schema says of it ([`super::schema`]: a Bedrock type, the `enum` values in its
//! description, no bounds; the invoker still checks the full schema on every call), and the
//! same tools fail to export for the same reasons. A destructive tool's operation has
//! `x-requireConfirmation: ENABLED`. The response is the text the function's answer carries.

use super::params::declared_type;
use oxp_lambda_core::registry::RegisteredTool;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The `200` response's description: what the body holds.
const RESULT: &str = "The tool's result: its value (a string as it is, anything else as JSON), then its text content, a line each";

/// The API schema of `tools`.
pub(crate) fn export(tools: &[Arc<RegisteredTool>]) -> Result<Value, String> {
    let mut paths = Map::new();
    for tool in tools {
        let function = super::schema::function(tool)
            .map_err(|e| format!("tool {}: {e}", tool.listing_name))?;
        let path = format!("/{}", tool.listing_name);
        paths.insert(path, json!({ "post": operation(tool, &function) }));
    }
    Ok(json!({
        "openapi": "3.0.0",
        "info": {
            "title": "oxp-lambda tools",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "paths": paths,
    }))
}

/// The operation of `tool`, from its entry in the function schema.
fn operation(tool: &RegisteredTool, function: &Value) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    let details = function["parameters"].as_object().into_iter().flatten();
    for (name, detail) in details {
        let mut property = Map::new();
        property.insert("type".into(), detail["type"].clone());
        if let Some(description) = detail.get("description") {
            property.insert("description".into(), description.clone());
        }
        if detail["type"] == "array" {
            // The function schema checked that its items have one type of Bedrock's.
            let items = tool.input_schema["properties"][name]["items"].clone();
            let items = declared_type(&items).unwrap_or("string");
            property.insert("items".into(), json!({ "type": items }));
        }
        if detail["required"] == true {
            required.push(name.clone());
        }
        properties.insert(name.clone(), Value::Object(property));
    }
    let mut operation = Map::new();
    operation.insert("operationId".into(), json!(tool.listing_name));
    operation.insert("description".into(), function["description"].clone());
    if !properties.is_empty() {
        let mut schema = json!({ "type": "object", "properties": properties });
        if !required.is_empty() {
            schema["required"] = json!(required);
        }
        operation.insert(
            "requestBody".into(),
            json!({
                "required": !required.is_empty(),
                "content": { "application/json": { "schema": schema } },
            }),
        );
    }
    operation.insert(
        "responses".into(),
        json!({ "200": {
            "description": RESULT,
            "content": { "application/json": { "schema": { "type": "string" } } },
        }}),
    );
    if function.get("requireConfirmation").is_some() {
        operation.insert("x-requireConfirmation".into(), json!("ENABLED"));
    }
    Value::Object(operation)
}
