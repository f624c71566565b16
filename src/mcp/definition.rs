//! A tool as `tools/list` shows it: its listing name, description, annotations and schemas.

use super::result;
use oxp_lambda_core::registry::RegisteredTool;
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The MCP definition of a tool: its listing name, description, input schema, and output
/// schema when the output is an object.
pub(crate) fn definition(tool: &RegisteredTool) -> Tool {
    let object = |schema: &Value| match schema {
        Value::Object(map) => Arc::new(map.clone()),
        _ => Arc::new(Map::new()),
    };
    let mut definition = Tool::new(
        tool.listing_name.clone(),
        tool.description.clone(),
        input_object(&tool.input_schema),
    );
    let a = &tool.annotations;
    if !a.is_empty() {
        definition.title = a.title.clone();
        let mut hints = ToolAnnotations::new();
        hints.title = a.title.clone();
        hints.read_only_hint = a.read_only;
        hints.destructive_hint = a.destructive;
        hints.idempotent_hint = a.idempotent;
        hints.open_world_hint = a.open_world;
        definition.annotations = Some(hints);
    }
    if result::has_structured_output(tool)
        && let Some(schema) = &tool.output_schema
    {
        definition = definition.with_raw_output_schema(object(schema));
    }
    definition
}

/// A tool's input schema as MCP lists it: an object schema always with `properties` (`{}` for
/// a tool without input), as the OpenAI and Vercel SDKs add themselves and some clients'
/// adapters (smolagents) require.
fn input_object(schema: &Value) -> Arc<Map<String, Value>> {
    let mut map = match schema {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    if map.get("type").and_then(Value::as_str) == Some("object") || map.is_empty() {
        map.entry("type").or_insert_with(|| Value::from("object"));
        map.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Arc::new(map)
}
