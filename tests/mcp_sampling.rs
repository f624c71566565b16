//! A tool asks the client itself: its model (`ctx.sample`, MCP's `sampling/createMessage`) and
//! its roots (`ctx.roots`, `roots/list`). At 2026-07-28 each is an input request of the multi
//! round-trip pattern (`specification/2026-07-28/basic/patterns/mrtr`): the call answers
//! `input_required`, the client answers under the request's key with the state echoed, and the
//! tool completes with what its model or its roots said. A client that did not declare the
//! capability gets the revision's missing-capability error naming it; OXP and RAP, which carry
//! neither, get a tool error saying so at once. The handshake revisions are driven by the
//! Python SDK in `tests/mcp_client2.py`.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use oxp_lambda::{Registry, Root, Tool, ToolContext, ToolError};
use serde_json::{Value, json};

/// A 2026-07-28 `tools/call` of `name` from a client declaring `capabilities`, continuing with
/// `state` and `responses` when given.
fn call(
    name: &str,
    arguments: Value,
    capabilities: Value,
    continued: Option<(&str, Value)>,
) -> Value {
    common::mcp::modern_call(1, name, arguments, capabilities, continued)
}

async fn post(app: &App, body: &Value) -> Reply {
    let request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", body["params"]["name"].as_str().unwrap());
    send(app, request.body(Body::from(body.to_string())).unwrap()).await
}

fn summarize() -> Value {
    json!({"text": "The quick brown fox jumps over the lazy dog."})
}

/// A `CreateMessageResult` of `test-model` answering `text`.
pub(crate) fn model_answer(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text},
           "model": "test-model", "stopReason": "endTurn"})
}

/// An app whose one tool lists the client's roots by URI, and a long-running copy of it.
fn roots_app() -> App {
    let tools = [
        roots_tool(Tool::builder("Files.Roots", "1.0.0")),
        roots_tool(Tool::builder("Files.Index", "1.0.0").long_running()),
    ];
    app_with(
        Registry::builder().tools(tools).build().unwrap(),
        test_config(),
    )
}

/// `builder`'s tool answering the client's roots' URIs, space-separated.
pub(crate) fn roots_tool(builder: oxp_lambda::ToolBuilder) -> Tool {
    builder.description("Lists the client's roots.").handler(
        |_: oxp_lambda::NoInput, ctx: ToolContext| async move {
            let roots: Vec<Root> = ctx.roots().await?;
            Ok::<_, ToolError>(
                roots
                    .into_iter()
                    .map(|r| r.uri)
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        },
    )
}

#[tokio::test]
async fn a_tool_asks_the_clients_model_in_an_input_request_and_completes_with_its_answer() {
    let app = example_app();
    let first = post(
        &app,
        &call("Demo_Summarize", summarize(), json!({"sampling": {}}), None),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let result = &first.json["result"];
    assert_eq!(result["resultType"], "input_required", "{}", first.text);
    let request = &result["inputRequests"]["sample_0"];
    assert_eq!(
        request["method"], "sampling/createMessage",
        "{}",
        first.text
    );
    assert_eq!(request["params"]["maxTokens"], 300);
    let message = &request["params"]["messages"][0];
    assert_eq!(message["role"], "user");
    assert!(
        message["content"]["text"]
            .as_str()
            .unwrap()
            .contains("quick brown fox"),
        "{message}"
    );
    let state = result["requestState"].as_str().unwrap();

    let responses = json!({"sample_0": model_answer("A fox jumps a dog.")});
    let second = post(
        &app,
        &call(
            "Demo_Summarize",
            summarize(),
            json!({"sampling": {}}),
            Some((state, responses)),
        ),
    )
    .await;
    let result = &second.json["result"];
    assert_eq!(result["isError"], false, "{}", second.text);
    assert_eq!(result["structuredContent"]["summary"], "A fox jumps a dog.");
}

#[tokio::test]
async fn a_client_that_did_not_declare_sampling_gets_the_missing_capability_error_naming_it() {
    let app = example_app();
    let reply = post(
        &app,
        &call(
            "Demo_Summarize",
            summarize(),
            json!({"elicitation": {}}),
            None,
        ),
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(reply.json["error"]["code"], -32021, "{}", reply.text);
    assert_eq!(
        reply.json["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{}",
        reply.text
    );
    assert!(
        !reply.text.contains("quick brown fox"),
        "nothing the caller sent comes back"
    );
}

#[tokio::test]
async fn a_sampling_answer_that_is_no_create_message_result_is_refused_and_runs_nothing() {
    let app = example_app();
    let first = post(
        &app,
        &call("Demo_Summarize", summarize(), json!({"sampling": {}}), None),
    )
    .await;
    let state = first.json["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    for bad in [
        json!({"role": "assistant", "content": {"type": "text", "text": "x"}}),
        json!({"role": "system", "content": {"type": "text", "text": "x"}, "model": "m"}),
        json!({"role": "assistant", "content": {"type": "video"}, "model": "m"}),
        model_answer(&"x".repeat(40 * 1024)),
    ] {
        let responses = json!({"sample_0": bad});
        let caps = json!({"sampling": {}});
        let reply = post(
            &app,
            &call(
                "Demo_Summarize",
                summarize(),
                caps,
                Some((&state, responses)),
            ),
        )
        .await;
        assert_eq!(reply.json["error"]["code"], -32602, "{}", reply.text);
    }
}

#[tokio::test]
async fn a_tool_reads_the_clients_roots_in_an_input_request() {
    let app = roots_app();
    let caps = json!({"roots": {}});
    let first = post(&app, &call("Files_Roots", json!({}), caps.clone(), None)).await;
    let result = &first.json["result"];
    assert_eq!(result["resultType"], "input_required", "{}", first.text);
    assert_eq!(
        result["inputRequests"]["roots_0"]["method"], "roots/list",
        "{}",
        first.text
    );
    let state = result["requestState"].as_str().unwrap();
    let roots = json!({"roots_0": {"roots": [
        {"uri": "file:///home/u/app", "name": "app"}, {"uri": "file:///home/u/lib"}
    ]}});
    let second = post(
        &app,
        &call("Files_Roots", json!({}), caps, Some((state, roots))),
    )
    .await;
    let result = &second.json["result"];
    assert_eq!(result["isError"], false, "{}", second.text);
    assert_eq!(
        result["content"][0]["text"],
        "file:///home/u/app file:///home/u/lib"
    );

    let reply = post(
        &app,
        &call("Files_Roots", json!({}), json!({"sampling": {}}), None),
    )
    .await;
    assert_eq!(reply.json["error"]["code"], -32021, "{}", reply.text);
    assert_eq!(
        reply.json["error"]["data"]["requiredCapabilities"],
        json!({"roots": {}})
    );
}

#[tokio::test]
async fn oxp_cannot_ask_the_clients_model_and_says_so_at_once() {
    let app = example_app();
    let request = json!({"request": {"tool_id": "Demo.Summarize", "input": summarize()}});
    let reply = common::call(&app, request).await;
    assert_eq!(reply.json["result"]["success"], false, "{}", reply.text);
    let message = reply.json["result"]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("cannot carry") && message.contains("MCP client that offers it"),
        "{message}"
    );
    assert_ne!(reply.json["result"]["error"]["can_retry"], true);
}

#[tokio::test]
async fn a_task_reads_the_clients_roots_as_its_input_request() {
    use common::tasks;
    let app = roots_app();
    let created = tasks::call(&app, "Files_Index", json!({}), true).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let waiting = tasks::until(&app, &id, "input_required").await;
    assert_eq!(
        waiting["inputRequests"]["roots_0"]["method"], "roots/list",
        "{waiting}"
    );
    let roots = json!({"roots_0": {"roots": [{"uri": "file:///srv/repo"}]}});
    let ack = tasks::update(&app, &id, roots).await;
    assert_eq!(ack.json["result"]["resultType"], "complete", "{}", ack.text);
    let done = tasks::until(&app, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "file:///srv/repo",
        "{done}"
    );
}

#[tokio::test]
async fn rap_cannot_ask_the_clients_model_and_says_so_in_its_result() {
    use crate::talk_back;
    let app = talk_back::app();
    let receiver = common::receiver::Receiver::ok().await;
    let body = talk_back::invocation(&receiver, "s-1", "Demo_Summarize", summarize());
    assert_eq!(post_rap(&app, body).await, 200);
    let result = receiver.wait_kind("tool_result", 1).await.remove(0);
    let error = rap_error(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["kind"], "unsupported", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("MCP client that offers it"), "{message}");
}

async fn post_rap(app: &App, body: String) -> u16 {
    common::post(app, "/invoke", body).await.status.as_u16()
}
