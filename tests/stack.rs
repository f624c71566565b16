//! The stack as deployed: `tests/stack_on_moto.py` translates template.yaml with the SAM
//! translator, checks each function's role against what its environment makes the binary
//! call, creates the stack in moto's CloudFormation, and runs each function's bootstrap (this
//! binary) under a Lambda Runtime API on loopback with its own role's credentials and IAM
//! enforced: an OXP call with its secret and idempotency record, a browser page's CORS
//! preflight (`AllowedOrigins`), `/invoke` through SQS to the
//! worker and its callback exactly once, a dead letter, the AgentCore and Bedrock Agents
//! functions, and calls outside each role refused.

use std::process::Command;

#[test]
#[ignore = "needs moto and the SAM translator: scripts/test installs them (OXP_TEST_PYTHON) and runs this"]
fn the_template_runs_on_moto_with_each_functions_own_iam_policies_enforced() {
    let python = std::env::var("OXP_TEST_PYTHON").expect(
        "OXP_TEST_PYTHON names a Python with moto and aws-sam-translator: run through scripts/test",
    );
    let output = Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/stack_on_moto.py"
        ))
        .arg(env!("CARGO_BIN_EXE_oxp-lambda"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    for step in [
        "OxpWorkerFunction: its role grants exactly what its environment calls",
        "http function: OXP call with its secret and its idempotency record, replayed",
        "http function: a page of AllowedOrigins gets its CORS preflight answered",
        "OxpStreamFunction: the HTTP function's role, behind an IAM-authenticated streaming URL and REST API",
        "stream function: an OXP call streamed, its secret and record under the http role",
        "worker: the invocation ran and was delivered exactly once, redelivery included",
        "worker: an undeliverable result went to the dead-letter queue, its mark released",
        "mcp task: queued by the http function, run by the worker, answered from the table",
        "agentcore function: a tool with its secret",
        "bedrock-agent function: a tool with its secret",
        "calls outside each role's grants are refused",
    ] {
        assert!(
            stdout.contains(step),
            "missing `{step}`:\n{stdout}\n{stderr}"
        );
    }
}
