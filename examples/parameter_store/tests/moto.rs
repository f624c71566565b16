//! The Parameter Store source through the whole call path, against moto on loopback (started
//! by oxp-lambda's `scripts/test --full`, which passes its URL in `OXP_TEST_MOTO_URL`). Also:
//! a secret given to the builder answers first, without reaching the source.

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use oxp_lambda::{App, Config, NoInput, Registry, Tool, ToolContext, ToolError};
use oxp_parameter_store::ParameterStore;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

/// A tool that proves it got the secret without returning it.
fn registry() -> Registry {
    let tool = Tool::builder("Check.Secret", "1.0.0")
        .secret("API_KEY")
        .handler(|_: NoInput, ctx: ToolContext| async move {
            Ok::<_, ToolError>(
                json!({"expected": ctx.secret("API_KEY") == Some("from-parameter-store")}),
            )
        });
    Registry::builder().tool(tool).build().unwrap()
}

/// An SSM client of `endpoint` with moto's dummy credentials.
async fn ssm(endpoint: &str) -> aws_sdk_ssm::Client {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(oxp_lambda::aws_http_client())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_credential_types::Credentials::new(
            "testing", "testing", None, None, "tests",
        ))
        .load()
        .await;
    aws_sdk_ssm::Client::new(&sdk)
}

fn moto_url() -> String {
    std::env::var("OXP_TEST_MOTO_URL")
        .expect("OXP_TEST_MOTO_URL is not set: oxp-lambda's scripts/test --full starts moto")
}

/// A unique parameter prefix, so runs sharing one emulator never see each other's.
fn unique_prefix() -> String {
    format!("/oxp-test-{}/", uuid::Uuid::new_v4().simple())
}

/// The app of `source` (and `secret`, given to the builder), then its answer to a call of
/// `Check.Secret`.
async fn call(source: ParameterStore, secret: Option<&str>) -> (Value, String) {
    let mut builder = App::builder(registry())
        .config(Config::default())
        .secret_source(Arc::new(source));
    if let Some(value) = secret {
        builder = builder.secret("API_KEY", value);
    }
    let app = builder.build().await.expect("the app builds");
    let request = Request::post("/tools/call")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"request": {"tool_id": "Check.Secret", "input": {}}}).to_string(),
        ))
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body).into_owned();
    (serde_json::from_str(&text).unwrap(), text)
}

#[tokio::test]
#[ignore = "needs moto: oxp-lambda's scripts/test --full starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_third_party_secret_source_serves_tools_through_the_invoker() {
    let prefix = unique_prefix();
    let ssm = ssm(&moto_url()).await;
    ssm.put_parameter()
        .name(format!("{prefix}API_KEY"))
        .value("from-parameter-store")
        .r#type(aws_sdk_ssm::types::ParameterType::SecureString)
        .send()
        .await
        .expect("moto stores the parameter");
    let (json, text) = call(ParameterStore::new(ssm, &prefix, &["API_KEY"]), None).await;
    assert_eq!(json["result"]["value"]["expected"], true, "{text}");
}

#[tokio::test]
#[ignore = "needs moto: oxp-lambda's scripts/test --full starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_parameter_the_source_cannot_find_is_refused_without_its_name_or_value() {
    let prefix = unique_prefix();
    let ssm = ssm(&moto_url()).await;
    let (json, text) = call(ParameterStore::new(ssm, &prefix, &["API_KEY"]), None).await;
    assert_eq!(
        json["message"], "The tool server could not load a secret the tool needs",
        "{text}"
    );
    let developer = json["developer_message"].as_str().unwrap();
    assert!(developer.contains("'API_KEY' was not found"), "{text}");
    assert!(!text.contains(&prefix), "{text}");
}

#[tokio::test]
async fn builder_secrets_answer_before_a_custom_source() {
    // Nothing listens there: a request to Parameter Store would fail the call.
    let ssm = ssm("http://127.0.0.1:9").await;
    let source = ParameterStore::new(ssm, "/unused/", &["API_KEY"]);
    let (json, text) = call(source, Some("from-parameter-store")).await;
    assert_eq!(json["result"]["value"]["expected"], true, "{text}");
}
