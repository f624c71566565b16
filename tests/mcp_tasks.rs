//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) at 2026-07-28: a client
//! that declares it and calls a long-running tool gets `resultType: "task"` at once; tasks/get
//! reports the task (working, input_required with the tool's question, completed with the tool's
//! result, cancelled); tasks/update answers the question; tasks/cancel stops the tool. A client
//! that did not declare the extension gets the tool's result in the request, and the tasks
//! methods refuse it; another caller's task is unknown.

use crate::common;

use common::tasks::*;
use common::{App, app_with, test_config};
use futures_util::FutureExt;
use oxp_lambda::Registry;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn app() -> App {
    let mut tools = common::example_tools::tools();
    tools.push(asking());
    tools.push(asking_twice());
    tools.push(asking_first());
    tools.push(crashing());
    app_with(
        Registry::builder().tools(tools).build().unwrap(),
        test_config(),
    )
}

#[tokio::test]
async fn a_long_running_tool_called_with_the_extension_is_a_task_whose_result_tasks_get_inlines() {
    let app = app();
    let created = call(&app, "Demo_Sleep", json!({"ms": 200}), true).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert!(created.get("task").is_none(), "flat: no nested task key");
    assert!(created.get("requestState").is_none());
    assert_eq!(created["ttlMs"], 3_600_000);
    assert_eq!(created["pollIntervalMs"], 500);
    let id = created["taskId"].as_str().unwrap().to_owned();
    let working = get(&app, &id).await;
    assert_eq!(working["resultType"], "complete");
    assert!(working.get("result").is_none(), "{working}");
    let done = until(&app, &id, "completed").await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    let value: Value = serde_json::from_str(text).unwrap();
    assert!(value["slept_ms"].as_u64().unwrap() >= 200, "{done}");
    assert_eq!(value["cancelled"], false);
    // The same tool without the extension answers in the request; a short tool never is a task.
    let sync = call(&app, "Demo_Sleep", json!({"ms": 1}), false).await;
    assert_eq!(sync["resultType"], "complete", "{sync}");
    assert!(sync.get("taskId").is_none());
    let add = call(&app, "Calculator_Add", json!({"a": 1, "b": 2}), true).await;
    assert_eq!(add["content"][0]["text"], "3", "{add}");
}

#[tokio::test]
async fn a_task_that_asks_waits_in_input_required_until_tasks_update_answers() {
    let app = app();
    let created = call(&app, "Job_Deploy", json!({}), true).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let waiting = until(&app, &id, "input_required").await;
    let request = &waiting["inputRequests"]["ask_0"];
    assert_eq!(request["method"], "elicitation/create", "{waiting}");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["choice"]["enum"],
        json!(["Yes", "No"])
    );
    // An answer to another key is ignored; a malformed one refused.
    let ack = rpc(
        &app,
        "tasks/update",
        &id,
        json!({"taskId": id, "inputResponses": {"other": {"action": "decline"}}}),
        true,
        None,
    )
    .await;
    assert_eq!(ack.json["result"]["resultType"], "complete", "{}", ack.text);
    assert_eq!(get(&app, &id).await["status"], "input_required");
    let bad = rpc(
        &app,
        "tasks/update",
        &id,
        json!({"taskId": id, "inputResponses": {"ask_0": {"action": "maybe"}}}),
        true,
        None,
    )
    .await;
    assert_eq!(bad.json["error"]["code"], -32602, "{}", bad.text);
    let answer = json!({"ask_0": {"action": "accept", "content": {"choice": "No"}}});
    let ack = rpc(
        &app,
        "tasks/update",
        &id,
        json!({"taskId": id, "inputResponses": answer}),
        true,
        None,
    )
    .await;
    assert_eq!(
        ack.json["result"],
        json!({"resultType": "complete"}),
        "{}",
        ack.text
    );
    let done = until(&app, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "deploy: No", "{done}");
}

#[tokio::test]
async fn questions_asked_at_once_are_open_at_once_and_the_task_waits_until_each_is_answered() {
    let app = app();
    let created = call(&app, "Job_Pair", json!({}), true).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let keys = |task: &Value| -> Vec<String> {
        task["inputRequests"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let end = Instant::now() + Duration::from_secs(5);
    let mut waiting = until(&app, &id, "input_required").await;
    while keys(&waiting).len() < 2 && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
        waiting = get(&app, &id).await;
    }
    assert_eq!(keys(&waiting), ["ask_0", "ask_1"], "{waiting}");
    assert_eq!(
        waiting["inputRequests"]["ask_1"]["params"]["message"],
        "Window?"
    );
    // The second answered first: acknowledged, and only the first is left open.
    let ack = update(&app, &id, json!({"ask_1": choose("tonight")})).await;
    assert_eq!(
        ack.json["result"],
        json!({"resultType": "complete"}),
        "{}",
        ack.text
    );
    let partly = get(&app, &id).await;
    assert_eq!(partly["status"], "input_required", "{partly}");
    assert_eq!(keys(&partly), ["ask_0"], "{partly}");
    // A malformed answer to the open one changes nothing; an answer to the closed one neither.
    let bad = update(&app, &id, json!({"ask_0": {"action": "maybe"}})).await;
    assert_eq!(bad.json["error"]["code"], -32602, "{}", bad.text);
    update(&app, &id, json!({"ask_1": choose("now")})).await;
    assert_eq!(keys(&get(&app, &id).await), ["ask_0"]);
    update(&app, &id, json!({"ask_0": choose("us")})).await;
    let done = until(&app, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "pair: us tonight",
        "{done}"
    );
}

#[tokio::test]
async fn a_tool_that_asks_first_asks_within_the_request_and_becomes_a_task_where_it_detaches() {
    let app = app();
    let retry = |state: &str, tasks: bool| {
        let params = json!({"name": "Job_Release", "arguments": {}, "requestState": state,
                            "inputResponses": {"ask_0": choose("Yes")}});
        let app = app.clone();
        async move { rpc(&app, "tools/call", "Job_Release", params, tasks, None).await }
    };
    // The question is a round of the request, not a task's.
    let first = call(&app, "Job_Release", json!({}), true).await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert!(first.get("taskId").is_none(), "{first}");
    let state = first["requestState"].as_str().unwrap();
    // Answered, the call becomes a task where the tool detaches, its answer with it.
    let reply = retry(state, true).await;
    let created = &reply.json["result"];
    assert_eq!(created["resultType"], "task", "{}", reply.text);
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none());
    let id = created["taskId"].as_str().unwrap().to_owned();
    let done = until(&app, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "release: Yes",
        "{done}"
    );
    // A client without the extension: the same round, and the call completes in the request.
    let first = call(&app, "Job_Release", json!({}), false).await;
    let state = first["requestState"].as_str().unwrap();
    let reply = retry(state, false).await;
    let result = &reply.json["result"];
    assert_eq!(result["resultType"], "complete", "{}", reply.text);
    assert_eq!(result["content"][0]["text"], "release: Yes");
}

#[tokio::test]
async fn a_tool_that_crashes_ends_its_task_failed_with_a_json_rpc_error_and_no_panic_text() {
    let app = app();
    let created = call(&app, "Job_Crash", json!({"panic": true}), true).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let failed = until(&app, &id, "failed").await;
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert_eq!(failed["error"]["message"], "The tool failed unexpectedly");
    assert!(failed.get("result").is_none(), "{failed}");
    assert!(!failed.to_string().contains("secret-in-panic-text"));
    // A tool's own error is its answer: the task completes with it (isError).
    let created = call(&app, "Job_Crash", json!({"panic": false}), true).await;
    let id = created["taskId"].as_str().unwrap();
    let done = until(&app, id, "completed").await;
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("The job refused"), "{done}");
}

/// "Servers MUST rate limit tool invocations" (`OXP_RATE_LIMIT`): a task is counted where
/// `tools/call` makes it, so a call past the rate is refused there (retryable, no task kept),
/// and a task the caller was told is accepted never ends by its caller's rate when it runs.
#[tokio::test]
async fn a_task_counts_against_its_callers_rate_where_it_is_made_and_never_again_as_it_runs() {
    let config = oxp_lambda::Config {
        rate_limit: oxp_lambda::config::RateLimit::parse("2/min"),
        ..test_config()
    };
    let mut tools = common::example_tools::tools();
    tools.push(asking());
    let app = app_with(Registry::builder().tools(tools).build().unwrap(), config);
    let created = call(&app, "Demo_Sleep", json!({"ms": 10}), true).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    until(&app, &id, "completed").await;
    let created = call(&app, "Job_Deploy", json!({}), true).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    until(&app, &id, "input_required").await;
    let answer = json!({"ask_0": {"action": "accept", "content": {"choice": "Yes"}}});
    assert_eq!(update(&app, &id, answer).await.status, 200);
    let done = until(&app, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "deploy: Yes",
        "{done}"
    );

    let refused = call(&app, "Demo_Sleep", json!({"ms": 10}), true).await;
    assert!(
        refused.get("taskId").is_none(),
        "no task is made: {refused}"
    );
    assert_eq!(refused["isError"], true, "{refused}");
    let told: Value =
        serde_json::from_str(refused["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(told["can_retry"], true, "{told}");
}

/// Two forms asked at once under one key could not be told apart by their answers: the second
/// is the tool's mistake, refused to it (`share the key`, in the developer's detail), and the
/// task ends with the tool's error.
#[tokio::test]
async fn two_forms_a_task_asks_at_once_under_one_key_are_refused_to_the_tool() {
    use oxp_lambda::{Form, ToolError};
    let form = || {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        Form::new("who", "Who are you?", schema)
    };
    let tool = oxp_lambda::Tool::builder("Job.Twice", "1.0.0")
        .long_running()
        .handler(move |_: Nothing, ctx: oxp_lambda::ToolContext| async move {
            tokio::try_join!(ctx.fill(form()), ctx.fill(form()))?;
            Ok::<_, ToolError>("both")
        });
    let mut tools = common::example_tools::tools();
    tools.push(tool);
    let app = app_with(
        Registry::builder().tools(tools).build().unwrap(),
        test_config(),
    );
    let created = call(&app, "Job_Twice", json!({}), true).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let done = until(&app, &id, "completed").await;
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    let told: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(told["message"], "The tool asked something it cannot ask");
}

#[tokio::test]
async fn tasks_cancel_stops_the_tool_and_the_task_stays_cancelled() {
    let config = oxp_lambda::Config {
        max_concurrent_calls: 1,
        ..test_config()
    };
    let mut tools = common::example_tools::tools();
    tools.push(asking());
    let app = app_with(Registry::builder().tools(tools).build().unwrap(), config);
    let created = call(&app, "Demo_Sleep", json!({"ms": 20_000}), true).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ack = rpc(&app, "tasks/cancel", &id, json!({"taskId": id}), true, None).await;
    assert_eq!(ack.json["result"]["resultType"], "complete", "{}", ack.text);
    // The one slot is free again within a second: the tool stopped.
    let started = Instant::now();
    let add = call(&app, "Calculator_Add", json!({"a": 1, "b": 2}), false).await;
    assert_eq!(add["content"][0]["text"], "3");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let task = get(&app, &id).await;
    assert_eq!(task["status"], "cancelled", "{task}");
    assert!(task.get("result").is_none());
}

#[tokio::test]
async fn server_discover_declares_the_extension_and_no_handshake_revision_does() {
    // The extension is 2026-07-28's: the capabilities of 2025-03-26 to 2025-11-25 have no
    // `extensions`, and this server runs no task at those revisions.
    let app = app();
    let meta = common::mcp::modern_meta(json!({}));
    let discover = common::mcp::rpc(1, "server/discover", json!({"_meta": meta}));
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "server/discover"),
    ];
    let (_, _, text) = common::mcp::post_mcp(&app, &discover.to_string(), &headers).await;
    let discovered: Value = serde_json::from_str(&text).unwrap();
    let capabilities = &discovered["result"]["capabilities"];
    assert!(capabilities["extensions"][TASKS].is_object(), "{text}");
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let params = json!({"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}});
        let reply = common::mcp::answer(&app, common::mcp::rpc(1, "initialize", params)).await;
        let capabilities = &reply["result"]["capabilities"];
        assert!(capabilities["tools"].is_object(), "{version}: {reply}");
        assert!(
            capabilities.get("extensions").is_none(),
            "{version}: {reply}"
        );
        assert!(capabilities.get("tasks").is_none(), "{version}: {reply}");
    }
}

#[tokio::test]
async fn without_the_extension_the_tasks_methods_refuse_and_unknown_or_removed_ones_are_errors() {
    let app = app();
    let created = call(&app, "Demo_Sleep", json!({"ms": 10}), true).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let refused = rpc(&app, "tasks/get", &id, json!({"taskId": id}), false, None).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert_eq!(refused.json["error"]["code"], -32021);
    let unknown = rpc(
        &app,
        "tasks/get",
        "nope",
        json!({"taskId": "nope"}),
        true,
        None,
    )
    .await;
    assert_eq!(unknown.json["error"]["code"], -32602, "{}", unknown.text);
    for removed in ["tasks/list", "tasks/result"] {
        let reply = rpc(&app, removed, &id, json!({"taskId": id}), true, None).await;
        assert_eq!(reply.status, 404, "{removed}: {}", reply.text);
        assert_eq!(reply.json["error"]["code"], -32601);
    }
}

#[tokio::test]
#[cfg(feature = "jwt")]
async fn another_caller_cannot_see_update_or_cancel_a_task() {
    let app = common::jwt::example_app();
    let alice = common::jwt::bearer("alice");
    let bob = common::jwt::bearer("bob");
    let created = rpc(
        &app,
        "tools/call",
        "Demo_Sleep",
        json!({"name": "Demo_Sleep", "arguments": {"ms": 2000}}),
        true,
        Some(&alice),
    )
    .await;
    let id = created.json["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    for method in ["tasks/get", "tasks/cancel"] {
        let reply = rpc(&app, method, &id, json!({"taskId": id}), true, Some(&bob)).await;
        assert_eq!(
            reply.json["error"]["code"], -32602,
            "{method}: {}",
            reply.text
        );
    }
    let mine = rpc(
        &app,
        "tasks/get",
        &id,
        json!({"taskId": id}),
        true,
        Some(&alice),
    )
    .await;
    assert_eq!(mine.json["result"]["status"], "working", "{}", mine.text);
}

/// The example tools, with `tools` served only as tasks (`OXP_MCP_TASK_REQUIRED`).
fn app_requiring_tasks_for(tools: &str) -> Result<App, String> {
    App::builder(common::example_tools::registry().unwrap())
        .config(common::test_config_with(&[(
            "OXP_MCP_TASK_REQUIRED",
            tools,
        )]))
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_tool_served_only_as_a_task_refuses_a_client_without_the_extension_with_32021() {
    let app = app_requiring_tasks_for("Calculator.Add").unwrap();
    let arguments = json!({"a": 1, "b": 2});
    // At 2026-07-28: -32021 (HTTP 400), naming the extension the client must declare.
    let reply = rpc(
        &app,
        "tools/call",
        "Calculator_Add",
        json!({"name": "Calculator_Add", "arguments": arguments}),
        false,
        None,
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(reply.json["error"]["code"], -32021, "{}", reply.text);
    assert_eq!(
        reply.json["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({})
    );
    // A handshake revision's client cannot declare it: the same error.
    let old = common::mcp::call_tool(&app, "Calculator_Add", arguments.clone()).await;
    assert_eq!(old["error"]["code"], -32021, "{old}");
    // With the extension the call is a task, though the tool is not long-running.
    let created = call(&app, "Calculator_Add", arguments.clone(), true).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let done = until(&app, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "3", "{done}");
    // The other tools answer as before.
    let other = common::mcp::call_tool(&app, "System_GetTimestamp", json!({})).await;
    assert_eq!(other["result"]["isError"], false, "{other}");
}

#[test]
fn oxp_mcp_task_required_names_served_tools_of_a_server_that_offers_tasks() {
    let unknown = app_requiring_tasks_for("Calculator.Nope").err().unwrap();
    assert!(unknown.contains("OXP_MCP_TASK_REQUIRED") && unknown.contains("Calculator.Nope"));
    // The listing name serves as well as the dotted one.
    assert!(app_requiring_tasks_for("Calculator_Add").is_ok());
    // Without a state store there are no tasks, so such a tool could never be called.
    let without = App::builder(common::example_tools::registry().unwrap())
        .config(common::test_config_with(&[
            ("OXP_MCP_TASK_REQUIRED", "Calculator.Add"),
            ("OXP_STATE", "off"),
        ]))
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .err()
        .unwrap();
    assert!(
        without.to_string().contains("OXP_MCP_TASK_REQUIRED"),
        "{without}"
    );
}
