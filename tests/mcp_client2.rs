//! The newest MCP Python SDK (PyPI `mcp` 2.x, `mcp.Client(url)` in its default auto mode, which
//! speaks 2026-07-28 to a server that offers it) against the real binary on loopback:
//! `tests/mcp_client2.py` lists and calls the showcase tools, answers a tool's question through
//! its elicitation callback (the input_required round), answers a tool's request to the client's
//! model through its sampling callback (at 2026-07-28, and at 2025-11-25 in legacy mode on the
//! call's stream), gets a tool's progress through its
//! progress callback, and gives up on a long call, whose slot
//! the server frees at once. `scripts/test` installs the SDK into `.venv/mcp2` and names its
//! Python in `OXP_TEST_PYTHON2`.

use crate::common;

use common::{run_client, start_binary};
use std::process::Command;

#[test]
#[ignore = "needs the MCP Python SDK 2.x: scripts/test installs it (OXP_TEST_PYTHON2) and runs this"]
fn the_newest_python_sdk_calls_asks_and_cancels_at_2026_07_28() {
    // One execution slot: a call left running after its client gave up would hold it.
    let (_server, base) = start_binary(
        env!("CARGO_BIN_EXE_oxp-lambda"),
        &[("OXP_AUTH", "none"), ("OXP_MAX_CONCURRENT_CALLS", "1")],
    );
    let stdout = run_client(
        "OXP_TEST_PYTHON2",
        "mcp_client2.py",
        &[&format!("{base}/mcp")],
    );
    assert!(stdout.contains("the slot is free within 1 s"), "{stdout}");
    assert!(
        stdout.contains("at 2025-11-25 the request reaches the model"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs the MCP Python SDK 2.x: scripts/test installs it (OXP_TEST_PYTHON2) and runs this"]
fn the_python_snippets_of_docs_mcp_md_run_as_written() {
    let python = std::env::var("OXP_TEST_PYTHON2")
        .expect("OXP_TEST_PYTHON2 names a Python with `mcp` 2.x: run through scripts/test");
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mcp.md")).unwrap();
    let snippets: Vec<&str> = page
        .split("```python\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .collect();
    let (_server, base) = start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &[("OXP_AUTH", "none")]);
    let mut printed = Vec::new();
    for snippet in &snippets {
        // The snippets name the README's address; the test's server listens on another port.
        let script = snippet.replace("http://127.0.0.1:8080", &base);
        let output = Command::new(&python)
            .args(["-c", &script])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{snippet}\n{stdout}\n{stderr}");
        printed.push(stdout);
    }
    // A call's value; the summary the snippet's stand-in model wrote for the tool.
    assert_eq!(printed, ["15", "8 words to summarize."], "{snippets:?}");
}
