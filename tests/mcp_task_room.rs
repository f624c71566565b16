//! A task's result counts in its caller's room (`OXP_WORK_MAX_BYTES_PER_CALLER`) by the part
//! while the task is kept: a result that does not fit fails its task with a message the client
//! reads, and results small enough for the task's record take no room.

use crate::common;

use common::tasks::*;
use common::{App, app_with, test_config_with};
use oxp_lambda::{Registry, ToolError, tool};
use serde_json::json;
use std::time::Duration;

/// A report of 400 kB: two parts of a kept result.
#[tool(name = "Reports.Big", version = "1.0.0", task_support = "required")]
async fn big_report() -> Result<String, ToolError> {
    Ok("r".repeat(400_000))
}

/// The same report, after half a second in which it does not stop when cancelled.
#[tool(name = "Reports.Slow", version = "1.0.0", task_support = "required")]
async fn slow_report() -> Result<String, ToolError> {
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    Ok("r".repeat(400_000))
}

fn app() -> App {
    let mut tools = common::example_tools::tools();
    tools.push(big_report_tool());
    tools.push(slow_report_tool());
    // Room for one result of two parts.
    let config = test_config_with(&[("OXP_WORK_MAX_BYTES_PER_CALLER", "300000")]);
    app_with(Registry::builder().tools(tools).build().unwrap(), config)
}

async fn task(app: &App, tool: &str, arguments: serde_json::Value) -> String {
    let created = call(app, tool, arguments, true).await;
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_tasks_result_without_room_in_its_callers_share_fails_the_task_saying_why() {
    let app = app();
    let first = task(&app, "Reports_Big", json!({})).await;
    let done = until(&app, &first, "completed").await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.len(), 400_000, "kept whole");
    // The first result is kept for an hour and fills the room: the next fails, saying why.
    let next = task(&app, "Reports_Big", json!({})).await;
    let failed = until(&app, &next, "failed").await;
    let message = failed["statusMessage"].as_str().unwrap();
    assert!(message.contains("larger than the room"), "{failed}");
    // A small result takes no room.
    let small = task(&app, "Demo_Sleep", json!({"ms": 1})).await;
    until(&app, &small, "completed").await;
    // The first is still read back whole.
    let again = get(&app, &first).await;
    assert_eq!(again["result"]["content"][0]["text"], text);
}

#[tokio::test]
async fn a_result_whose_task_was_cancelled_meanwhile_gives_its_room_back() {
    let app = app();
    let slow = task(&app, "Reports_Slow", json!({})).await;
    let ack = rpc(
        &app,
        "tasks/cancel",
        &slow,
        json!({"taskId": slow}),
        true,
        None,
    )
    .await;
    assert_eq!(ack.status, 200, "{}", ack.text);
    until(&app, &slow, "cancelled").await;
    // Its run ends with its result after the cancellation: no task names that result, which
    // leaves the room it took.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let next = task(&app, "Reports_Big", json!({})).await;
    let done = until(&app, &next, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"].as_str().unwrap().len(),
        400_000
    );
}
