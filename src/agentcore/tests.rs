use super::schema::export;
use crate::{NoInput, Tool, ToolContext, ToolError};
use oxp_lambda_core::registry::Registry;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Place {
    /// The city.
    city: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Forecast {
    /// Where.
    place: Place,
    /// Where else, maybe.
    other: Option<Place>,
    /// How many days.
    #[schemars(range(min = 1, max = 7))]
    days: Option<u8>,
    unit: Unit,
    tags: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
struct Report {
    summary: String,
}

async fn forecast(_: Forecast, _: ToolContext) -> Result<Report, ToolError> {
    Ok(Report {
        summary: String::new(),
    })
}

fn export_of(tool: Tool) -> Result<Value, String> {
    let registry = Registry::builder().tool(tool).build().unwrap();
    export(&registry.served(&[], "pins").unwrap())
}

#[test]
fn the_export_inlines_refs_unwraps_optional_values_and_describes_enums() {
    let schema = export_of(
        Tool::builder("Weather.Forecast", "1.0.0")
            .description("Forecasts.")
            .handler(forecast),
    )
    .unwrap();
    let tool = &schema["inlinePayload"][0];
    assert_eq!(tool["name"], "Weather_Forecast");
    assert_eq!(tool["description"], "Forecasts.");
    let input = &tool["inputSchema"];
    assert_eq!(input["type"], "object");
    assert_eq!(
        input["properties"]["place"],
        json!({"type": "object", "description": "Where.",
        "properties": {"city": {"type": "string", "description": "The city."}}, "required": ["city"]})
    );
    assert_eq!(
        input["properties"]["other"]["type"], "object",
        "Option<Place> is a Place"
    );
    assert_eq!(
        input["properties"]["days"],
        json!({"type": "integer", "description": "How many days."})
    );
    assert_eq!(input["properties"]["unit"]["type"], "string");
    assert!(
        input["properties"]["unit"]["description"]
            .as_str()
            .unwrap()
            .contains(r#""Celsius", "Fahrenheit""#)
    );
    assert_eq!(
        input["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    let mut required: Vec<&str> = input["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["place", "tags", "unit"]);
    assert_eq!(
        tool["outputSchema"]["properties"]["summary"]["type"],
        "string"
    );
    // Only the gateway's keywords remain.
    let text = schema.to_string();
    for gone in [
        "$ref", "$defs", "$schema", "anyOf", "minimum", "format", "enum", "title",
    ] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
#[serde(untagged)]
enum Either {
    Number(f64),
    Text(String),
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct WithEither {
    value: Either,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct WithMap {
    labels: std::collections::HashMap<String, String>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct WithTuple {
    pair: (u8, String),
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Node {
    children: Vec<Node>,
}

fn failure_of<T: for<'de> Deserialize<'de> + JsonSchema + Send + 'static>() -> String {
    let tool = Tool::builder("Bad.Tool", "1.0.0")
        .handler(|_: T, _: ToolContext| async move { Ok::<_, ToolError>(()) });
    export_of(tool).unwrap_err()
}

#[test]
fn what_the_subset_cannot_express_fails_naming_the_tool_and_the_keyword() {
    let either = failure_of::<WithEither>();
    assert!(
        either.starts_with("tool Bad_Tool: the keyword 'anyOf' at '/properties/value'"),
        "{either}"
    );
    let map = failure_of::<WithMap>();
    assert!(
        map.contains("'additionalProperties' with a schema") && map.contains("/properties/labels"),
        "{map}"
    );
    let tuple = failure_of::<WithTuple>();
    assert!(
        tuple.contains("Bad_Tool") && tuple.contains("/properties/pair"),
        "{tuple}"
    );
    let recursive = failure_of::<Node>();
    assert!(recursive.contains("recursive $ref"), "{recursive}");
}

#[test]
fn a_tool_without_input_exports_an_empty_object_schema() {
    let tool = Tool::builder("System.Now", "1.0.0")
        .handler(|_: NoInput, _: ToolContext| async move { Ok::<_, ToolError>(1) });
    let schema = export_of(tool).unwrap();
    let entry = &schema["inlinePayload"][0];
    assert_eq!(entry["inputSchema"]["type"], "object");
    assert!(
        entry.get("outputSchema").is_none(),
        "a number output has no output schema"
    );
}

#[test]
fn the_client_context_is_read_as_json_or_as_the_emulators_base64() {
    use base64::Engine as _;
    let json = br#"{"custom":{"bedrockAgentCoreToolName":"t___Math_Add"}}"#;
    let want = serde_json::json!({"custom": {"bedrockAgentCoreToolName": "t___Math_Add"}});
    assert_eq!(super::client_context_json(json), Some(want.clone()));
    let encoded = base64::engine::general_purpose::STANDARD.encode(json);
    assert_eq!(
        super::client_context_json(encoded.as_bytes()),
        Some(want),
        "cargo-lambda's emulator passes the invoke's base64 on"
    );
    for odd in [&b"not json"[..], b"", b"bm90IGpzb24="] {
        assert_eq!(super::client_context_json(odd), None);
    }
}

/// The export of a tool whose input schema is `schema`, as written.
fn export_of_schema(schema: Value) -> Result<Value, String> {
    let tool = Tool::builder("Raw.Tool", "1.0.0")
        .description("Raw.")
        .raw_handler(schema, None, |_, _| async { Ok(Value::Null) });
    export_of(tool).map(|s| s["inlinePayload"][0]["inputSchema"].clone())
}

#[test]
fn hand_written_schemas_keep_their_meaning_or_fail_naming_the_keyword() {
    // An optional value written as a type list or as `anyOf` with null is its one type; an
    // `enum` or a `const` without a type gets the type its values share and moves into the
    // description; `true` is any value, an empty schema.
    let input = export_of_schema(json!({"type": "object", "properties": {
        "a": {"type": ["string", "null"]},
        "b": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "B."},
        "c": {"enum": [1, 2, 3]},
        "d": {"const": true},
        "e": {"enum": [1, "one"]},
        "f": true,
    }}))
    .unwrap();
    let properties = &input["properties"];
    assert_eq!(properties["a"], json!({"type": "string"}));
    assert_eq!(
        properties["b"],
        json!({"type": "integer", "description": "B."})
    );
    assert_eq!(
        properties["c"],
        json!({"type": "integer", "description": "One of: 1, 2, 3."})
    );
    assert_eq!(
        properties["d"],
        json!({"type": "boolean", "description": "Always: true."})
    );
    assert_eq!(
        properties["e"],
        json!({"description": "One of: 1, \"one\"."})
    );
    assert_eq!(properties["f"], json!({}));
    for (property, keyword) in [
        (
            json!({"type": ["string", "integer"]}),
            "the type list [\"string\",\"integer\"]",
        ),
        (
            json!({"$ref": "#name"}),
            "the $ref '#name' (only a '#/...' pointer into the schema is inlined)",
        ),
        (
            json!({"items": [{"type": "string"}]}),
            "the keyword 'items' as a list (a tuple)",
        ),
    ] {
        // A draft-07 schema, where `items` may still be a list.
        let schema = json!({"$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object", "properties": {"x": property},
            "definitions": {"Name": {"$id": "#name", "type": "string"}}});
        let error = export_of_schema(schema).unwrap_err();
        assert!(
            error.starts_with(&format!("tool Raw_Tool: {keyword} at '/properties/x'")),
            "{property}: {error}"
        );
    }
}
