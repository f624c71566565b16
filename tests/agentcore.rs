//! The Bedrock AgentCore Gateway Lambda target (`OXP_LAMBDA_ROLE=agentcore`): the tool's
//! arguments as the whole event, the tool named in the client context, an MCP `CallToolResult`
//! back. In-process through `App::handle_agentcore`, and with the real binary against a
//! Runtime API on loopback that delivers the client context as Lambda does (raw JSON in
//! `Lambda-Runtime-Client-Context`).

use crate::common;

use common::mcp::text_json;
use common::runtime_api::{Bootstrap, RuntimeApi};
use common::*;
use futures_util::FutureExt;
use serde_json::{Value, json};
use std::time::Duration;

/// The client context the gateway sends for `<target>___<tool>`.
fn context(tool: &str) -> Value {
    json!({"custom": {
        "bedrockAgentCoreToolName": format!("weather-target___{tool}"),
        "bedrockAgentCoreMessageVersion": "1.0",
        "bedrockAgentCoreAwsRequestId": "8f1c3a52-0b1e-4c2d-9a77-2f0f1a2b3c4d",
        "bedrockAgentCoreMcpMessageId": "42",
        "bedrockAgentCoreGatewayId": "gw-0123456789",
        "bedrockAgentCoreTargetId": "TARGET01"
    }})
}

async fn invoke(app: &App, event: Value, context: Option<Value>) -> Value {
    let context = context.map(|c| c.to_string());
    app.handle_agentcore(
        event.to_string().as_bytes(),
        context.as_deref().map(str::as_bytes),
    )
    .await
}

#[tokio::test]
async fn the_tool_named_after_the_target_prefix_runs_with_the_event_as_its_arguments() {
    let app = example_app();
    let result = invoke(
        &app,
        json!({"a": 10, "b": 5}),
        Some(context("Calculator_Add")),
    )
    .await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["content"], json!([{"type": "text", "text": "15"}]));
    let time = invoke(&app, json!({}), Some(context("System_GetTimestamp"))).await;
    assert!(time["structuredContent"]["timestamp"].is_string(), "{time}");
    // Without a target prefix the name is taken whole.
    let mut bare = context("x");
    bare["custom"]["bedrockAgentCoreToolName"] = json!("Calculator_Add");
    let result = invoke(&app, json!({"a": 1, "b": 1}), Some(bare)).await;
    assert_eq!(result["content"][0]["text"], "2");
}

#[tokio::test]
async fn errors_are_results_the_agent_can_read() {
    let app = example_app();
    let tool_error = invoke(
        &app,
        json!({"doorbell_id": "x"}),
        Some(context("Doorbell_Ring")),
    )
    .await;
    assert_eq!(tool_error["isError"], true);
    assert_eq!(text_json(&tool_error)["retry_after_ms"], 500);

    let invalid = invoke(&app, json!({"a": "ten"}), Some(context("Calculator_Add"))).await;
    assert_eq!(
        text_json(&invalid)["parameter_errors"]["a"],
        "Must be a number"
    );

    let unknown = invoke(&app, json!({}), Some(context("No_Such"))).await;
    assert_eq!(text_json(&unknown)["message"], "Unknown tool: No_Such");
    // Shown as every protocol shows a caller's name: 64 characters, no control characters.
    let long = format!("No\u{7}\nSuch{}", "x".repeat(10_000));
    let unknown = invoke(&app, json!({}), Some(context(&long))).await;
    let shown = format!("Unknown tool: NoSuch{}…", "x".repeat(58));
    assert_eq!(text_json(&unknown)["message"], shown.as_str());

    let unnamed = invoke(&app, json!({}), None).await;
    assert!(
        text_json(&unnamed)["message"]
            .as_str()
            .unwrap()
            .contains("bedrockAgentCoreToolName")
    );

    let not_an_object = invoke(&app, json!([1, 2]), Some(context("Calculator_Add"))).await;
    assert_eq!(not_an_object["isError"], true);
}

#[tokio::test]
async fn a_non_string_value_in_the_custom_context_does_not_fail_the_invocation() {
    let mut context = context("Calculator_Add");
    context["custom"]["bedrockAgentCoreMcpMessageId"] = json!(42);
    context["custom"]["extra"] = json!({"nested": [1, 2]});
    let result = invoke(&example_app(), json!({"a": 2, "b": 2}), Some(context)).await;
    assert_eq!(result["content"][0]["text"], "4", "{result}");
}

#[tokio::test]
async fn the_bootstrap_answers_gateway_invocations_and_survives_odd_client_contexts() {
    let mut odd = context("Calculator_Add");
    odd["custom"]["bedrockAgentCoreMcpMessageId"] = json!(7);
    let events = vec![
        (
            "req-1".into(),
            json!({"a": 1, "b": 2}),
            Some(context("Calculator_Add")),
        ),
        // `lambda_runtime` cannot read this context (a number among the strings) and would exit.
        ("req-2".into(), json!({"a": 3, "b": 4}), Some(odd)),
        (
            "req-3".into(),
            json!({"doorbell_id": "x"}),
            Some(context("Doorbell_Ring")),
        ),
        (
            "req-4".into(),
            json!({"a": 5, "b": 6}),
            Some(json!({"custom": "not an object"})),
        ),
    ];
    let (api, addr) = RuntimeApi::start(events, Duration::ZERO).await;
    let mut bootstrap = Bootstrap::start(addr, &[("OXP_LAMBDA_ROLE", "agentcore")]);
    api.wait_for(4, &mut bootstrap).await;
    assert!(bootstrap.0.try_wait().unwrap().is_none(), "still serving");
    assert_eq!(api.answer("req-1")["content"][0]["text"], "3");
    assert_eq!(api.answer("req-2")["content"][0]["text"], "7");
    assert_eq!(api.answer("req-3")["isError"], true);
    let unnamed = api.answer("req-4");
    assert_eq!(unnamed["isError"], true);
    assert!(
        unnamed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("bedrockAgentCoreToolName")
    );
    assert_eq!(api.answers.lock().unwrap().len(), 4, "each answered once");
    api.assert_every_answer_echoed_its_invocation_id();
    assert!(
        api.errors.lock().unwrap().is_empty(),
        "{:?}",
        api.errors.lock().unwrap()
    );
}

#[tokio::test]
async fn an_event_over_the_body_limit_is_refused_as_on_every_transport() {
    let config = oxp_lambda::Config {
        max_body_bytes: 1024,
        ..test_config()
    };
    let app = app_with(common::example_tools::registry().unwrap(), config);
    let big = json!({"a": 1, "b": 2, "pad": "x".repeat(2048)});
    let result = invoke(&app, big, Some(context("Calculator_Add"))).await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(text_json(&result)["message"], "The event is too large");
}

#[test]
fn a_tool_with_an_input_named_like_the_user_argument_stops_the_start() {
    // Calculator.Add takes `a` and `b`: naming the user argument `b` would take the tool's own
    // input away from it.
    let config = test_config_with(&[("OXP_AGENTCORE_USER_ARGUMENT", "b")]);
    let error = oxp_lambda::App::builder(common::example_tools::registry().unwrap())
        .config(config)
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .expect_err("the clash stops the start");
    let error = error.to_string();
    assert!(
        error.contains("Calculator.Add") && error.contains("OXP_AGENTCORE_USER_ARGUMENT"),
        "{error}"
    );
}
