//! Amazon Bedrock Agents action groups defined with an API schema: `apiPath` events answered in
//! the API shape (`apiPath`, `httpMethod`, `httpStatusCode`, `responseBody["application/json"]`)
//! by the same function that answers function details, and `oxp-lambda schema
//! --bedrock-agent-api` the OpenAPI 3.0.0 document to create the group with. The recorded
//! events (`events/bedrock-agent/api-*.json`) are replayed with the others by
//! `tests/bedrock_agent.rs`; AWS's own library for these events (Powertools for AWS Lambda)
//! answers the same event beside ours in `powertools_answers_the_same_event_in_the_same_shape`.
#![cfg(feature = "bedrock-agent")]

use crate::common;

use crate::bedrock_agent::types_app;
use common::*;
use serde_json::{Value, json};

fn api_event(path: &str, method: &str, parameters: Value, properties: Option<Value>) -> Vec<u8> {
    let mut event = json!({"messageVersion": "1.0", "actionGroup": "g", "apiPath": path,
        "httpMethod": method, "parameters": parameters, "sessionAttributes": {"k": "v"}});
    if let Some(properties) = properties {
        event["requestBody"] = json!({"content": {"application/json": {"properties": properties}}});
    }
    event.to_string().into_bytes()
}

fn body(answer: &Value) -> &str {
    answer["response"]["responseBody"]["application/json"]["body"]
        .as_str()
        .unwrap()
}

#[tokio::test]
async fn an_api_event_is_answered_in_the_api_shape_with_its_path_method_and_status_200() {
    let properties = json!([
        {"name": "text", "type": "string", "value": "42"},
        {"name": "count", "type": "integer", "value": "7"},
        {"name": "flag", "type": "boolean", "value": "TRUE"},
        {"name": "tags", "type": "array", "value": "[]"},
        {"name": "numbers", "type": "array", "value": "[1, 2]"}
    ]);
    let answer = types_app()
        .handle_bedrock_agent(&api_event(
            "/Types_Echo",
            "POST",
            json!([]),
            Some(properties),
        ))
        .await;
    let response = &answer["response"];
    assert_eq!(response["actionGroup"], "g");
    assert_eq!(response["apiPath"], "/Types_Echo");
    assert_eq!(response["httpMethod"], "POST");
    assert_eq!(response["httpStatusCode"], 200, "{answer}");
    assert!(response.get("responseState").is_none(), "{answer}");
    assert!(response.get("function").is_none() && response.get("functionResponse").is_none());
    let value: Value = serde_json::from_str(body(&answer)).unwrap();
    assert_eq!(
        value,
        json!({"text": "42", "count": 7, "ratio": null, "flag": true, "tags": [],
               "numbers": [1, 2]})
    );
    assert_eq!(
        answer["sessionAttributes"],
        json!({"k": "v"}),
        "passed back"
    );
    assert_eq!(answer["messageVersion"], "1.0");
}

#[tokio::test]
async fn parameters_and_body_properties_both_reach_the_tool_and_any_method_is_served() {
    let answer = types_app()
        .handle_bedrock_agent(&api_event(
            "/Types_Echo",
            "GET",
            json!([{"name": "text", "type": "string", "value": "query"},
                   {"name": "count", "type": "integer", "value": "1"}]),
            Some(
                json!([{"name": "flag", "type": "boolean", "value": "false"},
                        {"name": "tags", "type": "array", "value": "[]"},
                        {"name": "count", "type": "integer", "value": "2"}]),
            ),
        ))
        .await;
    assert_eq!(answer["response"]["httpMethod"], "GET");
    let value: Value = serde_json::from_str(body(&answer)).unwrap();
    assert_eq!(value["text"], "query");
    assert_eq!(value["flag"], false);
    assert_eq!(value["count"], 2, "a name in both is the body's");
}

#[tokio::test]
async fn a_failure_has_its_state_and_the_status_an_http_api_would_give() {
    let app = types_app();
    // Invalid input: the model may correct it.
    let answer = app
        .handle_bedrock_agent(&api_event(
            "/Types_Echo",
            "POST",
            json!([]),
            Some(json!([{"name": "count", "type": "integer", "value": "seven-secret"}])),
        ))
        .await;
    let response = &answer["response"];
    assert_eq!(response["responseState"], "REPROMPT", "{answer}");
    assert_eq!(response["httpStatusCode"], 400);
    assert!(body(&answer).starts_with("Error: Some input parameters are invalid"));
    assert!(
        !body(&answer).contains("seven-secret"),
        "no input value comes back"
    );
    // An operation the group does not have: only the deployment can fix it.
    let answer = app
        .handle_bedrock_agent(&api_event("/No\u{7}_Such", "POST", json!([]), None))
        .await;
    let response = &answer["response"];
    assert_eq!(response["responseState"], "FAILURE", "{answer}");
    assert_eq!(response["httpStatusCode"], 404);
    assert_eq!(
        response["apiPath"], "/No\u{7}_Such",
        "the path it came with"
    );
    assert_eq!(body(&answer), "Error: unknown API path /No_Such");
    // A function-details event to the same function keeps its own shape.
    let function = json!({"actionGroup": "g", "function": "Nope", "parameters": []});
    let answer = app
        .handle_bedrock_agent(function.to_string().as_bytes())
        .await;
    assert_eq!(
        answer["response"]["functionResponse"]["responseState"],
        "FAILURE"
    );
    assert!(answer["response"].get("httpStatusCode").is_none());
}

/// `oxp-lambda schema --<name>` of the example tools, as a user runs it.
fn exported(name: &str) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oxp-lambda"))
        .args(["schema", &format!("--{name}")])
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_api_schema_is_openapi_3_0_0_one_post_per_tool_its_parameters_a_json_body() {
    let schema = exported("bedrock-agent-api");
    assert_eq!(schema["openapi"], "3.0.0", "the version Bedrock asks for");
    let add = &schema["paths"]["/Calculator_Add"]["post"];
    assert_eq!(add["operationId"], "Calculator_Add");
    assert!(add["description"].as_str().is_some_and(|d| !d.is_empty()));
    let body = &add["requestBody"];
    assert_eq!(body["required"], true);
    let properties = &body["content"]["application/json"]["schema"];
    assert_eq!(properties["type"], "object");
    assert_eq!(properties["properties"]["a"]["type"], "number");
    assert_eq!(properties["required"], json!(["a", "b"]));
    let ok = &add["responses"]["200"];
    assert!(ok["description"].is_string());
    assert_eq!(
        ok["content"]["application/json"]["schema"]["type"],
        "string"
    );
    // Every path is `/` and an operation id, one for each function of the function schema.
    let paths = schema["paths"].as_object().unwrap();
    let functions = exported("bedrock-agent");
    let functions = functions["functions"].as_array().unwrap();
    assert_eq!(paths.len(), functions.len());
    for function in functions {
        let name = function["name"].as_str().unwrap();
        let operation = &paths[&format!("/{name}")]["post"];
        assert_eq!(operation["operationId"], name);
        assert_eq!(
            operation.get("x-requireConfirmation").is_some(),
            function.get("requireConfirmation").is_some(),
            "{name}: a destructive tool asks the user first, either way"
        );
    }
}

#[test]
#[ignore = "needs Powertools for AWS Lambda and openapi-spec-validator: scripts/test installs them (OXP_TEST_PYTHON) and runs this"]
fn powertools_answers_the_same_event_in_the_same_shape() {
    let event = "events/bedrock-agent/api-calculator-add.json";
    let schema = std::env::temp_dir().join(format!("oxp-api-schema-{}.json", std::process::id()));
    std::fs::write(&schema, exported("bedrock-agent-api").to_string()).unwrap();
    let theirs = run_client(
        "OXP_TEST_PYTHON",
        "bedrock_powertools.py",
        &[event, schema.to_str().unwrap()],
    );
    let _ = std::fs::remove_file(&schema);
    let theirs: Value = serde_json::from_str(&theirs).unwrap();
    let ours = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(example_app().handle_bedrock_agent(&std::fs::read(event).unwrap()));
    assert_eq!(ours["messageVersion"], theirs["messageVersion"]);
    assert_eq!(
        ours["response"], theirs["response"],
        "the same fields, values and body as Powertools'"
    );
}
