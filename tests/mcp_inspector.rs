//! The MCP Inspector's CLI (npm `@modelcontextprotocol/inspector` 2.x, `--cli`) against the
//! real binary on loopback, as a CI job smoke-tests a server with it: `tools/list` at the
//! 2026-07-28 era with its schema-portability check (`--strict`: no error-severity problem in
//! any tool's schema), a call in `auto` negotiation, and a tool error and an unknown tool,
//! each the exit code and JSON envelope the CLI documents. `scripts/test` installs the
//! Inspector and Node 22 into `node_modules` and names Node in `OXP_TEST_NODE`.

use crate::common;

use common::start_binary;
use serde_json::Value;
use std::process::{Command, Output};

/// The Inspector CLI against `url` with `args`, its catalog and secrets in a directory of
/// their own.
fn inspector(url: &str, args: &[&str]) -> Output {
    let node = std::env::var("OXP_TEST_NODE").expect(
        "OXP_TEST_NODE names Node 22 with the Inspector in node_modules: run through scripts/test",
    );
    let home = std::env::temp_dir().join(format!("oxp-inspector-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&home).unwrap();
    let launcher = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
    );
    let output = Command::new(node)
        .arg(launcher)
        .args(["--cli", url, "--format", "json"])
        .args(args)
        .env("HOME", &home)
        .env("MCP_CATALOG_PATH", home.join("mcp.json"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&home);
    output
}

fn json_of(output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
#[ignore = "needs Node 22 and the MCP Inspector: scripts/test installs them (OXP_TEST_NODE) and runs this"]
fn the_inspector_cli_lists_with_its_strict_schema_check_and_calls_at_2026_07_28() {
    let (_server, base) = start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &[("OXP_AUTH", "none")]);
    let url = format!("{base}/mcp");

    let listed = inspector(
        &url,
        &[
            "--protocol-era",
            "modern",
            "--method",
            "tools/list",
            "--strict",
        ],
    );
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(
        listed.status.success(),
        "exit 6 would be a schema error: {stderr}"
    );
    assert!(stderr.contains("0 errors"), "{stderr}");
    let names: Vec<String> = json_of(&listed)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    for name in ["Calculator_Add", "Demo_Confirm", "Demo_Sleep", "SMS_Send"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }

    let called = inspector(
        &url,
        &[
            "--protocol-era",
            "auto",
            "--method",
            "tools/call",
            "--tool-name",
            "Calculator_Add",
            "--tool-args-json",
            r#"{"a": 10, "b": 5}"#,
        ],
    );
    assert!(called.status.success(), "{:?}", called);
    let result = &json_of(&called)["result"];
    assert_eq!(result["content"][0]["text"], "15", "{result}");
    assert_eq!(result["isError"], false);

    // A tool error and an unknown tool: the CLI's own exit code and error envelope.
    let failed = inspector(
        &url,
        &[
            "--protocol-era",
            "modern",
            "--method",
            "tools/call",
            "--tool-name",
            "Doorbell_Ring",
            "--tool-args-json",
            r#"{"doorbell_id": "nope"}"#,
        ],
    );
    assert_eq!(failed.status.code(), Some(5), "{failed:?}");
    assert_eq!(json_of(&failed)["result"]["isError"], true);
    let unknown = inspector(
        &url,
        &[
            "--protocol-era",
            "modern",
            "--method",
            "tools/call",
            "--tool-name",
            "No_Such_Tool",
        ],
    );
    assert_eq!(unknown.status.code(), Some(5), "{unknown:?}");
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("tool_not_found"),
        "{unknown:?}"
    );
}
