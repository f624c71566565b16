//! The official MCP Python SDK against the real binary on loopback: `tests/mcp_sdk.py` runs a
//! client session (initialize, list, calls, errors) over Streamable HTTP. `scripts/test`
//! installs the SDK into `.venv` and names its Python in `OXP_TEST_PYTHON`.

mod common;

use common::start_binary;
use std::process::Command;

#[test]
#[ignore = "needs the MCP Python SDK: scripts/test installs it (OXP_TEST_PYTHON) and runs this"]
fn the_python_sdk_client_lists_and_calls_tools() {
    let python = std::env::var("OXP_TEST_PYTHON")
        .expect("OXP_TEST_PYTHON names a Python with the `mcp` SDK: run through scripts/test");
    let (_server, base) = start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &[("OXP_AUTH", "none")]);
    let output = Command::new(python)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_sdk.py"))
        .arg(format!("{base}/mcp"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ok   ping answers"), "{stdout}");
}
