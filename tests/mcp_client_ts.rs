//! The newest MCP TypeScript SDK (npm `@modelcontextprotocol/client` 2.x, version negotiation in
//! `auto` mode, which speaks 2026-07-28 to a server that offers it) against the real binary on
//! loopback: `tests/mcp_client_ts.mjs` lists and calls the showcase tools, answers a tool's
//! question through its elicitation handler (the input_required round), gets a tool's progress
//! through `onprogress`, and aborts a long call, whose slot the server frees at once.
//! `scripts/test` installs the SDK and Node 22 into `node_modules` and names Node in
//! `OXP_TEST_NODE`.

use crate::common;

use common::{run_client, start_binary};
use std::process::Command;

#[test]
#[ignore = "needs Node 22 and the MCP TypeScript SDK 2.x: scripts/test installs them (OXP_TEST_NODE) and runs this"]
fn the_newest_typescript_sdk_calls_asks_follows_progress_and_cancels_at_2026_07_28() {
    // One execution slot: a call left running after its client gave up would hold it.
    let (_server, base) = start_binary(
        env!("CARGO_BIN_EXE_oxp-lambda"),
        &[("OXP_AUTH", "none"), ("OXP_MAX_CONCURRENT_CALLS", "1")],
    );
    let stdout = run_client(
        "OXP_TEST_NODE",
        "mcp_client_ts.mjs",
        &[&format!("{base}/mcp")],
    );
    assert!(stdout.contains("the slot is free within 1 s"), "{stdout}");
}

#[test]
#[ignore = "needs Node 22 and the MCP TypeScript SDK 2.x: scripts/test installs them (OXP_TEST_NODE) and runs this"]
fn the_typescript_snippet_of_docs_mcp_md_runs_as_written() {
    let node = std::env::var("OXP_TEST_NODE").expect(
        "OXP_TEST_NODE names Node 22 with the SDK in node_modules: run through scripts/test",
    );
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mcp.md")).unwrap();
    let snippet = page
        .split("```js\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/mcp.md has a JavaScript snippet");
    let (_server, base) = start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &[("OXP_AUTH", "none")]);
    // The snippet names the README's address; the test's server listens on another port. The
    // module sits in the repository so that it finds the SDK in node_modules.
    let script = snippet.replace("http://127.0.0.1:8080", &base);
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/target"));
    std::fs::create_dir_all(dir).unwrap();
    let module = dir.join(format!("mcp-snippet-{}.mjs", std::process::id()));
    std::fs::write(&module, script).unwrap();
    let output = Command::new(node).arg(&module).output().unwrap();
    let _ = std::fs::remove_file(&module);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "15");
}
