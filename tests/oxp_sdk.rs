//! The official OXP Python SDK against the real binary on loopback: `tests/oxp_sdk.py` lists
//! and calls tools with strict response validation, and meets a 400, a 422 and a bad token.
//! `scripts/test` installs the SDK into `.venv` and names its Python in `OXP_TEST_PYTHON`.

use crate::common;

use common::{run_client, start_binary};

#[test]
#[ignore = "needs the OXP Python SDK: scripts/test installs it (OXP_TEST_PYTHON) and runs this"]
fn the_official_python_sdk_lists_and_calls_tools() {
    let key = "sdk-test-signing-key-0123456789abcdef";
    let exe = env!("CARGO_BIN_EXE_oxp-lambda");
    let (_open, open_url) = start_binary(exe, &[("OXP_AUTH", "none")]);
    let (_secured, secured_url) = start_binary(
        exe,
        &[
            ("OXP_AUTH", "jwt"),
            ("OXP_JWT_HS256_SECRET_ID", "JWT_KEY"),
            ("OXP_SECRET_JWT_KEY", key),
        ],
    );
    let stdout = run_client(
        "OXP_TEST_PYTHON",
        "oxp_sdk.py",
        &[&open_url, &secured_url, key],
    );
    assert!(
        stdout.contains("ok   a valid bearer token lists the tools"),
        "{stdout}"
    );
}
