//! The official MCP Python SDK against the real binary on loopback: `tests/mcp_sdk.py` runs a
//! client session (initialize, list, calls, errors) over Streamable HTTP. `scripts/test`
//! installs the SDK into `.venv` and names its Python in `OXP_TEST_PYTHON`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "needs the MCP Python SDK: scripts/test installs it (OXP_TEST_PYTHON) and runs this"]
fn the_python_sdk_client_lists_and_calls_tools() {
    let python = std::env::var("OXP_TEST_PYTHON")
        .expect("OXP_TEST_PYTHON names a Python with the `mcp` SDK: run through scripts/test");
    let mut server = Server(
        Command::new(env!("CARGO_BIN_EXE_oxp-lambda"))
            .args(["--port", "0"])
            .env_remove("AWS_LAMBDA_RUNTIME_API")
            .env("OXP_AUTH", "none")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("OXP server listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"));
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
