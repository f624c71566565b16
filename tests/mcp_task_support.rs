//! A tool's task support declared where the tool is (`#[tool(task_support = "...")]`,
//! `ToolBuilder::task_support`) and shown in `tools/list` as `execution.taskSupport`: a
//! `required` tool runs only as a task (a client without the tasks extension gets -32021), an
//! `optional` one is a task for a client that takes tasks, a `forbidden` one never is (even
//! long-running); `OXP_MCP_TASK_REQUIRED` still makes any tool task-only in a deployment.

use crate::common;

use common::tasks::*;
use common::{App, app_with, test_config_with};
use oxp_lambda::{Registry, ToolError, tool};
use serde_json::{Value, json};

/// Builds a report: long work, only as a task.
#[tool(name = "Reports.Build", version = "1.0.0", task_support = "required")]
async fn build_report(
    /// What the report is about.
    topic: String,
) -> Result<String, ToolError> {
    Ok(format!("report on {topic}"))
}

/// Long, but answered in the request, never as a task.
#[tool(
    name = "Index.Rebuild",
    version = "1.0.0",
    long_running,
    task_support = "forbidden"
)]
async fn rebuild() -> Result<String, ToolError> {
    Ok("rebuilt".into())
}

fn app(vars: &[(&str, &str)]) -> App {
    let mut tools = common::example_tools::tools();
    tools.push(build_report_tool());
    tools.push(rebuild_tool());
    app_with(
        Registry::builder().tools(tools).build().unwrap(),
        test_config_with(vars),
    )
}

/// The `execution.taskSupport` of each tool `tools/list` lists, by name.
async fn listed(app: &App) -> Vec<(String, Value)> {
    let reply = rpc(app, "tools/list", "", json!({}), false, None).await;
    reply.json["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", reply.text))
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap().to_owned();
            (name, t["execution"]["taskSupport"].clone())
        })
        .collect()
}

fn support<'a>(listing: &'a [(String, Value)], name: &str) -> &'a Value {
    &listing.iter().find(|(n, _)| n == name).unwrap().1
}

#[tokio::test]
async fn tools_list_shows_each_tools_task_support_from_its_declaration_and_the_deployment() {
    let listing = listed(&app(&[])).await;
    assert_eq!(support(&listing, "Reports_Build"), "required");
    assert_eq!(support(&listing, "Demo_Sleep"), "optional", "long-running");
    assert_eq!(
        support(&listing, "Index_Rebuild"),
        &Value::Null,
        "forbidden"
    );
    assert_eq!(support(&listing, "Calculator_Add"), &Value::Null);
    // The deployment makes a tool task-only over its declaration.
    let listing = listed(&app(&[("OXP_MCP_TASK_REQUIRED", "Calculator.Add")])).await;
    assert_eq!(support(&listing, "Calculator_Add"), "required");
    // Without tasks offered (no state store), no tool is listed as a task.
    let listing = listed(&app(&[("OXP_STATE", "off")])).await;
    assert!(listing.iter().all(|(_, s)| s.is_null()), "{listing:?}");
}

#[tokio::test]
async fn no_handshake_revision_lists_a_tools_task_support() {
    // 2025-11-25 has an `execution.taskSupport` of its own, for its own tasks, which this
    // server does not serve: the TypeScript SDK 1.x refuses to `callTool` a `required` one,
    // sending it to its task API instead. Earlier revisions have no `execution` at all.
    let app = app(&[]);
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let list = common::mcp::rpc(1, "tools/list", json!({}));
        let headers = [("mcp-protocol-version", version)];
        let (_, _, text) = common::mcp::post_mcp(&app, &list.to_string(), &headers).await;
        let reply: Value = serde_json::from_str(&text).unwrap();
        let tools = reply["result"]["tools"].as_array().expect(&text);
        assert!(tools.iter().any(|t| t["name"] == "Reports_Build"), "{text}");
        assert!(
            tools.iter().all(|t| t.get("execution").is_none()),
            "{version}: {text}"
        );
    }
}

#[tokio::test]
async fn a_required_tool_runs_only_as_a_task_and_a_forbidden_one_never_does() {
    let app = app(&[]);
    let refused = rpc(
        &app,
        "tools/call",
        "Reports_Build",
        json!({"name": "Reports_Build", "arguments": {"topic": "q3"}}),
        false,
        None,
    )
    .await;
    assert_eq!(refused.json["error"]["code"], -32021, "{}", refused.text);
    let created = call(&app, "Reports_Build", json!({"topic": "q3"}), true).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let done = until(&app, created["taskId"].as_str().unwrap(), "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "report on q3",
        "{done}"
    );
    let answered = call(&app, "Index_Rebuild", json!({}), true).await;
    assert_eq!(answered["resultType"], "complete", "{answered}");
    assert_eq!(answered["content"][0]["text"], "rebuilt");
}
