//! MCP tasks at 2026-07-28 in-process: requests that declare the extension, polling a task,
//! and a long-running tool that asks the user.

use super::{App, Reply, send};
use axum::body::Body;
use axum::http::Request;
use oxp_lambda::{Ask, Tool, ToolContext, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub const TASKS: &str = "io.modelcontextprotocol/tasks";

pub fn meta(tasks: bool) -> Value {
    // A client that answers every kind of request a tool makes: forms, its model, its roots.
    let mut capabilities = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    if tasks {
        capabilities["extensions"] = json!({TASKS: {}});
    }
    super::mcp::modern_meta(capabilities)
}

/// A 2026-07-28 request of `method` with `params` (and `_meta`), its `Mcp-Name` being `name`.
pub async fn rpc(
    app: &App,
    method: &str,
    name: &str,
    mut params: Value,
    tasks: bool,
    bearer: Option<&str>,
) -> Reply {
    params["_meta"] = meta(tasks);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name);
    if let Some(bearer) = bearer {
        request = request.header("authorization", bearer);
    }
    send(app, request.body(Body::from(body.to_string())).unwrap()).await
}

pub async fn call(app: &App, tool: &str, arguments: Value, tasks: bool) -> Value {
    let reply = rpc(
        app,
        "tools/call",
        tool,
        json!({"name": tool, "arguments": arguments}),
        tasks,
        None,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json["result"].clone()
}

pub async fn get(app: &App, id: &str) -> Value {
    let reply = rpc(app, "tasks/get", id, json!({"taskId": id}), true, None).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json["result"].clone()
}

/// Polls task `id` until its status is `status` (5 s at most).
pub async fn until(app: &App, id: &str, status: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let task = get(app, id).await;
        if task["status"] == status {
            return task;
        }
        assert!(
            Instant::now() < end,
            "the task never became {status}: {task}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct Nothing {}

/// A long-running tool that asks the user first.
pub fn asking() -> Tool {
    Tool::builder("Job.Deploy", "1.0.0")
        .description("Deploys after the user confirms.")
        .long_running()
        .handler(|_: Nothing, ctx: ToolContext| async move {
            let choice = ctx.ask(Ask::new("Deploy?", ["Yes", "No"])).await?;
            Ok::<_, ToolError>(format!("deploy: {}", choice.label))
        })
}

/// A long-running tool that asks two questions at once (`join!`): `ask_0` and `ask_1` are open
/// together; it answers with both choices.
pub fn asking_twice() -> Tool {
    Tool::builder("Job.Pair", "1.0.0")
        .description("Asks where and when at once.")
        .long_running()
        .handler(|_: Nothing, ctx: ToolContext| async move {
            let (region, window) = tokio::join!(
                ctx.ask(Ask::new("Region?", ["eu", "us"])),
                ctx.ask(Ask::new("Window?", ["now", "tonight"])),
            );
            Ok::<_, ToolError>(format!("pair: {} {}", region?.label, window?.label))
        })
}

/// `tasks/update` of task `id` with `responses`; the reply.
pub async fn update(app: &App, id: &str, responses: Value) -> Reply {
    rpc(
        app,
        "tasks/update",
        id,
        json!({"taskId": id, "inputResponses": responses}),
        true,
        None,
    )
    .await
}

/// The accepted choice `label`, as a client answers it.
pub fn choose(label: &str) -> Value {
    json!({"action": "accept", "content": {"choice": label}})
}

/// A long-running tool that asks first: its question is asked within the request, and its
/// long part (after `ctx.detach`) is a task for a client that takes tasks.
pub fn asking_first() -> Tool {
    Tool::builder("Job.Release", "1.0.0")
        .description("Releases once the user confirms, as a task.")
        .long_running()
        .asks_first()
        .handler(|_: Nothing, ctx: ToolContext| async move {
            let choice = ctx.ask(Ask::new("Release?", ["Yes", "No"])).await?;
            ctx.detach().await?;
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok::<_, ToolError>(format!("release: {}", choice.label))
        })
}

/// Input of `Job.Crash`.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Crash {
    /// Panic (else fail as a tool does).
    pub panic: bool,
}

/// A long-running tool that panics, its panic text holding what must not leak, or fails with a
/// tool error.
pub fn crashing() -> Tool {
    Tool::builder("Job.Crash", "1.0.0")
        .description("Crashes or fails.")
        .long_running()
        .handler(|input: Crash, _: ToolContext| async move {
            if input.panic {
                panic!("secret-in-panic-text");
            }
            Err::<String, _>(ToolError::new("The job refused"))
        })
}
