//! template.yaml's functions, one binary per role (`src/bin/`): each serves its role under a
//! Runtime API on loopback and echoes the `Lambda-Runtime-Invocation-Id` of every event it
//! answers; in Lambda the AWS credentials are the ones Lambda gives. (Here the binaries are
//! built with every feature, as `cargo test --all-features` builds them; that each arm64
//! package carries only its role's crates is checked on the packages themselves by
//! scripts/lambda-packages, in CI.)

use crate::common;

use common::runtime_api::{Bootstrap, Event, RuntimeApi};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

fn event_file(path: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("events")
        .join(path);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Serves `events` with role binary `program` as `role`; the Runtime API once every event is
/// answered.
async fn serve(program: &str, role: &str, events: Vec<Event>) -> std::sync::Arc<RuntimeApi> {
    let n = events.len();
    let (api, addr) = RuntimeApi::start(events, Duration::ZERO).await;
    let mut bootstrap =
        Bootstrap::start_program(Path::new(program), addr, &[("OXP_LAMBDA_ROLE", role)]);
    api.wait_for(n, &mut bootstrap).await;
    assert!(api.errors.lock().unwrap().is_empty(), "{:?}", api.errors);
    api
}

#[tokio::test]
async fn the_http_roles_function_answers_http_events_and_echoes_each_invocation_id() {
    let events = vec![
        ("h-1".into(), event_file("apigw-http-list-tools.json"), None),
        (
            "h-2".into(),
            event_file("function-url-mcp-initialize.json"),
            None,
        ),
    ];
    let api = serve(env!("CARGO_BIN_EXE_oxp-http"), "http", events).await;
    let listed = api.answer("h-1");
    assert_eq!(listed["statusCode"], 200, "{listed}");
    assert!(listed["body"].as_str().unwrap().contains("Calculator.Add"));
    assert_eq!(api.answer("h-2")["statusCode"], 200);
    api.assert_every_answer_echoed_its_invocation_id();
}

#[tokio::test]
async fn the_agentcore_roles_function_answers_the_gateway_and_echoes_each_invocation_id() {
    let context = json!({"custom": {"bedrockAgentCoreToolName": "tools___Calculator_Add"}});
    let events = vec![
        ("a-1".into(), json!({"a": 1, "b": 2}), Some(context.clone())),
        ("a-2".into(), json!({"a": 20, "b": 22}), Some(context)),
    ];
    let api = serve(env!("CARGO_BIN_EXE_oxp-agentcore"), "agentcore", events).await;
    assert_eq!(api.answer("a-1")["content"][0]["text"], "3");
    assert_eq!(api.answer("a-2")["content"][0]["text"], "42");
    api.assert_every_answer_echoed_its_invocation_id();
}

#[tokio::test]
async fn the_bedrock_agent_roles_function_answers_the_action_group_and_echoes_each_invocation_id() {
    let events = vec![(
        "b-1".into(),
        event_file("bedrock-agent/calculator-add.json"),
        None,
    )];
    let api = serve(
        env!("CARGO_BIN_EXE_oxp-bedrock-agent"),
        "bedrock-agent",
        events,
    )
    .await;
    let answer = api.answer("b-1");
    assert_eq!(
        answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"], "15.5",
        "{answer}"
    );
    api.assert_every_answer_echoed_its_invocation_id();
}

/// An HTTP event with the parts a client may send as it likes made so (`event[key] = value`).
fn sent_as(file: &str, edits: &[(&str, Value)]) -> Value {
    let mut event = event_file(file);
    for (key, value) in edits {
        let (outer, inner) = key.split_once('.').unwrap_or((key, ""));
        match inner {
            "" => event[outer] = value.clone(),
            inner => event[outer][inner] = value.clone(),
        }
    }
    event
}

#[tokio::test]
async fn an_http_event_whose_query_host_scheme_or_header_text_makes_no_request_is_answered_not_failed()
 {
    // `lambda_http` builds each request's URI from these and panicked on them (the runtime's
    // invocation error, a 502 for the client): a query sent with characters a URI does not
    // take, as an HTTP API or a Function URL passes it on; a load balancer's client's `Host`;
    // a scheme header naming none.
    let events = vec![
        (
            "q-1".into(),
            sent_as(
                "apigw-http-list-tools.json",
                &[("rawQueryString", json!("q={\"a\":1} <x>"))],
            ),
            None,
        ),
        (
            "q-2".into(),
            sent_as("alb-list-tools.json", &[("headers.host", json!("a b"))]),
            None,
        ),
        (
            "q-3".into(),
            sent_as(
                "function-url-call-success.json",
                &[("headers.x-forwarded-proto", json!("no_scheme"))],
            ),
            None,
        ),
        (
            "q-4".into(),
            sent_as(
                "apigw-rest-list-tools.json",
                &[("headers.host", json!("1.2.3.999"))],
            ),
            None,
        ),
        // A header value outside ASCII, as a proxy adds one (`http` 1.6 refuses its text).
        (
            "q-5".into(),
            sent_as(
                "alb-list-tools.json",
                &[("headers.cf-ipcity", json!("Córdoba"))],
            ),
            None,
        ),
        (
            "q-6".into(),
            sent_as(
                "apigw-http-list-tools.json",
                &[("headers.cf-ipcity", json!("Córdoba"))],
            ),
            None,
        ),
    ];
    let api = serve(env!("CARGO_BIN_EXE_oxp-http"), "http", events).await;
    for id in ["q-1", "q-2", "q-4", "q-5", "q-6"] {
        let answer = api.answer(id);
        assert_eq!(answer["statusCode"], 200, "{id}: {answer}");
        assert!(
            answer["body"].as_str().unwrap().contains("Calculator.Add"),
            "{id}"
        );
    }
    let called = api.answer("q-3");
    assert_eq!(called["statusCode"], 200, "{called}");
}

/// A container credentials endpoint on loopback (Managed Instances'), counting its requests.
async fn container_credentials() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let asked = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let router = axum::Router::new().route(
        "/credentials",
        axum::routing::get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let body = json!({
                "AccessKeyId": "AKIDCONTAINER",
                "SecretAccessKey": "container-secret",
                "Token": "container-token",
                "Expiration": "2099-01-01T00:00:00Z"
            });
            async move {
                (
                    [(http::header::CONTENT_TYPE, "application/json")],
                    body.to_string(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (format!("http://{addr}/credentials"), asked)
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn in_lambda_credentials_come_from_the_container_endpoint_not_a_profile_file() {
    use common::aws::{create_secret, moto_url, sdk_config, unique_prefix};
    let prefix = unique_prefix();
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk_config(&moto_url()).await);
    create_secret(&secrets, &format!("{prefix}TWILIO_API_KEY"), "sk_test").await;
    // The default chain would take this profile before the container endpoint.
    let profile = std::env::temp_dir().join(format!("oxp-profile-{}", uuid::Uuid::new_v4()));
    std::fs::write(
        &profile,
        "[default]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n",
    )
    .unwrap();
    let (endpoint, asked) = container_credentials().await;
    let mut event = event_file("function-url-call-success.json");
    event["body"] = json!(
        json!({"request": {"tool_id": "SMS.Send@0.1.2", "input": {"to": "+1", "message": "hi"}}})
            .to_string()
    );
    let (api, addr) = RuntimeApi::start(vec![("s-1".into(), event, None)], Duration::ZERO).await;
    let moto = moto_url();
    let mut bootstrap = Bootstrap::start_program(
        Path::new(env!("CARGO_BIN_EXE_oxp-http")),
        addr,
        &[
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", &moto),
            ("AWS_SHARED_CREDENTIALS_FILE", profile.to_str().unwrap()),
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", &endpoint),
            ("OXP_SECRETS_SOURCE", "aws"),
            ("OXP_SECRETS_PREFIX", &prefix),
        ],
    );
    api.wait_for(1, &mut bootstrap).await;
    let answer = api.answer("s-1");
    assert_eq!(answer["statusCode"], 200, "{answer}");
    assert!(asked.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    let _ = std::fs::remove_file(profile);
}
