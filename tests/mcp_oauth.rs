//! MCP authorization with a real OAuth server: npm `oidc-provider` (tests/oidc_provider.mjs)
//! started on loopback with Node 22 from `node_modules`, the oxp-lambda binary with
//! `OXP_AUTH=jwt` validating its RS256 tokens through its JWKS, and the MCP Python SDK's OAuth
//! discovery (tests/mcp_oauth.py) as the client. `scripts/test` installs Node, the provider
//! and the SDK, and names them in `OXP_TEST_NODE` and `OXP_TEST_PYTHON`.

use crate::common;

use std::process::Command;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
#[ignore = "needs Node 22, oidc-provider and the MCP Python SDK: scripts/test installs them (OXP_TEST_NODE, OXP_TEST_PYTHON) and runs this"]
fn the_python_sdk_discovers_the_authorization_server_and_calls_with_its_token() {
    let node = std::env::var("OXP_TEST_NODE").expect("OXP_TEST_NODE: run through scripts/test");
    let dir = env!("CARGO_MANIFEST_DIR");

    let provider_port = free_port();
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let mut provider = Command::new(node);
    provider
        .arg(format!("{dir}/tests/oidc_provider.mjs"))
        .arg(provider_port.to_string())
        .current_dir(dir);
    let (_provider, line) = common::Process::start("oidc-provider", provider);
    assert!(line.contains("listening"), "{line}");

    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let mut server = Command::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    server
        .args(["--port", &port.to_string()])
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .env("OXP_AUTH", "jwt")
        .env("OXP_JWT_JWKS_URL", format!("{issuer}/jwks"))
        .env("OXP_JWT_ISSUER", &issuer)
        .env("OXP_JWT_AUDIENCE", &resource)
        .env("OXP_MCP_SCOPES", "tools:call")
        .env("OXP_BIND_USER_ID", "false");
    let (_server, line) = common::Process::start("oxp-lambda", server);
    assert!(line.contains("listening"), "{line}");

    let stdout = common::run_client("OXP_TEST_PYTHON", "mcp_oauth.py", &[&resource, &issuer]);
    assert!(
        stdout.contains("ok   a tool call succeeds with the token"),
        "{stdout}"
    );
}
