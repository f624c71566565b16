//! A protocol written outside the crate (examples/step_functions, from the public API only)
//! plugs in as a value (`AppBuilder::protocol`) and owns everything about itself: its settings
//! read from `OXP_*` variables, its routes behind the configured authentication, its Lambda
//! role, its schema export and its start errors, with its calls through the one invoker
//! (validation, requirements, the deadline, the log line) beside the built-in protocols.

use crate::common;

#[path = "../examples/step_functions/protocol.rs"]
#[allow(dead_code)]
mod step_functions;

use common::runtime_api::{Bootstrap, RuntimeApi};
use common::*;
use oxp_lambda::config::AuthConfig;
use oxp_lambda::{App, Config, StartError};
use serde_json::{Value, json};
use std::time::Duration;
use step_functions::StepFunctions;

fn app_with_vars(vars: &[(&str, &str)], edit: impl FnOnce(&mut Config)) -> Result<App, StartError> {
    let mut config = test_config_with(vars);
    edit(&mut config);
    App::builder(common::example_tools::registry().unwrap())
        .config(config)
        .secret("JWT_KEY", "a-signing-key-of-at-least-32-bytes!!")
        .protocol(StepFunctions)
        .build()
        .now_or_never_built()
}

/// Builds without waiting (nothing is loaded at build).
trait NowOrNever {
    fn now_or_never_built(self) -> Result<App, StartError>;
}

impl<F: std::future::Future<Output = Result<App, StartError>>> NowOrNever for F {
    fn now_or_never_built(self) -> Result<App, StartError> {
        futures_util::FutureExt::now_or_never(self).expect("builds without waiting")
    }
}

fn app(vars: &[(&str, &str)]) -> App {
    app_with_vars(vars, |_| {}).unwrap()
}

#[tokio::test]
async fn its_routes_call_tools_through_the_one_invoker_and_answer_its_own_shape() {
    let app = app(&[]);
    let reply = post(
        &app,
        "/sfn/Calculator.Add",
        json!({"a": 2, "b": 3}).to_string(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.json["output"].as_f64(), Some(5.0), "{}", reply.text);
    // Validated by the invoker, as over every protocol.
    let reply = post(&app, "/sfn/Calculator.Add", json!({"a": "x"}).to_string()).await;
    assert_eq!(
        (reply.status.as_u16(), &reply.json["error"]),
        (400, &json!("InvalidInput"))
    );
    let reply = post(&app, "/sfn/No.Such", json!({}).to_string()).await;
    assert_eq!(reply.json["error"], "ToolNotFound");
    // A tool failure is Step Functions' error, not an HTTP error.
    let reply = post(
        &app,
        "/sfn/Doorbell.Ring",
        json!({"doorbell_id": "nope"}).to_string(),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert!(
        reply.json["error"].as_str().unwrap().starts_with("Tool"),
        "{}",
        reply.text
    );
    // The built-in protocols are still served beside it.
    let reply = common::call(
        &app,
        json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 1}}}),
    )
    .await;
    assert_eq!(reply.status, 200);
}

#[tokio::test]
async fn its_routes_take_json_bodies_only() {
    let app = app(&[]);
    let request = axum::http::Request::post("/sfn/Calculator.Add")
        .header("content-type", "text/plain")
        .body(axum::body::Body::from(r#"{"a":1,"b":2}"#))
        .unwrap();
    let reply = send(&app, request).await;
    assert_eq!(reply.status, 415);
}

#[tokio::test]
async fn its_settings_are_read_from_the_same_variables_and_a_bad_one_stops_the_start() {
    let app = app(&[("OXP_SFN_TOOLS", "Calculator.Add")]);
    let reply = post(
        &app,
        "/sfn/Calculator.Add@1.0.0",
        json!({"a": 1, "b": 2}).to_string(),
    )
    .await;
    assert_eq!(reply.json["output"].as_f64(), Some(3.0), "{}", reply.text);
    let reply = post(&app, "/sfn/System.GetTimestamp", json!({}).to_string()).await;
    assert_eq!(
        (reply.status.as_u16(), &reply.json["error"]),
        (403, &json!("ToolNotAllowed"))
    );
    // A typo in its variable names the variable; a tool that does not exist names the protocol.
    let error = app_with_vars(&[("OXP_SFN_TOOLS", "Calculator Add")], |_| {}).unwrap_err();
    assert!(error.to_string().contains("OXP_SFN_TOOLS"), "{error}");
    let error = app_with_vars(&[("OXP_SFN_TOOLS", "Calculator.Sub")], |_| {}).unwrap_err();
    assert!(
        matches!(
            &error,
            StartError::Protocol {
                protocol: "sfn",
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .starts_with("invalid configuration: sfn: "),
        "{error}"
    );
}

#[tokio::test]
async fn its_routes_are_behind_the_configured_authentication() {
    let app = app_with_vars(&[], |c| c.auth = common::jwt::hs256_auth(false)).unwrap();
    let reply = post(
        &app,
        "/sfn/Calculator.Add",
        json!({"a": 1, "b": 1}).to_string(),
    )
    .await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json["error"], "Unauthenticated");
}

#[tokio::test]
async fn its_lambda_role_answers_direct_invocations() {
    let app = app_with_vars(&[], |c| c.lambda_role = "sfn".into()).unwrap();
    let event = json!({"tool": "Calculator.Add", "input": {"a": 20, "b": 22}}).to_string();
    let answer = app.handle_direct("sfn", event.as_bytes(), None).await;
    assert_eq!(answer.unwrap()["output"].as_f64(), Some(42.0));
    let answer = app.handle_direct("sfn", b"not json", None).await.unwrap();
    assert_eq!(answer["error"], "InvalidInput");
    // A role no protocol serves is refused at start, naming the variable.
    let error = app_with_vars(&[], |c| c.lambda_role = "sfm".into()).unwrap_err();
    assert!(error.to_string().contains("OXP_LAMBDA_ROLE"), "{error}");
    assert!(
        error.to_string().contains("'sfn'"),
        "the roles it serves: {error}"
    );
    // A direct role takes no token: authentication must be off for it.
    let error = app_with_vars(&[], |c| {
        c.lambda_role = "sfn".into();
        c.auth = AuthConfig::ApiGateway {
            bind_user_id: false,
        };
    })
    .unwrap_err();
    assert!(error.to_string().contains("OXP_AUTH"), "{error}");
}

/// A second protocol claiming the example's direct role: one invocation, two handlers.
struct Twin;

impl oxp_lambda::protocol::Protocol for Twin {
    type Settings = ();

    fn name(&self) -> &'static str {
        "twin"
    }

    fn settings(
        &self,
        _: &oxp_lambda::config::Env<'_>,
        _: &Config,
    ) -> Result<(), oxp_lambda::config::ConfigError> {
        Ok(())
    }

    fn build(
        &self,
        _: (),
        _: &oxp_lambda::protocol::Assembly<'_>,
    ) -> Result<oxp_lambda::protocol::Contribution, String> {
        let role = oxp_lambda::protocol::LambdaRole::direct("sfn", std::sync::Arc::new(Twin));
        Ok(oxp_lambda::protocol::Contribution::default().lambda_role(role))
    }
}

impl oxp_lambda::protocol::DirectHandler for Twin {
    fn handle<'a>(
        &'a self,
        _: &'a [u8],
        _: Option<&'a [u8]>,
        _: oxp_lambda::protocol::CallContext,
    ) -> oxp_lambda::protocol::BoxFuture<'a, Value> {
        Box::pin(async { json!({"twin": true}) })
    }

    fn too_large(&self) -> Value {
        json!({"twin": "too large"})
    }
}

#[tokio::test]
async fn two_protocols_answering_one_direct_role_stop_the_start_naming_it() {
    let mut config = test_config_with(&[]);
    config.lambda_role = "sfn".into();
    let built = App::builder(common::example_tools::registry().unwrap())
        .config(config)
        .protocol(StepFunctions)
        .protocol(Twin)
        .build()
        .now_or_never_built();
    let Err(error) = built else {
        panic!("two handlers of one direct role built");
    };
    assert!(
        error.to_string().contains("OXP_LAMBDA_ROLE")
            && error
                .to_string()
                .contains("two protocols answer the direct invocations of role 'sfn'"),
        "{error}"
    );
}

/// The example's binary, which `cargo test` builds beside the tests.
fn example_binary() -> std::path::PathBuf {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_oxp-lambda"));
    bin.parent()
        .unwrap()
        .join("examples")
        .join("step_functions")
}

#[tokio::test]
#[ignore = "needs the example's binary, which a whole `cargo test` builds (scripts/test runs it)"]
async fn the_examples_binary_serves_its_role_under_the_runtime_api_with_the_deadline() {
    let events = vec![
        (
            "r-1".to_owned(),
            json!({"tool": "Calculator.Add", "input": {"a": 1, "b": 2}}),
            None,
        ),
        // Demo.Sleep asked for 60 s stops at the invocation's deadline (30 s, less the margin
        // OXP_DEADLINE_MARGIN_MS=29000): the CallContext carried the deadline.
        (
            "r-2".to_owned(),
            json!({"tool": "Demo.Sleep", "input": {"ms": 60000}}),
            None,
        ),
    ];
    let (api, addr) = RuntimeApi::start(events, Duration::ZERO).await;
    let started = std::time::Instant::now();
    let mut bootstrap = Bootstrap::start_program(
        &example_binary(),
        addr,
        &[
            ("OXP_LAMBDA_ROLE", "sfn"),
            ("OXP_DEADLINE_MARGIN_MS", "29000"),
        ],
    );
    api.wait_for(2, &mut bootstrap).await;
    assert_eq!(api.answer("r-1")["output"].as_f64(), Some(3.0));
    let slept = api.answer("r-2");
    assert!(
        slept["output"]["slept_ms"]
            .as_u64()
            .is_some_and(|ms| ms < 5000)
            || slept["error"] == "ToolRetryable",
        "stopped at the deadline: {slept}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
#[ignore = "needs the example's binary, which a whole `cargo test` builds (scripts/test runs it)"]
fn the_examples_binary_exports_its_schema() {
    let out = std::process::Command::new(example_binary())
        .args(["schema", "--sfn"])
        .env_clear()
        .env("OXP_SFN_TOOLS", "Calculator.Add")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema.as_array().unwrap().len(), 1, "{schema}");
    assert_eq!(schema[0]["tool"], "Calculator.Add@1.0.0");
}

#[test]
fn a_schema_no_protocol_exports_is_refused_naming_those_that_do() {
    // `schema --mcp` said only that no protocol of the build exports one by that name.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oxp-lambda"))
        .args(["schema", "--mcp"])
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && out.stdout.is_empty(), "{said}");
    assert!(
        said.contains("(those that do: --agentcore, --bedrock-agent, --bedrock-agent-api)"),
        "{said}"
    );
}
