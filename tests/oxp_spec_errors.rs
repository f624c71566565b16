//! The OXP 1.0 specification's error behaviour (`shared/spec/oxp-*.txt`, sentence by sentence):
//! what fails a call and how it is told, and a call's context (its requirements: authorization,
//! user id, secrets). The rest of the specification is in `oxp_spec.rs`.

use crate::common;

use common::*;
use oxp_lambda::{Config, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn counting_tool(counter: Arc<AtomicUsize>) -> Tool {
    Tool::builder("T.Count", "1.0.0").raw_handler(
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        None,
        move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok(Value::Null) }
        },
    )
}

#[tokio::test]
async fn input_is_validated_before_the_tool_is_called() {
    let counter = Arc::new(AtomicUsize::new(0));
    let app = app_with(
        Registry::builder()
            .tool(counting_tool(counter.clone()))
            .build()
            .unwrap(),
        Config::default(),
    );
    let reply = call(
        &app,
        json!({"request": {"tool_id": "T.Count", "input": {"n": "x"}}}),
    )
    .await;
    assert_eq!(reply.status, 422);
    assert_eq!(reply.json["parameter_errors"]["n"], "Must be an integer");
    let reply = call(
        &app,
        json!({"request": {"tool_id": "T.Count", "input": {}}}),
    )
    .await;
    assert_eq!(reply.status, 422);
    assert_eq!(reply.json["parameter_errors"]["n"], "Is required");
    assert_eq!(counter.load(Ordering::SeqCst), 0, "the tool never ran");
    let reply = call(
        &app,
        json!({"request": {"tool_id": "T.Count", "input": {"n": 1}}}),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(counter.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn every_server_error_has_a_message() {
    let app = example_app();
    for body in [
        json!({"request": {"tool_id": "Nope.Tool"}}),
        json!({"request": {"tool_id": "Calculator.Add@9"}}),
        json!({"request": {"tool_id": "bad id!"}}),
        json!({"$schema": "urn:other", "request": {"tool_id": "Calculator.Add"}}),
        json!({"request": {"tool_id": "SMS.Send", "input": {"to": "1", "message": "m"}}}),
    ] {
        let reply = call(&app, body.clone()).await;
        assert_eq!(reply.status, 400, "{body}");
        assert_eq!(reply.json["$schema"], "urn:oxp:1.0");
        assert!(
            !reply.json["message"].as_str().unwrap().is_empty(),
            "{body}"
        );
    }
}

#[tokio::test]
async fn an_unknown_tool_names_what_is_available() {
    let reply = call(
        &example_app(),
        json!({"request": {"tool_id": "Calculator.Subtract"}}),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json["message"],
        "Tool 'Calculator_Subtract' was not found"
    );
    let developer = reply.json["developer_message"].as_str().unwrap();
    assert!(
        developer.contains("Calculator.Add") && developer.contains("Doorbell.Ring"),
        "{developer}"
    );
}

#[tokio::test]
async fn a_panicking_tool_fails_the_call_and_the_server_keeps_serving() {
    let tool = Tool::builder("T.Panic", "1.0.0").handler(|_: oxp_lambda::NoInput, _| async {
        if true {
            panic!("secret internal detail");
        }
        Ok::<(), ToolError>(())
    });
    let registry = Registry::builder()
        .tool(tool)
        .tools(common::example_tools::tools())
        .build()
        .unwrap();
    let captured = Captured::global();
    let app = app_with(registry, Config::default());
    let body = json!({"request": {"tool_id": "T.Panic", "call_id": "panic-1"}});
    let reply = call(&app, body.clone()).await;
    assert_eq!(reply.status, 200);
    let error = &reply.json["result"]["error"];
    assert_eq!(error["message"], "The tool failed unexpectedly");
    let developer = error["developer_message"].as_str().unwrap();
    assert!(developer.contains("T.Panic@1.0.0 panicked"), "{developer}");
    // The panic text is logged, never answered, not even by a replay of the stored outcome.
    assert!(
        !reply.text.contains("secret internal detail"),
        "{}",
        reply.text
    );
    let replay = call(&app, body).await;
    assert!(
        !replay.text.contains("secret internal detail"),
        "{}",
        replay.text
    );
    assert!(captured.text().contains("secret internal detail"));
    let reply = call(
        &app,
        json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 1}}}),
    )
    .await;
    assert_eq!(reply.json["result"]["value"], 2);
}

#[tokio::test]
async fn a_tool_that_overruns_its_time_limit_is_cancelled_with_a_retryable_error() {
    let tool = Tool::builder("T.Slow", "1.0.0").handler(|_: oxp_lambda::NoInput, _| async {
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        Ok::<(), ToolError>(())
    });
    let config = Config {
        tool_timeout: Some(std::time::Duration::from_millis(50)),
        ..Config::default()
    };
    let app = app_with(Registry::builder().tool(tool).build().unwrap(), config);
    let reply = call(&app, json!({"request": {"tool_id": "T.Slow"}})).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json["result"]["success"], false);
    assert_eq!(reply.json["result"]["error"]["can_retry"], true);
}

// ---- Requirements (oxp-call-tool-request-schema.txt: Context) ----------------------------------

fn gmail_app(seen: Arc<std::sync::Mutex<Option<ToolContext>>>) -> App {
    let tool = Tool::builder("Gmail.GetEmails", "1.2.0")
        .authorization("google", ["https://www.googleapis.com/auth/gmail.readonly"])
        .requires_user_id()
        .raw_handler(json!({"type": "object"}), None, move |_, ctx| {
            *seen.lock().unwrap() = Some(ctx);
            async { Ok(Value::Null) }
        });
    app_with(
        Registry::builder().tool(tool).build().unwrap(),
        Config::default(),
    )
}

#[tokio::test]
async fn authorization_and_user_id_requirements_are_listed() {
    let reply = get(&gmail_app(Default::default()), "/tools").await;
    assert_eq!(
        reply.json["tools"][0]["requirements"],
        json!({"authorization": [{"id": "google", "oauth2": {"scopes": ["https://www.googleapis.com/auth/gmail.readonly"]}}], "user_id": true})
    );
}

#[tokio::test]
async fn required_authorization_must_be_provided_in_context() {
    let app = gmail_app(Default::default());
    let reply = call(&app, json!({"request": {"tool_id": "Gmail.GetEmails@1.2.0", "context": {"user_id": "user_123"}}})).await;
    assert_eq!(reply.status, 400);
    assert!(reply.json["message"].as_str().unwrap().contains("google"));
}

#[tokio::test]
async fn a_required_user_id_must_be_provided_in_context() {
    let app = gmail_app(Default::default());
    let reply = call(&app, json!({"request": {"tool_id": "Gmail.GetEmails@1.2.0", "context": {"authorization": [{"id": "google", "token": "ya29.tok"}]}}})).await;
    assert_eq!(reply.status, 400);
    assert!(reply.json["message"].as_str().unwrap().contains("user ID"));
    // The published 1.0 OpenAPI's `missing_requirements`.
    assert_eq!(reply.json["missing_requirements"], json!({"user_id": true}));
    assert!(!reply.text.contains("ya29.tok"));
}

#[tokio::test]
async fn a_schema_version_that_is_not_a_string_is_a_400() {
    let app = example_app();
    for schema in [json!(null), json!(1), json!(["urn:oxp:1.0"])] {
        let body = json!({"$schema": schema, "request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}});
        let reply = call(&app, body).await;
        assert_eq!(reply.status, 400, "{schema}: {}", reply.text);
        let listing = json!({"$schema": schema}).to_string();
        let request = axum::http::Request::get("/tools")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(listing))
            .unwrap();
        assert_eq!(
            send(&app, request).await.status,
            400,
            "GET /tools with {schema}"
        );
    }
}

#[tokio::test]
async fn a_required_secret_must_be_provided() {
    let reply = call(
        &example_app(),
        json!({"request": {"tool_id": "SMS.Send@0.1.2", "input": {"to": "1", "message": "m"}}}),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json["message"],
        "This tool requires the secret 'TWILIO_API_KEY', which was not provided"
    );
}

#[tokio::test]
async fn spec_request_example_gmail_the_tool_receives_exactly_what_it_declared() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let app = gmail_app(seen.clone());
    let reply = call(&app, json!({"request": {
        "tool_id": "Gmail.GetEmails@1.2.0", "call_id": "423e4567-e89b-12d3-a456-426614174003", "trace_id": "trace_123",
        "input": {"query": "is:unread"},
        "context": {
            "authorization": [{"id": "google", "token": "ya29.a0AfH6SMC..."}, {"id": "github", "token": "gho_other"}],
            "secrets": [{"id": "UNDECLARED", "value": "v"}],
            "user_id": "user_123"
        }
    }}))
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let ctx = seen.lock().unwrap().take().unwrap();
    assert_eq!(ctx.call_id, "423e4567-e89b-12d3-a456-426614174003");
    assert_eq!(ctx.trace_id.as_deref(), Some("trace_123"));
    assert_eq!(ctx.user_id.as_deref(), Some("user_123"));
    assert_eq!(ctx.token("google"), Some("ya29.a0AfH6SMC..."));
    assert_eq!(
        ctx.authorization.len(),
        1,
        "undeclared providers are not passed on"
    );
    assert!(
        ctx.secrets.is_empty(),
        "undeclared secrets are not passed on"
    );
    assert!(!format!("{ctx:?}").contains("ya29"), "Debug redacts tokens");
}

/// A secret source whose every answer is "throttled".
#[derive(Debug)]
struct Throttling;

impl oxp_lambda::stores::SecretSource for Throttling {
    fn holds(&self, _id: &str) -> bool {
        true
    }

    fn fetch<'a>(&'a self, id: &'a str) -> oxp_lambda::stores::SecretFuture<'a> {
        Box::pin(async move {
            Err(oxp_lambda::stores::SecretError::new(
                id,
                oxp_lambda::stores::SecretErrorKind::Throttled,
                "ThrottlingException",
            ))
        })
    }
}

#[tokio::test]
async fn a_retryable_refusal_of_a_call_without_call_id_answers_a_generated_one() {
    let app = build(
        App::builder(common::example_tools::registry().unwrap())
            .config(test_config())
            .secret_source(Arc::new(Throttling)),
    );
    let body = json!({"request": {"tool_id": "SMS.Send", "input": {"to": "1", "message": "m"}}});
    let reply = call(&app, body).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let result = &reply.json["result"];
    assert_eq!(result["success"], false);
    assert_eq!(result["error"]["can_retry"], true);
    // "If an ID is not provided by the client, the server will generate one."
    let call_id = result["call_id"].as_str().unwrap();
    assert!(uuid::Uuid::parse_str(call_id).is_ok(), "{call_id:?}");
}
