//! The Bedrock AgentCore Gateway Lambda target (`OXP_LAMBDA_ROLE=agentcore`): the tool's
//! arguments as the whole event, the tool named in the client context, an MCP `CallToolResult`
//! back. In-process through `App::handle_agentcore`, and with the real binary against a
//! Runtime API on loopback that delivers the client context as Lambda does (raw JSON in
//! `Lambda-Runtime-Client-Context`).

mod common;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use common::mcp::text_json;
use common::*;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// A Lambda Runtime API on loopback: hands out queued events with their client context as raw
/// JSON, and records each answer.
#[derive(Default)]
struct RuntimeApi {
    events: Mutex<VecDeque<(String, Value, Value)>>,
    answers: Mutex<Vec<(String, Value)>>,
    errors: Mutex<Vec<String>>,
}

async fn next(State(api): State<Arc<RuntimeApi>>) -> Response {
    loop {
        let event = api.events.lock().unwrap().pop_front();
        if let Some((id, event, context)) = event {
            let deadline = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis()
                + 30_000;
            let mut headers = HeaderMap::new();
            headers.insert(
                "lambda-runtime-aws-request-id",
                HeaderValue::from_str(&id).unwrap(),
            );
            headers.insert(
                "lambda-runtime-deadline-ms",
                HeaderValue::from_str(&deadline.to_string()).unwrap(),
            );
            headers.insert(
                "lambda-runtime-invoked-function-arn",
                HeaderValue::from_static("arn:aws:lambda:us-east-1:123456789012:function:tools"),
            );
            headers.insert(
                "lambda-runtime-client-context",
                HeaderValue::from_str(&context.to_string()).unwrap(),
            );
            return (headers, event.to_string()).into_response();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn respond(
    State(api): State<Arc<RuntimeApi>>,
    Path(id): Path<String>,
    body: String,
) -> StatusCode {
    api.answers
        .lock()
        .unwrap()
        .push((id, serde_json::from_str(&body).unwrap()));
    StatusCode::ACCEPTED
}

async fn error(State(api): State<Arc<RuntimeApi>>, body: String) -> StatusCode {
    api.errors.lock().unwrap().push(body);
    StatusCode::ACCEPTED
}

/// The bootstrap process, killed when the test ends however it ends.
struct Bootstrap(std::process::Child);

impl Drop for Bootstrap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_bootstrap_answers_gateway_invocations_and_survives_odd_client_contexts() {
    let api = Arc::new(RuntimeApi::default());
    let mut odd = context("Calculator_Add");
    odd["custom"]["bedrockAgentCoreMcpMessageId"] = json!(7);
    {
        let mut events = api.events.lock().unwrap();
        events.push_back((
            "req-1".into(),
            json!({"a": 1, "b": 2}),
            context("Calculator_Add"),
        ));
        // `lambda_runtime` cannot read this context (a number among the strings) and would exit.
        events.push_back(("req-2".into(), json!({"a": 3, "b": 4}), odd));
        events.push_back((
            "req-3".into(),
            json!({"doorbell_id": "x"}),
            context("Doorbell_Ring"),
        ));
        events.push_back((
            "req-4".into(),
            json!({"a": 5, "b": 6}),
            json!({"custom": "not an object"}),
        ));
    }
    let router = Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(respond),
        )
        .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
        .route("/2018-06-01/runtime/init/error", post(error))
        .with_state(api.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });

    let mut bootstrap = Bootstrap(
        std::process::Command::new(env!("CARGO_BIN_EXE_oxp-lambda"))
            .env_clear()
            .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", "tools")
            .env("OXP_LAMBDA_ROLE", "agentcore")
            .env("OXP_AUTH", "none")
            .env("OXP_SECRETS_SOURCE", "local")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while api.answers.lock().unwrap().len() < 4 {
        if let Ok(Some(status)) = bootstrap.0.try_wait() {
            panic!(
                "the bootstrap exited ({status}) after {:?}",
                api.answers.lock().unwrap()
            );
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "answers: {:?}",
            api.answers.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(bootstrap.0.try_wait().unwrap().is_none(), "still serving");
    let answers = api.answers.lock().unwrap().clone();
    let by_id = |id: &str| {
        answers
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, a)| a.clone())
            .unwrap()
    };
    assert_eq!(by_id("req-1")["content"][0]["text"], "3");
    assert_eq!(by_id("req-2")["content"][0]["text"], "7");
    assert_eq!(by_id("req-3")["isError"], true);
    let unnamed = by_id("req-4");
    assert_eq!(unnamed["isError"], true);
    assert!(
        unnamed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("bedrockAgentCoreToolName")
    );
    assert_eq!(answers.len(), 4, "each answered once");
    assert!(
        api.errors.lock().unwrap().is_empty(),
        "{:?}",
        api.errors.lock().unwrap()
    );
}
