//! MCP authorization with a real OAuth server: npm `oidc-provider` (tests/oidc_provider.mjs)
//! started on loopback with Node 22 from `node_modules`, the oxp-lambda binary with
//! `OXP_AUTH=jwt` validating its RS256 tokens through its JWKS, and the MCP Python SDK's OAuth
//! discovery as the client: the 1.x SDK's (tests/mcp_oauth.py, with the raw checks of the
//! metadata, audience and scope), the newest major's (tests/mcp_oauth2.py, at 2026-07-28 and
//! in legacy mode) and the TypeScript SDK 2.x's (tests/mcp_oauth_ts.mjs). `scripts/test`
//! installs Node, the provider and the SDKs, and names them in `OXP_TEST_NODE`,
//! `OXP_TEST_PYTHON` and `OXP_TEST_PYTHON2`.

use crate::common;

use std::process::Command;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real OAuth server and the binary validating its tokens, both on loopback: what each
/// client test runs against (the processes, the `/mcp` URL, the issuer).
fn provider_and_server() -> (common::Process, common::Process, String, String) {
    let node = std::env::var("OXP_TEST_NODE").expect("OXP_TEST_NODE: run through scripts/test");
    let dir = env!("CARGO_MANIFEST_DIR");

    let provider_port = free_port();
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let mut provider = Command::new(node);
    provider
        .arg(format!("{dir}/tests/oidc_provider.mjs"))
        .arg(provider_port.to_string())
        .current_dir(dir);
    let (provider, line) = common::Process::start("oidc-provider", provider);
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
    let (server, line) = common::Process::start("oxp-lambda", server);
    assert!(line.contains("listening"), "{line}");
    (provider, server, resource, issuer)
}

#[test]
#[ignore = "needs Node 22, oidc-provider and the MCP Python SDK: scripts/test installs them (OXP_TEST_NODE, OXP_TEST_PYTHON) and runs this"]
fn the_python_sdk_discovers_the_authorization_server_and_calls_with_its_token() {
    let (_provider, _server, resource, issuer) = provider_and_server();
    let stdout = common::run_client("OXP_TEST_PYTHON", "mcp_oauth.py", &[&resource, &issuer]);
    assert!(
        stdout.contains("ok   a tool call succeeds with the token"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs Node 22, oidc-provider and the MCP Python SDK 2.x: scripts/test installs them (OXP_TEST_NODE, OXP_TEST_PYTHON2) and runs this"]
fn the_newest_python_sdk_gets_a_token_and_calls_at_2026_07_28_and_in_legacy_mode() {
    let (_provider, _server, resource, issuer) = provider_and_server();
    let stdout = common::run_client("OXP_TEST_PYTHON2", "mcp_oauth2.py", &[&resource, &issuer]);
    for mode in ["auto", "legacy"] {
        assert!(
            stdout.contains(&format!("ok   {mode}: a tool call succeeds")),
            "{stdout}"
        );
    }
}

#[test]
#[ignore = "needs Node 22, oidc-provider and the MCP TypeScript SDK 2.x: scripts/test installs them (OXP_TEST_NODE) and runs this"]
fn the_typescript_sdk_gets_a_token_and_calls_at_2026_07_28() {
    let (_provider, _server, resource, issuer) = provider_and_server();
    let stdout = common::run_client("OXP_TEST_NODE", "mcp_oauth_ts.mjs", &[&resource, &issuer]);
    assert!(
        stdout.contains("ok   a tool call succeeds with the token"),
        "{stdout}"
    );
}
