//! The tools through the real call path (resolution, requirements, validation, the tool, the
//! output check), in process: what every protocol runs, without HTTP.

#[path = "../src/tools.rs"]
mod tools;

use oxp_lambda::{Call, Invoker, Registry};
use serde_json::json;

fn invoker() -> Invoker {
    let registry = Registry::builder()
        .tool(tools::add_tool())
        .tool(tools::forecast_tool())
        .build()
        .expect("valid tools");
    Invoker::local(registry)
}

#[tokio::test]
async fn add_answers_the_sum_and_invalid_input_is_refused_before_it_runs() {
    let outcome = invoker()
        .invoke(Call::tool("Math.Add", json!({"a": 1.5, "b": 2})))
        .await
        .expect("called");
    assert_eq!(outcome.result.expect("a value").value, json!(3.5));
    let refused = invoker()
        .invoke(Call::tool("Math.Add", json!({"a": "one"})))
        .await;
    assert!(refused.is_err(), "validated against the input schema");
}

#[tokio::test]
async fn the_forecast_needs_its_key_and_says_when_to_retry() {
    // Without the secret the call is refused before the tool runs.
    let missing = invoker()
        .invoke(Call::tool("Weather.Forecast", json!({"city": "Lisbon"})))
        .await;
    assert!(missing.is_err(), "the key is required");
    let call = |city: &str| {
        Call::tool("Weather.Forecast", json!({"city": city})).secret("FORECAST_API_KEY", "test-key")
    };
    let outcome = invoker().invoke(call("Lisbon")).await.expect("called");
    let value = outcome.result.expect("a forecast").value;
    assert_eq!(value["summary"], "Sunny in Lisbon");
    let busy = invoker().invoke(call("Atlantis")).await.expect("called");
    let error = busy.result.expect_err("the service is busy");
    assert!(error.can_retry);
    assert_eq!(error.retry_after_ms, Some(2000));
}

#[tokio::test]
async fn the_recorded_agentcore_event_answers_as_the_lambda_role_would() {
    let registry = Registry::builder()
        .tool(tools::add_tool())
        .tool(tools::forecast_tool())
        .build()
        .expect("valid tools");
    let app = oxp_lambda::App::builder(registry)
        .build()
        .await
        .expect("the app builds");
    let event = std::fs::read("events/agentcore-call.json").expect("the event");
    let context = std::fs::read("events/agentcore-client-context.json").expect("its context");
    let answer = app.handle_agentcore(&event, Some(&context)).await;
    assert_eq!(answer["isError"], false, "{answer}");
    assert_eq!(answer["content"][0]["text"], "15.0", "{answer}");
}
