//! The official MCP Python SDK against the real binary on loopback: `tests/mcp_sdk.py` runs a
//! client session (initialize, list, calls, errors) over Streamable HTTP. `scripts/test`
//! installs the SDK into `.venv` and names its Python in `OXP_TEST_PYTHON`.

use crate::common;

use common::{run_client, start_binary};

#[test]
#[ignore = "needs the MCP Python SDK: scripts/test installs it (OXP_TEST_PYTHON) and runs this"]
fn the_python_sdk_client_lists_and_calls_tools() {
    let (_server, base) = start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &[("OXP_AUTH", "none")]);
    let stdout = run_client("OXP_TEST_PYTHON", "mcp_sdk.py", &[&format!("{base}/mcp")]);
    assert!(stdout.contains("ok   ping answers"), "{stdout}");
}
