//! What `/mcp` and the AgentCore target serve: one version of each tool, and for `/mcp` the
//! 2026-07-28 parts that need the server's secrets and state (round trips, tasks).

use super::round_trip::RoundTrips;
use super::task::Tasks;
use super::{McpConfig, Served};
use oxp_lambda_core::invoke::Invoker;
use oxp_lambda_core::registry::RegisteredTool;
use std::collections::HashSet;
use std::sync::Arc;

/// The tools MCP (and the AgentCore target) serve: one version of each, as `pins`
/// (`OXP_MCP_TOOLS`) pin them.
pub(crate) fn served(invoker: Arc<Invoker>, pins: &[String]) -> Result<Arc<Served>, String> {
    let tools = invoker.registry().served(pins, "OXP_MCP_TOOLS")?;
    Ok(Arc::new(Served::new(invoker, tools)))
}

/// The tools `/mcp` serves, whose questions for the user travel as 2026-07-28 round trips:
/// states sealed under the secret `MCP_STATE_KEY` (required in Lambda, where every execution
/// environment must open the others' states), spent once in the state store of `questions` (the
/// one question service, where tasks and handshake questions wait) when there is one; and
/// at the handshake revisions on the call's stream (`streamed`: Lambda's answers stream).
pub(crate) fn served_for_mcp(
    invoker: Arc<Invoker>,
    settings: &McpConfig,
    questions: Option<&Arc<crate::work::Questions>>,
    (in_lambda, shared): (bool, bool),
    streamed: bool,
    runner: Option<&Arc<crate::work::Runner>>,
    key_file: Option<std::path::PathBuf>,
) -> Result<Arc<Served>, String> {
    let pins = &settings.pins;
    let tools = invoker.registry().served(pins, "OXP_MCP_TOOLS")?;
    // The shared key, never one of this process's: in Lambda, and wherever the store is shared.
    let key_required = in_lambda || shared;
    let mut trips = RoundTrips::new(invoker.secrets().clone(), key_required, questions.cloned())
        .with_key_file(key_file)
        .with_marks_per_caller(settings.spent_marks_per_caller);
    // A handshake client's question goes on the call's stream, which must reach it before the
    // call ends: not through Lambda's buffered answers.
    trips.on_stream = !in_lambda || streamed;
    // Tasks need a state store to keep them and the runner to run them: locally detached in
    // this process; a Lambda execution environment freezes once it has answered, so there only
    // when the runner sends work to the worker role's queue (without it, tools answer in the
    // request).
    let tasks = questions
        .zip(runner.filter(|r| !in_lambda || r.queued()))
        .map(|(questions, runner)| {
            let tasks = Tasks::new(questions.clone(), invoker.clone(), &tools, runner.clone());
            super::task::register(&tasks, runner);
            tasks
        });
    let required = task_required(&settings.task_required, &tools, tasks.is_some())?;
    let mcp = Served::new(invoker, tools).with_round_trips(trips);
    Ok(Arc::new(match tasks {
        Some(tasks) => mcp.with_tasks(tasks, &required),
        None => mcp,
    }))
}

/// The listing names of the tools served only as tasks: those that declare it
/// (`task_support = "required"`) and those `names` (`OXP_MCP_TASK_REQUIRED`, dotted or listing
/// names) makes so in this deployment: each must be served, and the server must offer tasks
/// (else none of them could ever be called).
fn task_required(
    names: &[String],
    tools: &[Arc<RegisteredTool>],
    offered: bool,
) -> Result<HashSet<String>, String> {
    if !names.is_empty() && !offered {
        return Err("OXP_MCP_TASK_REQUIRED needs the tasks extension offered: a state store, and in Lambda OXP_MCP_TASK_QUEUE_URL (docs/mcp.md)".into());
    }
    let mut required: HashSet<String> = names
        .iter()
        .map(|name| {
            tools
                .iter()
                .find(|t| t.name == *name || t.listing_name == *name)
                .map(|t| t.listing_name.clone())
                .ok_or_else(|| {
                    format!("OXP_MCP_TASK_REQUIRED names '{name}', which /mcp does not serve")
                })
        })
        .collect::<Result<_, String>>()?;
    for tool in tools {
        if tool.task_support == oxp_lambda_core::declare::TaskSupport::Required {
            if !offered {
                tracing::warn!(target: "oxp::mcp", tool = tool.id.as_str(), "the tool runs only as a task and this server offers no tasks (a state store, and in Lambda the worker's queue): MCP clients cannot call it");
            }
            required.insert(tool.listing_name.clone());
        }
    }
    Ok(required)
}
