//! What `/mcp` and the AgentCore target serve: one version of each tool, and for `/mcp` the
//! 2026-07-28 parts that need the server's secrets and state (round trips, tasks).

use super::Served;
use super::round_trip::RoundTrips;
use super::tasks::Tasks;
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::invoke::Invoker;
use std::sync::Arc;

/// The tools MCP (and the AgentCore target) serve: one version of each, as `pins`
/// (`OXP_MCP_TOOLS`) pin them.
pub(crate) fn served(invoker: Arc<Invoker>, pins: &[String]) -> Result<Arc<Served>, String> {
    let tools = invoker.registry().served(pins, "OXP_MCP_TOOLS")?;
    Ok(Arc::new(Served::new(invoker, tools)))
}

/// The tools `/mcp` serves, whose questions for the user travel as 2026-07-28 round trips:
/// states sealed under the secret `MCP_STATE_KEY` (required in Lambda, where every execution
/// environment must open the others' states), spent once in `state` when there is one.
pub(crate) fn served_for_mcp(
    invoker: Arc<Invoker>,
    pins: &[String],
    state: Option<&Arc<dyn StateStore>>,
    in_lambda: bool,
) -> Result<Arc<Served>, String> {
    let tools = invoker.registry().served(pins, "OXP_MCP_TOOLS")?;
    let trips = RoundTrips::new(invoker.secrets().clone(), in_lambda, state.cloned());
    // Tasks run detached in this process: locally, with a state store to keep them (a Lambda
    // execution environment freezes once it has answered: there tools answer in the request).
    let tasks = state
        .filter(|_| !in_lambda)
        .map(|store| Arc::new(Tasks::new(store.clone(), invoker.clone(), &tools)));
    let mcp = Served::new(invoker, tools).with_round_trips(trips);
    Ok(Arc::new(match tasks {
        Some(tasks) => mcp.with_tasks(tasks),
        None => mcp,
    }))
}
