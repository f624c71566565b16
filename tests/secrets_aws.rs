//! Server-held secrets from AWS Secrets Manager through the whole call path, against moto's
//! emulator on loopback (started by `scripts/test`). The source itself (naming, caching, errors)
//! is tested beside it, in `src/secrets/aws_tests.rs`.

use crate::common;

use common::aws::{create_secret, moto_url, sdk_config, unique_prefix};
use common::*;
use oxp_lambda::config::SecretSourceKind;
use oxp_lambda::{App, Config, Registry, Tool, ToolContext, ToolError};
use serde_json::json;

async fn moto_client() -> aws_sdk_secretsmanager::Client {
    aws_sdk_secretsmanager::Client::new(&sdk_config(&moto_url()).await)
}

/// A tool that proves it got the expected secret without ever returning it.
fn checking_tool() -> Tool {
    Tool::builder("Check.Secret", "1.0.0")
        .secret("API_KEY")
        .handler(|_: oxp_lambda::NoInput, ctx: ToolContext| async move {
            Ok::<_, ToolError>(json!({"len": ctx.secret("API_KEY").map(str::len), "server": ctx.secret("API_KEY") == Some("server-held-value")}))
        })
}

/// The app with secrets from Secrets Manager at `endpoint`, named `<prefix><id>`.
async fn app_over(endpoint: &str, prefix: &str, registry: Registry) -> App {
    let mut config = Config::default();
    config.secrets.source = SecretSourceKind::Aws;
    config.secrets.prefix = Some(prefix.to_owned());
    let sdk = sdk_config(endpoint).await;
    build(App::builder(registry).config(config).aws_config(sdk))
}

async fn app_over_moto(prefix: &str) -> App {
    let registry = Registry::builder()
        .tool(checking_tool())
        .tools(common::example_tools::tools())
        .build()
        .unwrap();
    app_over(&moto_url(), prefix, registry).await
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn sms_send_reads_its_key_from_secrets_manager_and_server_secrets_win() {
    let prefix = unique_prefix();
    let setup = moto_client().await;
    create_secret(
        &setup,
        &format!("{prefix}TWILIO_API_KEY"),
        "sk_from_secrets_manager",
    )
    .await;
    create_secret(&setup, &format!("{prefix}API_KEY"), "server-held-value").await;
    let app = app_over_moto(&prefix).await;
    let reply = call(
        &app,
        json!({"request": {"tool_id": "SMS.Send@0.1.2", "input": {"to": "+1", "message": "hi"}}}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.json["result"]["value"], json!({"status": "sent"}));
    let reply = call(&app, json!({"request": {"tool_id": "Check.Secret", "context": {"secrets": [{"id": "API_KEY", "value": "client-value"}]}}})).await;
    assert_eq!(
        reply.json["result"]["value"]["server"], true,
        "server-held secrets win"
    );
    assert!(!reply.text.contains("server-held-value"));
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_secret_missing_from_secrets_manager_is_a_400_naming_the_id_not_a_value() {
    let app = app_over_moto(&unique_prefix()).await;
    let reply = call(&app, json!({"request": {"tool_id": "Check.Secret"}})).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json["message"],
        "The tool server could not load a secret the tool needs"
    );
    let developer = reply.json["developer_message"].as_str().unwrap();
    assert!(
        developer.contains("'API_KEY'") && developer.contains("not found"),
        "{developer}"
    );
}

/// A loopback endpoint that answers every Secrets Manager request with one AWS JSON error,
/// for the errors moto does not produce (it enforces no IAM and never throttles).
async fn error_endpoint(code: &'static str) -> String {
    let app = axum::Router::new().fallback(move || async move {
        (
            axum::http::StatusCode::BAD_REQUEST,
            [
                ("x-amzn-errortype", code),
                ("content-type", "application/x-amz-json-1.1"),
            ],
            format!(r#"{{"__type":"{code}","message":"denied by test"}}"#),
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn access_denied_is_a_400_and_throttling_a_retryable_failure_naming_the_id_and_the_kind() {
    for (code, kind, retryable) in [
        ("AccessDeniedException", "access denied", false),
        ("ThrottlingException", "throttled", true),
    ] {
        let registry = Registry::builder().tool(checking_tool()).build().unwrap();
        let app = app_over(&error_endpoint(code).await, "oxp/", registry).await;
        let reply = call(&app, json!({"request": {"tool_id": "Check.Secret"}})).await;
        // Throttling passes by itself: the call is answered like "busy", with a retry hint.
        let (status, error) = if retryable {
            (200, &reply.json["result"]["error"])
        } else {
            (400, &reply.json)
        };
        assert_eq!(reply.status, status, "{code}: {}", reply.text);
        assert_eq!(error["can_retry"].as_bool() == Some(true), retryable);
        let developer = error["developer_message"].as_str().unwrap();
        assert!(
            developer.contains("'API_KEY'") && developer.contains(kind),
            "{code}: {developer}"
        );
        // The secret's name (or ARN) is deployment detail: logged, never answered.
        assert!(!reply.text.contains("oxp/API_KEY"), "{}", reply.text);
    }
}

#[tokio::test]
async fn builder_secrets_answer_before_the_aws_source_without_reaching_it() {
    let mut config = Config::default();
    config.secrets.source = SecretSourceKind::Aws;
    // Nothing listens there: a request to Secrets Manager would fail the call.
    let sdk = sdk_config("http://127.0.0.1:9").await;
    let app = build(
        App::builder(Registry::builder().tool(checking_tool()).build().unwrap())
            .config(config)
            .aws_config(sdk)
            .secret("API_KEY", "server-held-value"),
    );
    let reply = call(
        &app,
        json!({"request": {"tool_id": "Check.Secret", "input": {}}}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(
        reply.json["result"]["value"]["server"], true,
        "{}",
        reply.text
    );
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn at_the_most_verbose_log_level_no_credential_of_the_role_or_secret_reaches_the_log() {
    // In Lambda `OXP_LOG` follows the function's log level, which the console offers down to
    // TRACE: there the SDK logged the request it signs and sends, the role's session token in
    // its headers.
    let prefix = unique_prefix();
    let secret = "sk_KEY_OF_THE_TOOL";
    create_secret(
        &moto_client().await,
        &format!("{prefix}TWILIO_API_KEY"),
        secret,
    )
    .await;
    let (token, key) = ("TOKEN_OF_THE_ROLE", "SECRET_KEY_OF_THE_ROLE");
    let moto = moto_url();
    let env = [
        ("OXP_AUTH", "none"),
        ("OXP_LOG", "trace"),
        ("OXP_SECRETS_SOURCE", "aws"),
        ("OXP_SECRETS_PREFIX", prefix.as_str()),
        ("AWS_ENDPOINT_URL", moto.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", key),
        ("AWS_SESSION_TOKEN", token),
    ];
    let (server, base) = common::start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &env);
    let addr = base.trim_start_matches("http://");
    let call = r#"{"request":{"tool_id":"SMS.Send","input":{"to":"+1","message":"hi"}}}"#;
    let (status, body) = http_raw(addr, "POST", "/tools/call", call).await;
    assert!(status == 200 && body.contains("sent"), "{body}");
    let text = server.output_holding("oxp::call").await;
    assert!(
        text.contains("GetSecretValue"),
        "the AWS call is logged: {text}"
    );
    for held in [token, key, secret] {
        assert!(!text.contains(held), "{held} in the log: {text}");
    }
}
