use super::schema::export;
use crate::{Tool, ToolContext, ToolError};
use oxp_lambda_core::registry::Registry;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Unit {
    Celsius,
    Fahrenheit,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Booking {
    /// The hotel's name.
    hotel: String,
    /// How many nights.
    #[schemars(range(min = 1, max = 30))]
    nights: Option<u8>,
    unit: Unit,
    /// Guests' names.
    guests: Vec<String>,
    /// Whether to send offers.
    offers: bool,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Place {
    city: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Nested {
    /// Where.
    place: Place,
}

fn export_of(tool: Tool) -> Result<Value, String> {
    let registry = Registry::builder().tool(tool).build().unwrap();
    export(&registry.served(&[], "").unwrap())
}

async fn book(_: Booking, _: ToolContext) -> Result<(), ToolError> {
    Ok(())
}

#[test]
fn each_parameter_has_a_bedrock_type_a_description_and_whether_it_is_required() {
    let tool = Tool::builder("Hotel.Book", "1.0.0")
        .description("Books a hotel.")
        .destructive()
        .handler(book);
    let schema = export_of(tool).unwrap();
    let function = &schema["functions"][0];
    assert_eq!(function["name"], "Hotel_Book");
    assert_eq!(function["description"], "Books a hotel.");
    assert_eq!(
        function["requireConfirmation"], "ENABLED",
        "a destructive tool asks the user first"
    );
    let p = &function["parameters"];
    assert_eq!(
        p["hotel"],
        json!({"description": "The hotel's name.", "type": "string", "required": true})
    );
    assert_eq!(
        p["nights"],
        json!({"description": "How many nights.", "type": "integer", "required": false}),
        "an optional value is its type, not required; bounds are left to the invoker"
    );
    assert_eq!(
        p["unit"],
        json!({"description": "One of: Celsius, Fahrenheit.", "type": "string", "required": true})
    );
    assert_eq!(p["guests"]["type"], "array");
    assert_eq!(p["offers"]["type"], "boolean");
}

#[test]
fn what_function_details_cannot_say_fails_naming_the_tool_and_field() {
    async fn nested(_: Nested, _: ToolContext) -> Result<(), ToolError> {
        Ok(())
    }
    let tool = Tool::builder("Trip.Plan", "1.0.0")
        .description("Plans.")
        .handler(nested);
    let err = export_of(tool).unwrap_err();
    assert!(
        err.contains("Trip_Plan") && err.contains("'place'") && err.contains("object"),
        "{err}"
    );

    let no_description = Tool::builder("Trip.Quiet", "1.0.0").raw_handler(
        json!({"type": "object"}),
        None,
        |_, _| async { Ok(Value::Null) },
    );
    let err = export_of(no_description).unwrap_err();
    assert!(
        err.contains("Trip_Quiet") && err.contains("description"),
        "{err}"
    );

    let bad_name = Tool::builder("Trip.Go", "1.0.0")
        .description("Goes.")
        .raw_handler(
            json!({"type": "object", "properties": {"to__where": {"type": "string"}}}),
            None,
            |_, _| async { Ok(Value::Null) },
        );
    let err = export_of(bad_name).unwrap_err();
    assert!(err.contains("'to__where'"), "{err}");
}

#[test]
fn an_api_schema_operation_says_of_each_property_what_its_function_says() {
    let tool = Tool::builder("Hotel.Book", "1.0.0")
        .description("Books a hotel.")
        .destructive()
        .handler(book);
    let registry = Registry::builder().tool(tool).build().unwrap();
    let schema = super::openapi::export(&registry.served(&[], "").unwrap()).unwrap();
    let operation = &schema["paths"]["/Hotel_Book"]["post"];
    assert_eq!(operation["x-requireConfirmation"], "ENABLED");
    let body = &operation["requestBody"]["content"]["application/json"]["schema"];
    let mut required: Vec<&str> = body["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["guests", "hotel", "offers", "unit"]);
    let p = &body["properties"];
    assert_eq!(
        p["nights"],
        json!({"description": "How many nights.", "type": "integer"}),
        "bounds are described or left to the invoker, as Bedrock asks"
    );
    assert_eq!(
        p["unit"],
        json!({"description": "One of: Celsius, Fahrenheit.", "type": "string"})
    );
    assert_eq!(
        p["guests"],
        json!({"description": "Guests' names.", "type": "array", "items": {"type": "string"}})
    );

    async fn nested(_: Nested, _: ToolContext) -> Result<(), ToolError> {
        Ok(())
    }
    let tool = Tool::builder("Trip.Plan", "1.0.0")
        .description("Plans.")
        .handler(nested);
    let registry = Registry::builder().tool(tool).build().unwrap();
    let err = super::openapi::export(&registry.served(&[], "").unwrap()).unwrap_err();
    assert!(
        err.contains("Trip_Plan") && err.contains("'place'"),
        "{err}"
    );
}
