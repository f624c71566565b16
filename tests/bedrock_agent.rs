//! Amazon Bedrock Agents action groups (function details): the recorded events in
//! `events/bedrock-agent/` replayed through the app, each answer the one in
//! `tests/bedrock_agent_expected.json` (scripts/lambda-e2e sends the same events to the
//! Lambda emulator with `OXP_LAMBDA_ROLE=bedrock-agent` and checks the same answers), and the
//! response rules the Bedrock documentation gives.
#![cfg(feature = "bedrock-agent")]

use crate::common;

use common::*;
use oxp_lambda::{Registry, Tool, ToolContext, ToolError, tool};
use serde_json::{Value, json};

fn expected() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string("tests/bedrock_agent_expected.json").unwrap();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn every_recorded_event_gets_its_expected_response() {
    let app = example_app();
    let mut names: Vec<String> = std::fs::read_dir("events/bedrock-agent")
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(names.len() >= 4, "{names:?}");
    // UPDATE_GOLDEN=1 rewrites the expected answers (refused in CI), as for tests/golden/.
    if std::env::var_os("UPDATE_GOLDEN").is_some() && std::env::var_os("CI").is_none() {
        let mut answers = serde_json::Map::new();
        for name in &names {
            let event = std::fs::read(format!("events/bedrock-agent/{name}")).unwrap();
            answers.insert(name.clone(), app.handle_bedrock_agent(&event).await);
        }
        let text = serde_json::to_string_pretty(&answers).unwrap() + "\n";
        std::fs::write("tests/bedrock_agent_expected.json", text).unwrap();
    }
    let expected = self::expected();
    for name in &names {
        let event = std::fs::read(format!("events/bedrock-agent/{name}")).unwrap();
        let answer = app.handle_bedrock_agent(&event).await;
        assert_eq!(
            Some(&answer),
            expected.get(name),
            "{name}: {}",
            serde_json::to_string_pretty(&answer).unwrap()
        );
    }
    assert_eq!(
        names.len(),
        expected.len(),
        "every expected answer has its event"
    );
}

fn event(function: &str, parameters: Value) -> Vec<u8> {
    json!({"messageVersion": "1.0", "actionGroup": "g", "function": function,
           "parameters": parameters, "sessionAttributes": {"k": "v"}})
    .to_string()
    .into_bytes()
}

fn body(answer: &Value) -> &str {
    answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"]
        .as_str()
        .unwrap()
}

/// Takes every type a function parameter can have.
#[tool(name = "Types.Echo", version = "1.0.0")]
async fn echo(
    /// Text.
    text: String,
    /// A count.
    count: i64,
    /// A ratio.
    ratio: Option<f64>,
    /// A flag.
    flag: bool,
    /// Tags.
    tags: Vec<String>,
    /// Numbers.
    numbers: Option<Vec<i64>>,
) -> Result<Value, ToolError> {
    Ok(
        json!({"text": text, "count": count, "ratio": ratio, "flag": flag, "tags": tags, "numbers": numbers}),
    )
}

/// An app serving `Types.Echo` (every type a parameter can have), for the API-schema tests too.
pub(crate) fn types_app() -> App {
    app_with(
        Registry::builder().tool(echo_tool()).build().unwrap(),
        test_config(),
    )
}

#[tokio::test]
async fn string_parameters_are_converted_by_the_tool_schema() {
    let answer = types_app()
        .handle_bedrock_agent(&event(
            "Types_Echo",
            json!([
                {"name": "text", "type": "string", "value": "42"},
                {"name": "count", "type": "integer", "value": "7"},
                {"name": "ratio", "type": "number", "value": "0.25"},
                {"name": "flag", "type": "boolean", "value": "True"},
                {"name": "tags", "type": "array", "value": "[red, \"blue\"]"},
                {"name": "numbers", "type": "array", "value": "[1, 2]"}
            ]),
        ))
        .await;
    assert!(
        answer["response"]["functionResponse"]
            .get("responseState")
            .is_none(),
        "{answer}"
    );
    let value: Value = serde_json::from_str(body(&answer)).unwrap();
    assert_eq!(
        value,
        json!({"text": "42", "count": 7, "ratio": 0.25, "flag": true,
               "tags": ["red", "blue"], "numbers": [1, 2]})
    );
    assert_eq!(
        answer["sessionAttributes"],
        json!({"k": "v"}),
        "passed back"
    );
    assert_eq!(answer["response"]["actionGroup"], "g");
    assert_eq!(answer["response"]["function"], "Types_Echo");
}

#[tokio::test]
async fn an_event_is_bounded_in_the_values_it_expands_to_not_only_in_bytes() {
    let app = types_app();
    // 100 KB of commas would become 100,000 values (each far larger than its byte).
    let commas = format!("[{}]", ",".repeat(100_000));
    let answer = app
        .handle_bedrock_agent(&event(
            "Types_Echo",
            json!([{"name": "tags", "type": "array", "value": commas}]),
        ))
        .await;
    assert_eq!(
        answer["response"]["functionResponse"]["responseState"], "REPROMPT",
        "{answer}"
    );
    assert!(
        body(&answer).contains("more than 10000 values"),
        "{}",
        body(&answer)
    );
    // So would a JSON array of 20,000 numbers, and 300 parameters.
    let numbers = serde_json::to_string(&vec![1; 20_000]).unwrap();
    let answer = app
        .handle_bedrock_agent(&event(
            "Types_Echo",
            json!([{"name": "numbers", "type": "array", "value": numbers}]),
        ))
        .await;
    assert!(body(&answer).contains("more than 10000 values"), "{answer}");
    let many: Vec<Value> = (0..300)
        .map(|i| json!({"name": format!("p{i}"), "type": "string", "value": "x"}))
        .collect();
    let answer = app
        .handle_bedrock_agent(&event("Types_Echo", json!(many)))
        .await;
    assert!(
        body(&answer).contains("more than 256 parameters"),
        "{answer}"
    );
    // Within the bounds, a large array converts.
    let fine = serde_json::to_string(&vec![2; 5_000]).unwrap();
    let answer = app
        .handle_bedrock_agent(&event(
            "Types_Echo",
            json!([
                {"name": "text", "type": "string", "value": "x"},
                {"name": "count", "type": "integer", "value": "1"},
                {"name": "flag", "type": "boolean", "value": "true"},
                {"name": "tags", "type": "array", "value": "[]"},
                {"name": "numbers", "type": "array", "value": fine}
            ]),
        ))
        .await;
    let value: Value = serde_json::from_str(body(&answer)).unwrap();
    assert_eq!(value["numbers"].as_array().unwrap().len(), 5_000);
}

#[tokio::test]
async fn a_value_that_does_not_convert_reprompts_naming_the_parameter_not_the_value() {
    let answer = types_app()
        .handle_bedrock_agent(&event(
            "Types_Echo",
            json!([
                {"name": "text", "type": "string", "value": "x"},
                {"name": "count", "type": "integer", "value": "seven-secret"},
                {"name": "flag", "type": "boolean", "value": "yes"},
                {"name": "tags", "type": "array", "value": "[]"}
            ]),
        ))
        .await;
    let response = &answer["response"]["functionResponse"];
    assert_eq!(response["responseState"], "REPROMPT", "{answer}");
    let text = body(&answer);
    assert!(
        text.starts_with("Error: Some input parameters are invalid"),
        "{text}"
    );
    assert!(text.contains("count:") && text.contains("flag:"), "{text}");
    assert!(
        !text.contains("seven-secret"),
        "no input value comes back: {text}"
    );
}

#[tokio::test]
async fn a_panic_is_a_failure_and_the_server_keeps_serving() {
    let panicking = Tool::builder("Bad.Panic", "1.0.0")
        .description("Panics.")
        .handler(|_: oxp_lambda::NoInput, _ctx: ToolContext| async move {
            if true {
                panic!("boom");
            }
            Ok::<_, ToolError>(())
        });
    let app = app_with(
        Registry::builder()
            .tool(panicking)
            .tool(echo_tool())
            .build()
            .unwrap(),
        test_config(),
    );
    let answer = app
        .handle_bedrock_agent(&event("Bad_Panic", json!([])))
        .await;
    assert_eq!(
        answer["response"]["functionResponse"]["responseState"],
        "FAILURE"
    );
    assert!(!body(&answer).contains("boom"), "no panic text: {answer}");
    let again = app
        .handle_bedrock_agent(&event(
            "Types_Echo",
            json!([{"name": "text", "value": "a"}, {"name": "count", "value": "1"},
                   {"name": "flag", "value": "false"}, {"name": "tags", "value": "[]"}]),
        ))
        .await;
    assert!(
        again["response"]["functionResponse"]
            .get("responseState")
            .is_none(),
        "{again}"
    );
}

#[tokio::test]
async fn an_event_that_is_not_an_action_group_event_is_answered_not_crashed() {
    let app = example_app();
    // An array of an event's fields too, which serde would read as the event.
    let fields =
        br#"["2.0", "g", "Calculator_Add", [{"name": "a", "type": "number", "value": "1"}]]"#;
    // And a parameter's fields as an array.
    let parameter = br#"{"function": "Calculator_Add", "parameters": [["a", "number", "1"]]}"#;
    for raw in [
        &b"not json"[..],
        b"[]",
        b"{\"function\": 7}",
        fields,
        parameter,
    ] {
        let answer = app.handle_bedrock_agent(raw).await;
        assert_eq!(
            answer["response"]["functionResponse"]["responseState"],
            "FAILURE"
        );
        assert_eq!(answer["messageVersion"], "1.0");
    }
}

#[tokio::test]
async fn an_event_over_the_body_limit_is_a_failure_in_the_documented_shape_as_on_every_transport() {
    let config = oxp_lambda::Config {
        max_body_bytes: 1024,
        ..test_config()
    };
    let app = app_with(common::example_tools::registry().unwrap(), config);
    let pad = json!([{"name": "pad", "type": "string", "value": "x".repeat(2048)}]);
    let answer = app
        .handle_bedrock_agent(&event("Calculator_Add", pad))
        .await;
    assert_eq!(answer["messageVersion"], "1.0");
    let response = &answer["response"]["functionResponse"];
    assert_eq!(response["responseState"], "FAILURE", "{answer}");
    assert_eq!(body(&answer), "Error: the event is too large");
}

/// An unknown function's name is shown as every protocol shows a caller's name: at most 64
/// characters, without control characters, marked when cut.
#[tokio::test]
async fn an_unknown_functions_name_is_shown_bounded_without_control_characters() {
    let app = example_app();
    let name = format!("No\u{7}\nSuch{}", "x".repeat(10_000));
    let answer = app.handle_bedrock_agent(&event(&name, json!([]))).await;
    let shown = format!("NoSuch{}…", "x".repeat(58));
    assert_eq!(body(&answer), format!("Error: unknown function {shown}"));
}

/// TEXT carries text only: the body is the value, then each text item (a text resource's
/// contents among them) on its own line, and every other item named (docs/bedrock-agents.md).
#[tokio::test]
async fn the_body_is_the_value_then_the_text_items_and_every_other_item_named() {
    use oxp_lambda::{Content, ToolOutput};
    let tool = Tool::builder("T.Kinds", "1.0.0").raw_output_handler(
        json!({"type": "object"}),
        Some(json!({"type": "object"})),
        |_, _| async {
            Ok(ToolOutput::new(json!({"n": 1}))
                .content(Content::text("t"))
                .content(Content::image(vec![1], "image/png"))
                .content(Content::audio(vec![1], "audio/wav"))
                .content(Content::resource_text("file:///a.txt", "text/plain", "a"))
                .content(Content::resource_blob(
                    "file:///b.bin",
                    "application/octet-stream",
                    vec![0],
                ))
                .content(Content::link("https://example.com/r", "report")))
        },
    );
    let app = app_with(
        Registry::builder().tool(tool).build().unwrap(),
        test_config(),
    );
    let answer = app.handle_bedrock_agent(&event("T_Kinds", json!([]))).await;
    assert!(
        answer["response"]["functionResponse"]
            .get("responseState")
            .is_none(),
        "{answer}"
    );
    let lines = [
        r#"{"n":1}"#,
        "t",
        "[image: image/png]",
        "[audio: audio/wav]",
        "a",
        "[resource: file:///b.bin]",
        "[resource: https://example.com/r]",
    ];
    assert_eq!(body(&answer), lines.join("\n"));
}
