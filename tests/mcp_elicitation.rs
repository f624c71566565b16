//! A tool's question at the handshake revisions (2025-06-18, 2025-11-25), as they have it: a
//! client that declares form elicitation at `initialize` gets an `Mcp-Session-Id` saying so,
//! and a tool's `ctx.ask` reaches it as `elicitation/create` on the call's own stream; its
//! answer, a POST of its own in that session, reaches the tool. The answer counts once, only
//! from the caller whose session asked, and only for a question that was asked. The official
//! Python SDK does the same against the real binary (`tests/mcp_elicitation.py`).

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::Duration;
use tower::ServiceExt;

const VERSION: &str = "2025-11-25";

fn message(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A POST of `body` at the handshake revision, in `session`, as `bearer`.
fn request(body: &Value, session: Option<&str>, bearer: Option<&str>) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    // An initialize names its revision in its body; every later request in the header.
    if body["method"] != "initialize" {
        request = request.header("mcp-protocol-version", VERSION);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    if let Some(bearer) = bearer {
        request = request.header("authorization", bearer);
    }
    request.body(Body::from(body.to_string())).unwrap()
}

/// The status and body of a POST (a 202 has none).
async fn post(app: &App, request: Request<Body>) -> (u16, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// The session an `initialize` declaring `capabilities` at `version` gets, if any.
async fn initialize(
    app: &App,
    version: &str,
    capabilities: Value,
    bearer: Option<&str>,
) -> Option<String> {
    let init = message(
        1,
        "initialize",
        json!({"protocolVersion": version, "capabilities": capabilities,
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    let reply = send(app, request(&init, None, bearer)).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply
        .headers
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned())
}

/// The next JSON-RPC message of an SSE body.
async fn next_message(body: &mut Body, buffer: &mut String) -> Value {
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data:"))
                && let Ok(value) = serde_json::from_str(data.trim())
            {
                return value;
            }
            continue;
        }
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .expect("the stream goes on")
            .expect("the stream is not over")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buffer.push_str(std::str::from_utf8(&data).unwrap());
        }
    }
}

fn confirm() -> Value {
    json!({"name": "Demo_Confirm", "arguments": {"prompt": "Deploy?", "choices": ["Yes", "No"], "default": 0}})
}

/// A client's answer to request `id`.
fn choosing(id: &Value, choice: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"choice": choice}}})
}

#[tokio::test]
async fn a_session_is_given_only_to_a_handshake_client_that_declares_elicitation() {
    let app = example_app();
    assert!(
        initialize(&app, VERSION, json!({"elicitation": {}}), None)
            .await
            .is_some()
    );
    assert!(
        initialize(&app, "2025-06-18", json!({"elicitation": {}}), None)
            .await
            .is_some()
    );
    assert!(
        initialize(&app, VERSION, json!({"elicitation": {"form": {}}}), None)
            .await
            .is_some()
    );
    assert!(initialize(&app, VERSION, json!({}), None).await.is_none());
    // URL mode is 2025-11-25's: a session saying the client opens links (for -32042).
    assert!(
        initialize(&app, VERSION, json!({"elicitation": {"url": {}}}), None)
            .await
            .is_some()
    );
    assert!(
        initialize(
            &app,
            "2025-06-18",
            json!({"elicitation": {"url": {}}}),
            None
        )
        .await
        .is_none()
    );
    // 2025-03-26 has no elicitation.
    assert!(
        initialize(&app, "2025-03-26", json!({"elicitation": {}}), None)
            .await
            .is_none()
    );
}

/// A session of a client that takes forms, and the response to its call of `Demo_Confirm`.
async fn confirming(app: &App) -> (String, axum::response::Response) {
    let session = initialize(app, VERSION, json!({"elicitation": {}}), None)
        .await
        .unwrap();
    let call = message(2, "tools/call", confirm());
    let request = request(&call, Some(&session), None);
    (session, app.clone().oneshot(request).await.unwrap())
}

#[tokio::test]
async fn a_question_goes_on_the_calls_stream_and_the_sessions_answer_reaches_the_tool() {
    let app = example_app();
    let (session, response) = confirming(&app).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let mut buffer = String::new();
    let asked = next_message(&mut body, &mut buffer).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["message"], "Deploy?");
    assert_eq!(
        asked["params"]["requestedSchema"]["properties"]["choice"]["enum"],
        json!(["Yes", "No"])
    );
    let id = asked["id"].clone();
    // An answer without the session, or under a session that is not the server's, answers
    // nothing: rmcp's refusal of a response it was not waiting for.
    let stray = send(&app, request(&choosing(&id, "Yes"), None, None)).await;
    assert_eq!(stray.status, 400, "{}", stray.text);
    let forged = send(
        &app,
        request(&choosing(&id, "Yes"), Some("rs1.forged"), None),
    )
    .await;
    assert_eq!(forged.status, 400, "{}", forged.text);
    // The session's answer is taken (202, no body) and the call completes with it.
    let answered = post(&app, request(&choosing(&id, "No"), Some(&session), None)).await;
    assert_eq!(answered, (202, String::new()));
    let result = next_message(&mut body, &mut buffer).await;
    assert_eq!(result["id"], 2, "{result}");
    let chosen: Value =
        serde_json::from_str(result["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(chosen, json!({"selected": 1, "choice": "No"}));
    // Answered once: the same answer again is refused, and changes nothing.
    let again = post(&app, request(&choosing(&id, "Yes"), Some(&session), None)).await;
    assert_eq!(again.0, 400, "{}", again.1);
}

/// A client that could not show the question answers its request with a JSON-RPC error: the
/// user said nothing, so the tool hears a dismissal (`Demo.Confirm` takes its default).
#[tokio::test]
async fn a_client_answering_the_question_with_an_error_is_a_dismissal_for_the_tool() {
    let app = example_app();
    let (session, response) = confirming(&app).await;
    let mut body = response.into_body();
    let mut buffer = String::new();
    let asked = next_message(&mut body, &mut buffer).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let error = json!({"jsonrpc": "2.0", "id": asked["id"],
                       "error": {"code": -32603, "message": "no way to show a form here"}});
    let answered = post(&app, request(&error, Some(&session), None)).await;
    assert_eq!(answered, (202, String::new()));
    let result = next_message(&mut body, &mut buffer).await;
    assert_eq!(result["result"]["isError"], false, "{result}");
    let chosen: Value =
        serde_json::from_str(result["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        chosen,
        json!({"selected": 0, "choice": "Yes"}),
        "the default"
    );
}

#[tokio::test]
async fn an_answer_to_one_calls_question_is_never_taken_by_the_next_calls_question() {
    let app = example_app();
    let session = initialize(&app, "2025-06-18", json!({"elicitation": {}}), None)
        .await
        .unwrap();
    let call = message(2, "tools/call", confirm());
    let ask = |app: App| {
        let request = request(&call, Some(&session), None);
        async move {
            let mut body = app.oneshot(request).await.unwrap().into_body();
            let mut buffer = String::new();
            let asked = next_message(&mut body, &mut buffer).await;
            (asked["id"].clone(), body, buffer)
        }
    };
    // The first call asks, then its client closes the stream (at these revisions that is no
    // cancellation: the call goes on); the next call of the session asks.
    let (first, stream, _) = ask(app.clone()).await;
    drop(stream);
    let (second, mut body, mut buffer) = ask(app.clone()).await;
    assert_ne!(first, second, "each call's question has an id of its own");
    // The answer sent for the first call goes to the first call alone; the second's is taken
    // by the second.
    let late = post(
        &app,
        request(&choosing(&first, "Yes"), Some(&session), None),
    )
    .await;
    assert_eq!(late.0, 202, "{}", late.1);
    let taken = post(
        &app,
        request(&choosing(&second, "No"), Some(&session), None),
    )
    .await;
    assert_eq!(taken, (202, String::new()));
    let result = next_message(&mut body, &mut buffer).await;
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap()["choice"], "No");
}

#[tokio::test]
async fn without_a_session_a_handshake_call_that_asks_is_the_tool_error_it_was() {
    let app = example_app();
    let call = message(2, "tools/call", confirm());
    let reply = send(&app, request(&call, None, None)).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.json["result"]["isError"], true, "{}", reply.text);
}

#[tokio::test]
#[cfg(feature = "jwt")]
async fn another_caller_can_neither_use_a_session_nor_answer_its_question() {
    let app = common::jwt::example_app();
    let (alice, bob) = (common::jwt::bearer("alice"), common::jwt::bearer("bob"));
    let session = initialize(&app, VERSION, json!({"elicitation": {}}), Some(&alice))
        .await
        .unwrap();
    // Bob presenting Alice's session is asked nothing: the tool error.
    let call = message(2, "tools/call", confirm());
    let reply = send(&app, request(&call, Some(&session), Some(&bob))).await;
    assert_eq!(reply.json["result"]["isError"], true, "{}", reply.text);
    // Alice's call asks; Bob's answer in her session is refused, hers is taken.
    let response = app
        .clone()
        .oneshot(request(&call, Some(&session), Some(&alice)))
        .await
        .unwrap();
    let mut body = response.into_body();
    let mut buffer = String::new();
    let asked = next_message(&mut body, &mut buffer).await;
    let id = asked["id"].clone();
    let refused = post(
        &app,
        request(&choosing(&id, "Yes"), Some(&session), Some(&bob)),
    )
    .await;
    assert_eq!(refused.0, 400, "{}", refused.1);
    let taken = post(
        &app,
        request(&choosing(&id, "No"), Some(&session), Some(&alice)),
    )
    .await;
    assert_eq!(taken.0, 202, "{}", taken.1);
    let result = next_message(&mut body, &mut buffer).await;
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"No\"")
    );
}

/// Two execution environments of one Lambda function (the `http` role, answers streamed when
/// `streaming`) sharing the state table on moto.
async fn environments(streaming: bool) -> (App, App) {
    let sdk = common::aws::sdk_config(&common::aws::moto_url()).await;
    let (_, table) = common::aws::state_table().await;
    let function = || {
        let vars = [
            ("OXP_AUTH", "none"),
            ("OXP_STATE_TABLE", table.as_str()),
            ("OXP_METRICS", "off"),
        ];
        let mut config = oxp_lambda::Config::from_vars(true, vars).unwrap();
        config.lambda_role = "http".into();
        config.lambda_streaming = streaming;
        build(
            oxp_lambda::App::builder(example_tools::registry().unwrap())
                .config(config)
                .aws_config(sdk.clone())
                .secret("MCP_STATE_KEY", "a-state-key-every-environment-holds"),
        )
    };
    (function(), function())
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn in_lambda_another_environment_takes_the_answer_and_a_buffering_function_asks_nothing() {
    // Buffered, the question would reach the client only when the call had ended: no session.
    let (buffered, _) = environments(false).await;
    let declared = json!({"elicitation": {}});
    assert!(
        initialize(&buffered, VERSION, declared.clone(), None)
            .await
            .is_none()
    );
    // Streamed: the call asks in one environment, the answer lands in another.
    let (first, second) = environments(true).await;
    let session = initialize(&first, VERSION, declared, None).await.unwrap();
    let call = message(2, "tools/call", confirm());
    let response = first
        .clone()
        .oneshot(request(&call, Some(&session), None))
        .await
        .unwrap();
    let mut body = response.into_body();
    let mut buffer = String::new();
    let asked = next_message(&mut body, &mut buffer).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let answer = choosing(&asked["id"], "No");
    let taken = post(&second, request(&answer, Some(&session), None)).await;
    assert_eq!(taken.0, 202, "{}", taken.1);
    let result = next_message(&mut body, &mut buffer).await;
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap()["choice"], "No");
}

#[test]
#[ignore = "needs the MCP Python SDK: scripts/test installs it (OXP_TEST_PYTHON) and runs this"]
fn the_python_sdk_client_answers_a_tools_question_through_its_callback() {
    let (_server, base) = start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &[("OXP_AUTH", "none")]);
    let stdout = run_client(
        "OXP_TEST_PYTHON",
        "mcp_elicitation.py",
        &[&format!("{base}/mcp")],
    );
    assert!(stdout.contains("ok   two calls of one session"), "{stdout}");
}
