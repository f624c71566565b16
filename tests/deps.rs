//! The core crate knows no protocol, HTTP framework or AWS service: its dependency tree, as
//! Cargo resolves it from the lock file, has none of their crates.

use std::process::Command;

#[test]
fn the_core_crate_depends_on_no_aws_lambda_http_framework_or_mcp_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-p",
            "oxp-lambda-core",
            "-e",
            "normal,build",
        ])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.contains(&"jsonschema"), "the tree was read: {tree}");
    let forbidden = |name: &str| {
        name.starts_with("aws-")
            || name.starts_with("aws_")
            || name.starts_with("lambda")
            || name.starts_with("rmcp")
            || [
                "axum",
                "hyper",
                "tower",
                "tower-http",
                "reqwest",
                "warp",
                "actix-web",
            ]
            .contains(&name)
    };
    let found: Vec<&&str> = names.iter().filter(|n| forbidden(n)).collect();
    assert!(found.is_empty(), "the core depends on {found:?}");
}
