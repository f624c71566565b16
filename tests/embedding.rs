//! Embedding without surprises: `Config::default()` reads nothing from the environment or the
//! working directory (`Config::from_env()` does). One test in this binary, because it sets
//! process-wide state (variables, working directory) before any other thread runs.

// Setting process variables is unsafe in edition 2024; this test does it before any thread runs.
#![allow(unsafe_code)]

mod common;

use common::*;
use oxp_lambda::{App, Config, Registry, Tool, ToolContext, ToolError};
use serde_json::json;

fn registry() -> Registry {
    let tool = Tool::builder("Check.Secret", "1.0.0")
        .secret("API_KEY")
        .handler(|_: oxp_lambda::NoInput, ctx: ToolContext| async move {
            Ok::<_, ToolError>(ctx.secret("API_KEY").map(str::to_owned))
        });
    Registry::builder().tool(tool).build().unwrap()
}

#[test]
fn config_default_reads_nothing_from_the_environment_or_the_working_directory() {
    let dir = std::env::temp_dir().join(format!("oxp-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("oxp-secrets.json"),
        r#"{"API_KEY": "from-the-file"}"#,
    )
    .unwrap();
    std::env::set_current_dir(&dir).unwrap();
    // SAFETY: no other thread exists yet (the runtime is built below, and this binary has
    // only this test).
    unsafe {
        std::env::set_var("OXP_SECRET_API_KEY", "from-the-environment");
        std::env::set_var("OXP_PORT", "9999");
    }
    assert_eq!(Config::default().port, 8080, "no OXP_* variable is read");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let request = json!({"request": {"tool_id": "Check.Secret", "input": {}}});
        let embedded = build(App::builder(registry()).config(Config::default()));
        let reply = call(&embedded, request.clone()).await;
        assert_eq!(reply.status, 400, "{}", reply.text);
        assert!(
            reply.text.contains("neither held by the server"),
            "neither the variable nor ./oxp-secrets.json was read: {}",
            reply.text
        );

        let from_env = Config::from_env().unwrap();
        assert_eq!(from_env.port, 9999);
        let app = build(App::builder(registry()).config(from_env));
        let reply = call(&app, request).await;
        assert_eq!(
            reply.json["result"]["value"], "from-the-environment",
            "{}",
            reply.text
        );
    });
    std::fs::remove_dir_all(&dir).ok();
}
