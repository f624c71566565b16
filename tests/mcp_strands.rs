//! Strands Agents' `MCPClient` (PyPI `strands-agents`, AWS's agent SDK; it negotiates
//! 2026-07-28) against the real binary on loopback, driven without a model:
//! `tests/mcp_strands.py` lists and calls the showcase tools, answers a tool's question through
//! its elicitation callback, gets a tool's progress, cancels a long call, and with its tasks
//! configuration runs a long-running tool as a task and cancels another; each cancellation
//! frees the server's one slot at once. `scripts/test` installs Strands into `.venv/strands`
//! and names its Python in `OXP_TEST_STRANDS`.

use crate::common;

use common::{run_client, start_binary};

#[test]
#[ignore = "needs Strands Agents: scripts/test installs it (OXP_TEST_STRANDS) and runs this"]
fn strands_agents_calls_asks_follows_progress_runs_tasks_and_cancels() {
    // One execution slot: a call or task left running after its client gave up would hold it.
    let (_server, base) = start_binary(
        env!("CARGO_BIN_EXE_oxp-lambda"),
        &[("OXP_AUTH", "none"), ("OXP_MAX_CONCURRENT_CALLS", "1")],
    );
    let stdout = run_client(
        "OXP_TEST_STRANDS",
        "mcp_strands.py",
        &[&format!("{base}/mcp")],
    );
    assert!(
        stdout.contains("after a cancelled task the slot is free within 1 s"),
        "{stdout}"
    );
}
