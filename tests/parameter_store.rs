//! A secret source written outside the crate (examples/parameter_store: Parameter Store),
//! plugged in with `AppBuilder::secret_source`, through the whole call path against moto on
//! loopback (started by `scripts/test`). Also: secrets given to the builder answer first,
//! whatever the source, without reaching it.
#![cfg(feature = "aws")]

use crate::common;

#[path = "../examples/parameter_store/source.rs"]
mod source;

use common::aws::{moto_url, sdk_config, unique_prefix};
use common::*;
use oxp_lambda::config::SecretSourceKind;
use oxp_lambda::{App, Config, Registry, Tool, ToolContext, ToolError};
use serde_json::json;
use source::ParameterStore;
use std::sync::Arc;

/// A tool that proves it got the secret without returning it.
fn checking_tool() -> Tool {
    Tool::builder("Check.Secret", "1.0.0")
        .secret("API_KEY")
        .handler(|_: oxp_lambda::NoInput, ctx: ToolContext| async move {
            Ok::<_, ToolError>(
                json!({"expected": ctx.secret("API_KEY") == Some("from-parameter-store")}),
            )
        })
}

fn registry() -> Registry {
    Registry::builder().tool(checking_tool()).build().unwrap()
}

fn check() -> serde_json::Value {
    json!({"request": {"tool_id": "Check.Secret", "input": {}}})
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_third_party_secret_source_serves_tools_through_the_invoker() {
    let prefix = format!("/{}", unique_prefix());
    let ssm = aws_sdk_ssm::Client::new(&sdk_config(&moto_url()).await);
    ssm.put_parameter()
        .name(format!("{prefix}API_KEY"))
        .value("from-parameter-store")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .send()
        .await
        .expect("moto stores the parameter");
    let source = ParameterStore::new(ssm, &prefix, &["API_KEY"]);
    let app = build(
        App::builder(registry())
            .config(test_config())
            .secret_source(Arc::new(source)),
    );
    let reply = call(&app, check()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(
        reply.json["result"]["value"]["expected"], true,
        "{}",
        reply.text
    );
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_parameter_the_source_cannot_find_is_refused_without_its_name_or_value() {
    let prefix = format!("/{}", unique_prefix());
    let ssm = aws_sdk_ssm::Client::new(&sdk_config(&moto_url()).await);
    let source = ParameterStore::new(ssm, &prefix, &["API_KEY"]);
    let app = build(
        App::builder(registry())
            .config(test_config())
            .secret_source(Arc::new(source)),
    );
    let reply = call(&app, check()).await;
    assert_eq!(
        reply.json["message"], "The tool server could not load a secret the tool needs",
        "{}",
        reply.text
    );
    assert!(
        reply.json["developer_message"]
            .as_str()
            .unwrap()
            .contains("'API_KEY' was not found")
    );
    assert!(!reply.text.contains(&prefix), "{}", reply.text);
}

#[tokio::test]
async fn builder_secrets_answer_before_the_aws_source_without_reaching_it() {
    let mut config = Config::default();
    config.secrets.source = SecretSourceKind::Aws;
    // Nothing listens there: a request to Secrets Manager would fail the call.
    let sdk = sdk_config("http://127.0.0.1:9").await;
    let app = build(
        App::builder(registry())
            .config(config)
            .aws_config(sdk)
            .secret("API_KEY", "from-parameter-store"),
    );
    let reply = call(&app, check()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(
        reply.json["result"]["value"]["expected"], true,
        "{}",
        reply.text
    );
}

#[tokio::test]
async fn builder_secrets_answer_before_a_custom_source() {
    let ssm = aws_sdk_ssm::Client::new(&sdk_config("http://127.0.0.1:9").await);
    let source = ParameterStore::new(ssm, "/unused/", &["API_KEY"]);
    let app = build(
        App::builder(registry())
            .config(test_config())
            .secret_source(Arc::new(source))
            .secret("API_KEY", "from-parameter-store"),
    );
    let reply = call(&app, check()).await;
    assert_eq!(
        reply.json["result"]["value"]["expected"], true,
        "{}",
        reply.text
    );
}
