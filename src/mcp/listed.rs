//! `tools/list` with each tool's task support, `execution.taskSupport` (`optional` or
//! `required`; absent: never a task): the tool's declaration (`task_support`, or `optional` for
//! a long-running tool), with `OXP_MCP_TASK_REQUIRED` over it, and only where this server offers
//! tasks, at 2026-07-28, the revision of the tasks extension: 2025-11-25's `execution` speaks of
//! its own tasks, not served here, which an SDK of that revision reads as "call this one as a
//! task" (TypeScript 1.x refuses `callTool` of a `required` tool). rmcp's tool type has no such
//! field, so a listing's JSON answer gets it here.

use super::handler::Served;
use axum::response::Response;
use serde_json::Value;

/// `response` (a `tools/list` answer) with `execution.taskSupport` on each tool that has it.
pub(super) async fn with_task_support(response: Response, served: &Served) -> Response {
    if !crate::server::is_json(response.headers()) || served.tasks().is_none() {
        return response;
    }
    super::plumbing::edit_answer(response, |_, answer| {
        let tools = answer
            .pointer_mut("/result/tools")
            .and_then(Value::as_array_mut);
        for tool in tools.into_iter().flatten() {
            let support = tool
                .get("name")
                .and_then(Value::as_str)
                .and_then(|name| served.task_support(name));
            if let (Some(support), Some(tool)) = (support, tool.as_object_mut()) {
                tool.insert(
                    "execution".into(),
                    serde_json::json!({"taskSupport": support}),
                );
            }
        }
        true
    })
    .await
}
