//! The OXP 1.0 specification, sentence by sentence (`shared/spec/oxp-*.txt`), and its
//! non-normative examples replayed against the example tools; its error behaviour and a call's
//! context are in `oxp_spec_errors.rs`.

use crate::common;

use common::*;
use oxp_lambda::{Config, Registry, Tool, ToolError};
use serde_json::{Value, json};

const GOLDEN_LIST: &str = "tests/golden/list_tools.json";

// ---- List Tools -------------------------------------------------------------------------------

#[tokio::test]
async fn list_tools_answers_schema_and_complete_tool_definitions_golden() {
    let reply = get(&example_app(), "/tools").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json["$schema"], "urn:oxp:1.0");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        // CI compares with the committed file; only a developer rewrites it.
        assert!(
            std::env::var_os("CI").is_none(),
            "UPDATE_GOLDEN is refused when CI is set"
        );
        let pretty = serde_json::to_string_pretty(&reply.json).unwrap() + "\n";
        std::fs::write(GOLDEN_LIST, pretty).unwrap();
    }
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(GOLDEN_LIST).unwrap()).unwrap();
    assert_eq!(
        reply.json, golden,
        "the wire format changed; UPDATE_GOLDEN=1 rewrites the golden file"
    );
}

#[tokio::test]
async fn listed_definitions_match_the_spec_example() {
    // The "Response (With Tools)" example of oxp-list-tools-flow.txt.
    let spec = json!([
      { "id": "Calculator.Add@1.0.0", "name": "Calculator_Add", "description": "Adds two numbers together.", "version": "1.0.0",
        "input_schema": { "parameters": { "type": "object", "properties": {
            "a": { "type": "number", "description": "The first number to add." },
            "b": { "type": "number", "description": "The second number to add." } }, "required": ["a", "b"] } },
        "output_schema": { "type": "number", "description": "The sum of the two numbers." } },
      { "id": "Doorbell.Ring@0.1.0", "name": "Doorbell_Ring", "description": "Rings a doorbell given a doorbell ID.", "version": "0.1.0",
        "input_schema": { "parameters": { "type": "object", "properties": {
            "doorbell_id": { "type": "string", "description": "The ID of the doorbell to ring." } }, "required": ["doorbell_id"] } },
        "output_schema": null }
    ]);
    let reply = get(&example_app(), "/tools").await;
    let tools = reply.json["tools"].as_array().unwrap();
    for expected in spec.as_array().unwrap() {
        let listed = tools
            .iter()
            .find(|t| t["id"] == expected["id"])
            .expect("listed");
        assert_eq!(listed, expected);
    }
}

#[tokio::test]
async fn with_no_tools_available_the_tools_array_is_empty() {
    // The async adapter needs at least one tool, so it is off for an empty registry.
    let config = Config::from_vars(false, [("OXP_RAP", "off")]).unwrap();
    let app = app_with(Registry::builder().build().unwrap(), config);
    let reply = get(&app, "/tools").await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json,
        json!({"$schema": "urn:oxp:1.0", "items": [], "tools": []})
    );
}

#[tokio::test]
async fn tool_requirements_are_listed() {
    let reply = get(&example_app(), "/tools").await;
    let sms = reply.json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "SMS.Send@0.1.2")
        .unwrap();
    assert_eq!(
        sms["requirements"],
        json!({"secrets": [{"id": "TWILIO_API_KEY"}]})
    );
}

// ---- $schema negotiation -----------------------------------------------------------------------

#[tokio::test]
async fn without_schema_the_server_assumes_the_latest_version() {
    let reply = call(
        &example_app(),
        json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}}),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json["$schema"], "urn:oxp:1.0");
    assert_eq!(reply.json["result"]["value"], 3);
}

#[tokio::test]
async fn an_unsupported_oxp_version_is_a_server_error_naming_the_supported_ones() {
    let app = example_app();
    let reply = call(
        &app,
        json!({"$schema": "urn:oxp:2.0", "request": {"tool_id": "Calculator.Add"}}),
    )
    .await;
    assert_eq!(reply.status, 400);
    let message = reply.json["message"].as_str().unwrap();
    assert!(
        message.contains("urn:oxp:2.0") && message.contains("urn:oxp:1.0"),
        "{message}"
    );

    let request = axum::http::Request::get("/tools")
        .body(axum::body::Body::from(r#"{"$schema":"urn:oxp:0.9"}"#))
        .unwrap();
    let reply = send(&app, request).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json["message"]
            .as_str()
            .unwrap()
            .contains("urn:oxp:1.0")
    );
}

#[tokio::test]
async fn list_tools_accepts_a_schema_in_the_body() {
    let request = axum::http::Request::get("/tools")
        .body(axum::body::Body::from(r#"{"$schema":"urn:oxp:1.0"}"#))
        .unwrap();
    assert_eq!(send(&example_app(), request).await.status, 200);
}

// ---- Call Tool: the spec's examples -------------------------------------------------------------

#[tokio::test]
async fn spec_example_successful_execution() {
    let reply = post(
        &example_app(),
        "/call",
        r#"{"$schema":"urn:oxp:1.0","request":{"call_id":"123e4567-e89b-12d3-a456-426614174000","tool_id":"Calculator.Add@1.0.0","input":{"a":10,"b":5}}}"#,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        result_without_duration(&reply),
        json!({"$schema": "urn:oxp:1.0", "result": {"call_id": "123e4567-e89b-12d3-a456-426614174000", "success": true, "value": 15}})
    );
}

#[tokio::test]
async fn spec_example_server_error_for_a_version_that_is_not_found() {
    let reply = post(
        &example_app(),
        "/call",
        r#"{"$schema":"urn:oxp:1.0","request":{"call_id":"123e4567-e89b-12d3-a456-426614174000","tool_id":"Calculator.Add@2.0.0"}}"#,
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json["$schema"], "urn:oxp:1.0");
    assert_eq!(reply.json["message"], "Tool 'Calculator_Add' was not found");
    // The spec's developer message, followed by what is available.
    let developer = reply.json["developer_message"].as_str().unwrap();
    assert!(
        developer.starts_with("Calculator.Add version 2.0.0 is not available"),
        "{developer}"
    );
    assert!(
        developer.ends_with("Available versions: 1.0.0"),
        "{developer}"
    );
}

#[tokio::test]
async fn spec_example_input_validation_error() {
    let reply = post(
        &example_app(),
        "/call",
        r#"{"$schema":"urn:oxp:1.0","request":{"call_id":"123e4567-e89b-12d3-a456-426614174000","tool_id":"Calculator.Add@1.0.0","input":{"a":10,"b":"infinity"}}}"#,
    )
    .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.json,
        json!({"$schema": "urn:oxp:1.0", "message": "Some input parameters are invalid", "parameter_errors": {"b": "Must be a number"}})
    );
}

#[tokio::test]
async fn spec_example_tool_execution_error() {
    let reply = post(
        &example_app(),
        "/call",
        r#"{"$schema":"urn:oxp:1.0","request":{"call_id":"723e4567-e89b-12d3-a456-426614174006","tool_id":"Doorbell.Ring@0.1.0","input":{"doorbell_id":"doorbell1"}}}"#,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        result_without_duration(&reply),
        json!({"$schema": "urn:oxp:1.0", "result": {
            "call_id": "723e4567-e89b-12d3-a456-426614174006",
            "success": false,
            "error": {
                "message": "Doorbell ID not found",
                "developer_message": "The doorbell with ID 'doorbell1' does not exist.",
                "can_retry": true,
                "additional_prompt_content": "ids: doorbell42,doorbell84",
                "retry_after_ms": 500
            }
        }})
    );
}

#[tokio::test]
async fn spec_request_example_doorbell_ring_with_no_output_answers_value_null() {
    let reply = call(&example_app(), json!({"request": {"tool_id": "Doorbell.Ring@0.1.0", "call_id": "223e4567-e89b-12d3-a456-426614174001", "input": {"doorbell_id": "doorbell42"}}})).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        result_without_duration(&reply)["result"],
        json!({"call_id": "223e4567-e89b-12d3-a456-426614174001", "success": true, "value": null})
    );
    assert!(reply.text.contains(r#""value":null"#));
}

#[tokio::test]
async fn spec_request_example_system_get_timestamp_takes_no_input() {
    let reply = call(&example_app(), json!({"request": {"tool_id": "System.GetTimestamp@1.0.0", "call_id": "323e4567-e89b-12d3-a456-426614174002"}})).await;
    assert_eq!(reply.status, 200);
    let result = &reply.json["result"];
    assert_eq!(result["success"], true);
    let timestamp = result["value"]["timestamp"].as_str().unwrap();
    humantime::parse_rfc3339(timestamp).expect("an RFC 3339 timestamp");
}

#[tokio::test]
async fn spec_request_example_sms_send_with_its_secret() {
    let reply = call(
        &example_app(),
        json!({"request": {
            "tool_id": "SMS.Send@0.1.2", "call_id": "523e4567-e89b-12d3-a456-426614174004",
            "input": {"to": "+5556051234567", "message": "Hello from Open Tool Calling!"},
            "context": {"secrets": [{"id": "TWILIO_API_KEY", "value": "TWILIO_SECRET_VALUE"}]}
        }}),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        result_without_duration(&reply)["result"],
        json!({"call_id": "523e4567-e89b-12d3-a456-426614174004", "success": true, "value": {"status": "sent"}})
    );
    assert!(!reply.text.contains("TWILIO_SECRET_VALUE"));
}

#[tokio::test]
async fn the_spec_path_and_the_example_path_both_call_tools() {
    let app = example_app();
    for path in ["/tools/call", "/call"] {
        let reply = post(
            &app,
            path,
            r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":1}}}"#,
        )
        .await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.json["result"]["value"], 2);
    }
}

#[tokio::test]
async fn inputs_is_accepted_as_an_alias_of_input() {
    let reply = call(
        &example_app(),
        json!({"request": {"tool_id": "Calculator.Add", "inputs": {"a": 2, "b": 3}}}),
    )
    .await;
    assert_eq!(reply.json["result"]["value"], 5);
}

// ---- Call Tool Response ------------------------------------------------------------------------

#[tokio::test]
async fn without_a_call_id_the_server_generates_one_and_returns_it() {
    let app = example_app();
    let first = call(
        &app,
        json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}}),
    )
    .await;
    let second = call(
        &app,
        json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}}),
    )
    .await;
    let id = first.json["result"]["call_id"].as_str().unwrap();
    uuid::Uuid::parse_str(id).expect("a UUID");
    assert_ne!(id, second.json["result"]["call_id"].as_str().unwrap());
}

#[tokio::test]
async fn a_call_id_is_echoed() {
    let reply = call(&example_app(), json!({"request": {"tool_id": "Calculator.Add", "call_id": "mine", "input": {"a": 1, "b": 2}}})).await;
    assert_eq!(reply.json["result"]["call_id"], "mine");
}

#[tokio::test]
async fn a_non_retryable_tool_error_never_claims_it_can_be_retried() {
    let tool = Tool::builder("T.Fail", "1.0.0").handler(|_: oxp_lambda::NoInput, _| async {
        Err::<(), _>(ToolError::new("nope").developer_message("because"))
    });
    let app = app_with(
        Registry::builder().tool(tool).build().unwrap(),
        Config::default(),
    );
    let reply = call(&app, json!({"request": {"tool_id": "T.Fail"}})).await;
    assert_eq!(
        reply.status, 200,
        "the server MUST return 200 even if the tool call fails"
    );
    assert_eq!(
        reply.json["result"]["error"],
        json!({"message": "nope", "developer_message": "because"})
    );
    assert!(reply.json["result"].get("value").is_none());
}

#[tokio::test]
async fn a_value_must_conform_to_the_output_schema_or_the_call_fails() {
    let tool = Tool::builder("T.Liar", "1.0.0").raw_handler(
        json!({"type": "object"}),
        Some(json!({"type": "number"})),
        |_, _| async { Ok(json!("sk_live_not_a_number")) },
    );
    let app = app_with(
        Registry::builder().tool(tool).build().unwrap(),
        Config::default(),
    );
    let reply = call(&app, json!({"request": {"tool_id": "T.Liar"}})).await;
    assert_eq!(reply.status, 200);
    let result = &reply.json["result"];
    assert_eq!(result["success"], false);
    assert_eq!(
        result["error"]["message"],
        "The tool returned an invalid result"
    );
    // The problem is named by path and keyword; the value itself is never repeated (it may
    // hold anything the tool had).
    assert_eq!(
        result["error"]["developer_message"],
        "the output of T.Liar@1.0.0 is not valid: value: fails `type`"
    );
    assert!(!reply.json.to_string().contains("sk_live"));
    assert!(result.get("value").is_none());
}
