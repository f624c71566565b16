//! The MCP TypeScript SDK 1.x (npm `@modelcontextprotocol/sdk`), the SDK most deployed MCP
//! clients are built on, against the real binary on loopback at the revision it negotiates
//! (2025-11-25): `tests/mcp_client_ts1.mjs` lists and calls tools, answers a question and a
//! sampling request, follows a call's progress, and calls a tool the deployment serves only as
//! a task, which the server refuses with -32021 (listed `execution.taskSupport: "required"`, the
//! SDK refused the call itself and sent it to its own task API, which this revision's server
//! does not serve). `scripts/test` installs the SDK and Node 22 into `node_modules` and names
//! Node in `OXP_TEST_NODE`.

use crate::common;

use common::{run_client, start_binary};

#[test]
#[ignore = "needs Node 22 and the MCP TypeScript SDK 1.x: scripts/test installs them (OXP_TEST_NODE) and runs this"]
fn the_typescript_sdk_1x_calls_asks_samples_and_follows_progress_at_2025_11_25() {
    let (_server, base) = start_binary(
        env!("CARGO_BIN_EXE_oxp-lambda"),
        &[
            ("OXP_AUTH", "none"),
            ("OXP_MCP_TASK_REQUIRED", "System.GetTimestamp"),
        ],
    );
    let url = format!("{base}/mcp");
    let stdout = run_client(
        "OXP_TEST_NODE",
        "mcp_client_ts1.mjs",
        &[&url, "System_GetTimestamp"],
    );
    assert!(
        stdout.contains("a task-only tool is the server's -32021"),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("done"), "{stdout}");
}
