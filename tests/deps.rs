//! The core crate knows no protocol, HTTP framework or AWS service: its dependency tree, as
//! Cargo resolves it from the lock file, has none of their crates. The four Lambda functions
//! build the crates they share alike.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// `cargo tree` of the lock file as it is, normal and build dependencies, one crate a line.
fn cargo_tree(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_core_crate_depends_on_no_aws_lambda_http_framework_or_mcp_crate() {
    let tree = cargo_tree(&["-p", "oxp-lambda-core", "--format", "{p}"]);
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

/// Each crate of the function built with feature `role`, for arm64, with its feature sets (one
/// for the target, one for the host where it is built for both).
fn role_crates(role: &str) -> BTreeMap<String, BTreeSet<String>> {
    let tree = cargo_tree(&[
        "-p",
        "oxp-lambda",
        "--no-default-features",
        "--features",
        role,
        "--target",
        "aarch64-unknown-linux-gnu",
        "--format",
        "{p}|{f}",
    ]);
    let mut crates: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (package, features) in tree.lines().filter_map(|line| line.split_once('|')) {
        // A crate printed before is marked `(*)`; a proc macro `(proc-macro)`.
        let package = package.split(" (").next().unwrap_or(package);
        let features = features.trim_end_matches(" (*)");
        if !package.starts_with("oxp-lambda ") {
            let sets = crates.entry(package.to_owned()).or_default();
            sets.insert(features.to_owned());
        }
    }
    crates
}

#[test]
fn the_four_lambda_functions_build_every_crate_they_share_with_the_same_features() {
    // scripts/lambda-packages builds the four functions from one build of their crates: a
    // feature one role turns on in a shared crate would have the others build that crate, and
    // every crate above it, again. Cargo.toml's `_http-role-crates` is where to turn it on.
    let http = role_crates("role-http");
    assert!(
        http.keys().any(|p| p.starts_with("tokio v")),
        "the tree was read"
    );
    for role in ["role-worker", "role-agentcore", "role-bedrock-agent"] {
        let apart: Vec<String> = role_crates(role)
            .into_iter()
            .filter_map(|(package, features)| {
                let theirs = http.get(&package)?;
                (*theirs != features).then(|| format!("{package}: {features:?} against {theirs:?}"))
            })
            .collect();
        assert!(
            apart.is_empty(),
            "{role} builds differently from role-http: {apart:#?}"
        );
    }
}
