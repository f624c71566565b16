//! The async tool invocation protocol (RAP), sentence by sentence of
//! `async-tool-invocation.txt` and its notes, against a callback receiver on 127.0.0.1.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::receiver::Receiver;
use common::*;
use oxp_lambda::config::{AuthConfig, RapConfig, RetryPolicy};
use oxp_lambda::protocols::Rap;
use oxp_lambda::{Config, RapThread, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Test tools besides the examples; `gate` holds `Test.Wait` until a permit is added, and
/// `waiting` counts the runs of it waiting at the gate.
#[derive(Clone)]
struct Tools {
    gate: Arc<Semaphore>,
    waiting: Arc<AtomicUsize>,
    runs: Arc<AtomicUsize>,
}

impl Default for Tools {
    fn default() -> Self {
        Self {
            gate: Arc::new(Semaphore::new(0)),
            waiting: Arc::default(),
            runs: Arc::default(),
        }
    }
}

impl Tools {
    fn registry(&self) -> Registry {
        let (gate, waiting) = (self.gate.clone(), self.waiting.clone());
        let runs = self.runs.clone();
        let object = || Some(json!({"type": "object"}));
        Registry::builder()
            .tools(common::example_tools::tools())
            .tool(
                Tool::builder("Test.Wait", "1.0.0")
                    .description("Waits for the test to let it finish.")
                    .raw_handler(json!({"type": "object"}), object(), move |_, _| {
                        let (gate, waiting) = (gate.clone(), waiting.clone());
                        async move {
                            waiting.fetch_add(1, Ordering::SeqCst);
                            gate.acquire().await.unwrap().forget();
                            waiting.fetch_sub(1, Ordering::SeqCst);
                            Ok(json!({"released": true}))
                        }
                    }),
            )
            .tool(
                Tool::builder("Test.Echo", "1.0.0")
                    .description("Answers what it was told about the call.")
                    .raw_handler(json!({"type": "object"}), object(), |_, ctx: ToolContext| async move {
                        let thread = ctx.extension::<RapThread>().cloned();
                        Ok(json!({
                            "call_id": ctx.call_id,
                            "group_id": thread.as_ref().map(|t| t.group_id.clone()),
                            "thread_ancestors": thread.map(|t| t.thread_ancestors).unwrap_or_default(),
                            "user_id": ctx.user_id,
                        }))
                    }),
            )
            .tool(
                Tool::builder("Test.Count", "1.0.0")
                    .description("Counts its runs.")
                    .raw_handler(
                        json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 10}}, "required": ["n"]}),
                        object(),
                        move |_, _| {
                            runs.fetch_add(1, Ordering::SeqCst);
                            async { Ok(json!({})) }
                        },
                    ),
            )
            .tool(
                Tool::builder("Test.Big", "1.0.0")
                    .description("Answers 400 kB: two parts of a kept result.")
                    .raw_handler(json!({"type": "object"}), object(), |_, _| async {
                        Ok(json!({"b": "b".repeat(400_000)}))
                    }),
            )
            .tool(
                Tool::builder("Test.Fail", "1.0.0")
                    .description("Fails.")
                    .raw_handler(json!({"type": "object"}), object(), |_, _| async {
                        Err(ToolError::new("The mailbox is full")
                            .developer_message("INTERNAL-DETAIL /srv/mail/quota.db")
                            .retry_after(Duration::from_secs(30))
                            .additional_prompt_content("Ask the user to delete old mail."))
                    }),
            )
            .tool(
                Tool::builder("Test.Panic", "1.0.0")
                    .description("Panics.")
                    .raw_handler(json!({"type": "object"}), object(), |_, _| async {
                        panic!("PANIC-DETAIL password=hunter2")
                    }),
            )
            .tool(
                Tool::builder("Versioned.Tool", "1.0.0")
                    .description("v1")
                    .raw_handler(json!({"type": "object"}), None, |_, _| async { Ok(Value::Null) }),
            )
            .tool(
                Tool::builder("Versioned.Tool", "2.0.0")
                    .description("v2")
                    .raw_handler(json!({"type": "object"}), None, |_, _| async { Ok(Value::Null) }),
            )
            .build()
            .unwrap()
    }
}

struct Rig {
    app: App,
    tools: Tools,
    dead_letter_file: PathBuf,
}

impl Rig {
    async fn new() -> Self {
        Self::with(|_| {}).await
    }

    async fn with(edit: impl FnOnce(&mut Config)) -> Self {
        Self::build(edit, |_| {}).await
    }

    async fn with_rap(edit: impl FnOnce(&mut RapConfig) + Send + 'static) -> Self {
        Self::build(|_| {}, edit).await
    }

    /// The server's configuration edited by `edit`, RAP's settings by `rap`.
    async fn build(
        edit: impl FnOnce(&mut Config),
        rap: impl FnOnce(&mut RapConfig) + Send + 'static,
    ) -> Self {
        let dead_letter_file =
            std::env::temp_dir().join(format!("oxp-dead-{}.jsonl", uuid::Uuid::new_v4()));
        let mut config = Config::default();
        edit(&mut config);
        let file = dead_letter_file.clone();
        let tools = Tools::default();
        let registry = tools.registry();
        let builder = App::builder(registry)
            .config(config)
            .configure::<Rap>(move |r| {
                r.dead_letter_file = file;
                r.retry = RetryPolicy {
                    max_attempts: 4,
                    base: Duration::from_millis(20),
                    max_delay: Duration::from_secs(3),
                    total: Duration::from_secs(20),
                    attempt_timeout: Duration::from_secs(2),
                };
                rap(r);
            });
        Self {
            app: build(builder),
            tools,
            dead_letter_file,
        }
    }

    async fn invoke(&self, body: Value) -> Reply {
        post(&self.app, "/invoke", body.to_string()).await
    }

    /// Waits for every accepted invocation to finish (delivered or dead-lettered).
    async fn settle(&self) {
        assert_eq!(self.app.drain(Duration::from_secs(30)).await, 0);
    }

    fn dead_letters(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.dead_letter_file)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.dead_letter_file);
    }
}

fn invocation(callback_url: &str, operation: &str, arguments: Value) -> Value {
    json!({
        "operation": operation,
        "arguments": arguments,
        "id": "call_abc123",
        "call_id": null,
        "callback_url": callback_url,
        "group_id": "thread_xyz",
        "thread_ancestors": ["thread_root", "thread_parent"],
        "user_id": "user_42"
    })
}

/// `body` as a new invocation: its own `id` (a repeated `id` is the same invocation, which
/// runs once).
fn with_id(mut body: Value, id: &str) -> Value {
    body["id"] = json!(id);
    body
}

/// `Calculator_Add` of 1 and 2, answered to `callback_url`.
fn add(callback_url: &str) -> Value {
    invocation(callback_url, "Calculator_Add", json!({"a": 1, "b": 2}))
}

fn accepted(reply: &Reply) {
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.json, json!({"status": "accepted"}));
}

/// The error object a failed call's `text` carries.
fn error_of(result: &Value) -> Value {
    assert_eq!(result["type"], "tool_result");
    // The published convention: `Error: <message>`, then the detail as JSON on the next line.
    let text = result["text"].as_str().unwrap();
    let (sentence, detail) = text
        .split_once('\n')
        .unwrap_or_else(|| panic!("no detail line: {result}"));
    assert!(sentence.starts_with("Error: "), "{result}");
    let detail: Value = serde_json::from_str(detail)
        .unwrap_or_else(|e| panic!("the detail is not JSON ({e}): {result}"));
    assert!(sentence.contains(detail["error"]["message"].as_str().unwrap()));
    detail["error"].clone()
}

// ---- Discovery ------------------------------------------------------------------------------

#[tokio::test]
async fn discovery_serves_the_latest_version_of_each_tool_under_its_listing_name() {
    // Authentication is off: a Host other than a loopback name must be allowed.
    let rig = Rig::with(|c| c.allowed_hosts = vec!["tools.example".into()]).await;
    let request = Request::get("/.well-known/rap-toolset")
        .header("host", "tools.example")
        .body(Body::empty())
        .unwrap();
    let reply = send(&rig.app, request).await;
    assert_eq!(reply.status, 200);
    let toolset = &reply.json;
    assert_eq!(toolset["name"], "oxp-lambda");
    assert_eq!(toolset["endpoint"], "http://tools.example/invoke");
    assert!(!toolset["version"].as_str().unwrap().is_empty());
    let tools = toolset["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Calculator_Add") && names.contains(&"Versioned_Tool"));
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        assert!(tool["description"].is_string());
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
    }
    let versioned = tools
        .iter()
        .find(|t| t["name"] == "Versioned_Tool")
        .unwrap();
    assert_eq!(versioned["description"], "v2");
    assert_eq!(
        names.iter().filter(|n| **n == "Versioned_Tool").count(),
        1,
        "one version per tool"
    );
}

#[tokio::test]
async fn a_deployer_pins_a_version_with_oxp_rap_tools() {
    let rig = Rig::with_rap(|r| r.pins = vec!["Versioned.Tool@1.0.0".into()]).await;
    let reply = get(&rig.app, "/.well-known/rap-toolset").await;
    let tools = reply.json["tools"].as_array().unwrap();
    let versioned = tools
        .iter()
        .find(|t| t["name"] == "Versioned_Tool")
        .unwrap();
    assert_eq!(versioned["description"], "v1");
}

#[tokio::test]
async fn a_stale_toolset_version_is_answered_409_and_the_current_one_is_accepted() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    let version = get(&rig.app, "/.well-known/rap-toolset").await.json["version"].clone();
    let mut body = add(&receiver.url);
    body["toolset_version"] = json!("0000stale");
    let reply = rig.invoke(body.clone()).await;
    assert_eq!(reply.status, 409);
    assert_eq!(reply.json["error"]["kind"], "stale_toolset");
    body["toolset_version"] = version;
    accepted(&rig.invoke(body).await);
    receiver.wait_for(1).await;
}

// ---- Response and processing ----------------------------------------------------------------

#[tokio::test]
async fn the_tool_returns_200_at_once_and_does_not_block_on_processing() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    // Test.Wait cannot finish until the test adds a permit: the 200 must come first.
    let reply = tokio::time::timeout(
        Duration::from_secs(10),
        rig.invoke(invocation(&receiver.url, "Test_Wait", json!({}))),
    )
    .await
    .expect("the acknowledgement does not wait for the tool");
    accepted(&reply);
    assert!(
        receiver.hits().is_empty(),
        "nothing delivered before the tool finished"
    );
    rig.tools.gate.add_permits(1);
    let result = receiver.result().await;
    assert_eq!(result["text"], r#"{"released":true}"#);
}

#[tokio::test]
async fn the_result_is_a_tool_result_posted_as_json_with_the_ids_of_the_invocation() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    let mut body = add(&receiver.url);
    body["call_id"] = json!("model_call_7");
    accepted(&rig.invoke(body).await);
    let hit = receiver.wait_for(1).await.remove(0);
    assert_eq!(hit.content_type, "application/json");
    assert_eq!(
        hit.body,
        json!({
            "type": "tool_result",
            "group_id": "thread_xyz",
            "id": "call_abc123",
            "call_id": "model_call_7",
            "text": "3"
        })
    );
}

#[tokio::test]
async fn call_id_is_echoed_only_when_the_invocation_had_one() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    accepted(
        &rig.invoke(invocation(
            &receiver.url,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await,
    );
    let result = receiver.result().await;
    assert!(result.get("call_id").is_none(), "{result}");
    assert_eq!(result["id"], "call_abc123");
}

#[tokio::test]
async fn structured_output_goes_in_text_as_json() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    accepted(
        &rig.invoke(invocation(&receiver.url, "Test_Echo", json!({})))
            .await,
    );
    let result = receiver.result().await;
    let output: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(output["group_id"], "thread_xyz");
}

#[tokio::test]
async fn thread_ancestors_group_id_and_user_id_reach_the_tool_context() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    accepted(
        &rig.invoke(invocation(&receiver.url, "Test_Echo", json!({})))
            .await,
    );
    let result = receiver.result().await;
    let seen: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        seen,
        json!({
            "call_id": "call_abc123",
            "group_id": "thread_xyz",
            "thread_ancestors": ["thread_root", "thread_parent"],
            "user_id": "user_42"
        })
    );
}

#[tokio::test]
async fn a_tool_error_is_still_sent_as_a_tool_result_with_the_oxp_error_fields() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    accepted(
        &rig.invoke(invocation(&receiver.url, "Test_Fail", json!({})))
            .await,
    );
    let result = receiver.result().await;
    assert_eq!(
        error_of(&result),
        json!({
            "kind": "tool_error",
            "message": "The mailbox is full",
            "can_retry": true,
            "retry_after_ms": 30000,
            "additional_prompt_content": "Ask the user to delete old mail."
        })
    );
    assert!(
        !result.to_string().contains("INTERNAL-DETAIL"),
        "developer detail stays out of results"
    );
}

#[tokio::test]
async fn a_panicking_tool_reports_an_error_without_the_panic_text() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    accepted(
        &rig.invoke(invocation(&receiver.url, "Test_Panic", json!({})))
            .await,
    );
    let result = receiver.result().await;
    let error = error_of(&result);
    assert_eq!(error["kind"], "internal");
    assert_eq!(error["message"], "The tool failed unexpectedly");
    let text = result.to_string();
    assert!(
        !text.contains("PANIC-DETAIL") && !text.contains("hunter2"),
        "{text}"
    );
}

#[tokio::test]
async fn a_missing_requirement_is_reported_by_name_only() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    accepted(
        &rig.invoke(invocation(
            &receiver.url,
            "SMS_Send",
            json!({"to": "+15550100", "message": "hi"}),
        ))
        .await,
    );
    let error = error_of(&receiver.result().await);
    assert_eq!(error["kind"], "missing_requirement");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("TWILIO_API_KEY")
    );
}

// ---- Validation -----------------------------------------------------------------------------

#[tokio::test]
async fn an_unknown_operation_is_acknowledged_then_reported_as_an_error() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    accepted(
        &rig.invoke(invocation(&receiver.url, "Nope_Tool", json!({})))
            .await,
    );
    let error = error_of(&receiver.result().await);
    assert_eq!(error["kind"], "unknown_operation");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("Nope_Tool") && message.contains("Calculator_Add"),
        "{message}"
    );
    assert_eq!(error["can_retry"], false);
}

#[tokio::test]
async fn invalid_arguments_are_validated_before_the_tool_runs_and_reported() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    for arguments in [json!({}), json!({"n": "seven"}), json!({"n": 11})] {
        accepted(
            &rig.invoke(invocation(&receiver.url, "Test_Count", arguments))
                .await,
        );
    }
    let hits = receiver.wait_for(3).await;
    for hit in hits {
        let error = error_of(&hit.body);
        assert_eq!(error["kind"], "invalid_arguments");
        let errors = error["parameter_errors"].as_object().unwrap();
        assert!(errors.contains_key("n"), "{error}");
    }
    assert_eq!(
        rig.tools.runs.load(Ordering::SeqCst),
        0,
        "the tool never ran"
    );
}

#[tokio::test]
async fn malformed_invocations_with_a_usable_callback_are_acknowledged_then_reported() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    let base = add(&receiver.url);
    // The field, and its new value (`None`: the field is left out).
    let cases = [
        ("operation", None),
        ("operation", Some(json!(42))),
        ("arguments", None),
        ("arguments", Some(json!("a=1"))),
        ("thread_ancestors", Some(json!([1, 2]))),
        ("user_id", Some(json!({"id": 1}))),
        ("call_id", Some(json!(7))),
    ];
    for (i, (field, value)) in cases.iter().enumerate() {
        let mut body = base.clone();
        match value {
            Some(value) => body[*field] = value.clone(),
            None => drop(body.as_object_mut().unwrap().remove(*field)),
        }
        accepted(&rig.invoke(body).await);
        let result = receiver.wait_for(i + 1).await.remove(i).body;
        let error = error_of(&result);
        assert_eq!(error["kind"], "malformed_invocation", "{field}");
        assert!(
            error["message"].as_str().unwrap().contains(field),
            "{field}: {error}"
        );
        assert_eq!(result["group_id"], "thread_xyz");
    }
    assert_eq!(receiver.wait_for(cases.len()).await.len(), cases.len());
}

#[tokio::test]
async fn requests_that_cannot_be_accepted_get_a_non_200_json_error() {
    let rig = Rig::with(|c| c.max_body_bytes = 4096).await;
    let receiver = Receiver::ok().await;
    let good = add(&receiver.url);
    let without = |field: &str| {
        let mut b = good.clone();
        b.as_object_mut().unwrap().remove(field);
        b.to_string()
    };
    let mut numeric_id = good.clone();
    numeric_id["id"] = json!(7);
    let huge = invocation(
        &receiver.url,
        "Calculator_Add",
        json!({"a": "x".repeat(5000)}),
    );
    let deep = format!("{}{}", "[".repeat(1500), "]".repeat(1500));
    for (body, status, kind) in [
        ("{not json".to_owned(), 400, "malformed_invocation"),
        ("[1, 2]".to_owned(), 400, "malformed_invocation"),
        (deep, 400, "malformed_invocation"),
        (without("callback_url"), 400, "malformed_invocation"),
        (without("id"), 400, "malformed_invocation"),
        (without("group_id"), 400, "malformed_invocation"),
        (numeric_id.to_string(), 400, "malformed_invocation"),
        (huge.to_string(), 413, "too_large"),
    ] {
        let reply = post(&rig.app, "/invoke", body).await;
        assert_eq!(reply.status, status, "{}", reply.text);
        assert_eq!(reply.json["error"]["kind"], kind, "{}", reply.text);
        assert!(reply.json["error"]["message"].is_string());
    }
    let request = Request::post("/invoke")
        .header("content-type", "text/plain")
        .body(Body::from(good.to_string()))
        .unwrap();
    let reply = send(&rig.app, request).await;
    assert_eq!(reply.status, 415);
    rig.settle().await;
    assert!(receiver.hits().is_empty());
}

#[tokio::test]
async fn failed_authentication_is_refused_with_a_json_error() {
    let rig = Rig::with(|c| {
        c.auth = AuthConfig::ApiGateway {
            bind_user_id: false,
        }
    })
    .await;
    let receiver = Receiver::ok().await;
    let reply = rig
        .invoke(invocation(
            &receiver.url,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json["error"]["kind"], "unauthenticated");
    assert_eq!(reply.headers["www-authenticate"], "Bearer");
    rig.settle().await;
    assert!(receiver.hits().is_empty());
}

// ---- Delivery -------------------------------------------------------------------------------

#[tokio::test]
async fn a_receiver_failing_twice_then_succeeding_gets_the_result_on_the_third_attempt() {
    let rig = Rig::new().await;
    let receiver = Receiver::start(&[(503, None), (500, None)], 200).await;
    accepted(
        &rig.invoke(invocation(
            &receiver.url,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await,
    );
    rig.settle().await;
    let hits = receiver.hits();
    assert_eq!(hits.len(), 3);
    assert!(
        hits.iter().all(|h| h.body == hits[0].body),
        "the same message each time"
    );
    assert!(
        hits[1].at - hits[0].at >= Duration::from_millis(10),
        "backoff before retrying"
    );
    assert!(rig.dead_letters().is_empty());
}

#[tokio::test]
async fn network_errors_are_retried() {
    let rig = Rig::new().await;
    // A port nothing listens on: every attempt is a connection error.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/callback", closed.local_addr().unwrap());
    drop(closed);
    accepted(
        &rig.invoke(invocation(&url, "Calculator_Add", json!({"a": 1, "b": 2})))
            .await,
    );
    rig.settle().await;
    let letters = rig.dead_letters();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0]["attempts"], 4);
    assert!(
        letters[0]["reason"]
            .as_str()
            .unwrap()
            .contains("unreachable")
    );
}

#[tokio::test]
async fn a_receiver_that_never_succeeds_leaves_a_dead_letter_with_the_reason() {
    let rig = Rig::new().await;
    let receiver = Receiver::start(&[], 503).await;
    accepted(
        &rig.invoke(invocation(
            &receiver.url,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await,
    );
    rig.settle().await;
    let hits = receiver.hits();
    assert_eq!(hits.len(), 4, "bounded in attempts");
    let letters = rig.dead_letters();
    assert_eq!(letters.len(), 1);
    let letter = &letters[0];
    let reason = letter["reason"].as_str().unwrap();
    assert!(
        reason.contains("503") && reason.contains("4 attempts"),
        "{reason}"
    );
    assert_eq!(letter["attempts"], 4);
    assert_eq!(letter["callback_url"], receiver.url.as_str());
    assert_eq!(letter["operation"], "Calculator_Add");
    assert_eq!(
        letter["message"], hits[0].body,
        "the undelivered message is kept whole"
    );
}

#[tokio::test]
async fn delivery_is_bounded_in_total_time() {
    let rig = Rig::with_rap(|r| {
        r.retry.max_attempts = 1000;
        r.retry.total = Duration::from_millis(300);
    })
    .await;
    let receiver = Receiver::start(&[], 500).await;
    accepted(
        &rig.invoke(invocation(
            &receiver.url,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await,
    );
    rig.settle().await;
    let letters = rig.dead_letters();
    assert!(
        letters[0]["reason"]
            .as_str()
            .unwrap()
            .contains("time ran out")
    );
    assert!(receiver.hits().len() < 1000);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let rig = Rig::new().await;
    let receiver = Receiver::start(&[], 400).await;
    accepted(
        &rig.invoke(invocation(
            &receiver.url,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await,
    );
    rig.settle().await;
    assert_eq!(receiver.hits().len(), 1);
    let letters = rig.dead_letters();
    assert!(
        letters[0]["reason"]
            .as_str()
            .unwrap()
            .contains("not retried")
    );
}

#[tokio::test]
async fn too_many_requests_is_retried_after_the_retry_after_delay() {
    let rig = Rig::new().await;
    let receiver = Receiver::start(&[(429, Some("1"))], 200).await;
    accepted(
        &rig.invoke(invocation(
            &receiver.url,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await,
    );
    rig.settle().await;
    let hits = receiver.hits();
    assert_eq!(hits.len(), 2);
    assert!(
        hits[1].at - hits[0].at >= Duration::from_millis(950),
        "Retry-After: 1 is honoured"
    );
    assert!(rig.dead_letters().is_empty());
}

#[tokio::test]
async fn at_shutdown_running_tools_are_cancelled_and_their_results_delivered() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    // Demo.Sleep stops at its signal and says so; Test.Wait ignores it and is stopped after
    // the grace period: both callers hear, nothing is dead-lettered.
    accepted(
        &rig.invoke(with_id(
            invocation(&receiver.url, "Demo_Sleep", json!({"ms": 60000})),
            "sleep",
        ))
        .await,
    );
    accepted(
        &rig.invoke(with_id(
            invocation(&receiver.url, "Test_Wait", json!({})),
            "wait",
        ))
        .await,
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(rig.app.drain(Duration::from_millis(100)).await, 0);
    let mut results = receiver.of_kind("tool_result");
    results.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let slept: Value = serde_json::from_str(results[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(slept["cancelled"], true, "{}", results[0]);
    assert_eq!(error_of(&results[1])["kind"], "cancelled");
    assert!(rig.dead_letters().is_empty());
}

#[tokio::test]
async fn invocations_still_pending_at_shutdown_are_dead_lettered_with_their_real_outcome_not_dropped()
 {
    // A store that ends with the process (in memory): what is left at shutdown is
    // dead-lettered, with the outcome its run had, never another one.
    let rig = Rig::new().await;
    // A callback that accepts the connection and never answers: the result is still being
    // delivered when the shutdown's grace runs out.
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let callback = format!("http://{}/callback", hanging.local_addr().unwrap());
    // One that finished (its answer, 3, is being delivered) and one whose tool ignores the
    // shutdown's cancellation (stopped after the grace: its outcome is `cancelled`).
    accepted(
        &rig.invoke(with_id(
            invocation(&callback, "Calculator_Add", json!({"a": 1, "b": 2})),
            "done",
        ))
        .await,
    );
    accepted(
        &rig.invoke(with_id(
            invocation(&callback, "Test_Wait", json!({})),
            "running",
        ))
        .await,
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rig.app.drain(Duration::from_millis(100)).await, 2);
    let mut letters = rig.dead_letters();
    letters.sort_by(|a, b| {
        a["message"]["id"]
            .as_str()
            .cmp(&b["message"]["id"].as_str())
    });
    assert_eq!(letters.len(), 2);
    assert!(
        letters
            .iter()
            .all(|l| l["reason"].as_str().unwrap().contains("shut down"))
    );
    assert_eq!(letters[0]["message"]["id"], "done");
    assert_eq!(letters[0]["message"]["text"], "3", "its real result");
    assert_eq!(error_of(&letters[1]["message"])["kind"], "cancelled");
}

// ---- Security -------------------------------------------------------------------------------

#[tokio::test]
async fn in_lambda_mode_callbacks_must_be_https_to_a_public_address() {
    let rig = Rig::with_rap(|r| {
        r.callbacks.lambda = true;
        r.callbacks.allow_loopback = false;
    })
    .await;
    let receiver = Receiver::ok().await;
    for url in [
        receiver.url.as_str(),
        "https://127.0.0.1/callback",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.1.2.3/callback",
        "https://[::1]/callback",
        "http://agent.example.com/callback",
    ] {
        let reply = rig
            .invoke(invocation(url, "Calculator_Add", json!({"a": 1, "b": 2})))
            .await;
        assert_eq!(reply.status, 400, "{url}: {}", reply.text);
        assert_eq!(reply.json["error"]["kind"], "callback_refused", "{url}");
    }
    rig.settle().await;
    assert!(receiver.hits().is_empty());
}

#[tokio::test]
async fn a_host_name_that_resolves_to_a_refused_address_is_refused_when_connecting() {
    // Lambda rules with plain http allowed, so only the resolved-address check can refuse.
    let rig = Rig::with_rap(|r| {
        r.callbacks.lambda = true;
        r.callbacks.allow_http = true;
        r.callbacks.allow_loopback = false;
    })
    .await;
    let receiver = Receiver::ok().await;
    let via_name = receiver.url.replace("127.0.0.1", "localhost");
    accepted(
        &rig.invoke(invocation(
            &via_name,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await,
    );
    rig.settle().await;
    assert!(receiver.hits().is_empty(), "nothing was sent to loopback");
    let letters = rig.dead_letters();
    assert_eq!(letters.len(), 1);
    let reason = letters[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("refused") && reason.contains("loopback"),
        "{reason}"
    );
}

#[tokio::test]
async fn loopback_callbacks_are_allowed_in_lambda_only_when_configured() {
    let rig = Rig::with_rap(|r| {
        r.callbacks.lambda = true;
        r.callbacks.allow_http = true;
        r.callbacks.allow_loopback = true;
    })
    .await;
    let receiver = Receiver::ok().await;
    accepted(
        &rig.invoke(invocation(
            &receiver.url,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await,
    );
    assert_eq!(receiver.result().await["text"], "3");
}

#[tokio::test]
async fn the_callback_host_allow_list_is_enforced() {
    let rig = Rig::with_rap(|r| r.callbacks.allowed_hosts = vec!["agent.example.com".into()]).await;
    let receiver = Receiver::ok().await;
    let reply = rig
        .invoke(invocation(
            &receiver.url,
            "Calculator_Add",
            json!({"a": 1, "b": 2}),
        ))
        .await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("allow-list")
    );
}

#[tokio::test]
async fn invocations_are_rate_limited_per_caller() {
    let rig = Rig::build(
        |c| {
            c.auth = AuthConfig::ApiGateway {
                bind_user_id: false,
            }
        },
        |r| {
            r.rate_limit = Some(oxp_lambda::config::RateLimit {
                invocations: 2,
                per: Duration::from_secs(60),
            })
        },
    )
    .await;
    let receiver = Receiver::ok().await;
    // The third of Alice's invocations is over the limit, whatever user_id it names: refused
    // with 429 before anything is queued, so nothing runs and nothing is delivered for it.
    for (caller, id, user, status) in [
        ("alice", "call_1", "u1", 200),
        ("alice", "call_2", "u2", 200),
        ("alice", "call_3", "u3", 429),
        ("bob", "call_4", "u1", 200),
    ] {
        let mut body = with_id(add(&receiver.url), id);
        body["user_id"] = json!(user);
        assert_eq!(invoke_as(&rig, caller, &body).await, status, "{id}");
        rig.settle().await;
    }
    let hits = receiver.wait_for(3).await;
    let ids: Vec<&str> = hits
        .iter()
        .map(|h| h.body["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["call_1", "call_2", "call_4"],
        "another caller has their own allowance"
    );
    assert!(hits.iter().all(|h| h.body["text"] == "3"));
}

#[tokio::test]
async fn each_caller_holds_at_most_its_share_of_the_pending_invocations() {
    let rig = Rig::build(
        |c| {
            // One caller's share of the work every process shares.
            *c = Config::from_vars(false, [("OXP_WORK_MAX_PER_CALLER", "2")]).unwrap();
            c.auth = AuthConfig::ApiGateway {
                bind_user_id: false,
            };
        },
        |r| r.max_pending = 4,
    )
    .await;
    let receiver = Receiver::ok().await;
    let wait = |id: &str| with_id(invocation(&receiver.url, "Test_Wait", json!({})), id);
    // Alice's tools hang: her third invocation is refused (429, her share is full) while the
    // queue still has room, so Bob's are accepted; only a full queue refuses everyone (503).
    assert_eq!(invoke_as(&rig, "alice", &wait("a1")).await, 200);
    assert_eq!(invoke_as(&rig, "alice", &wait("a2")).await, 200);
    assert_eq!(invoke_as(&rig, "alice", &wait("a3")).await, 429);
    assert_eq!(invoke_as(&rig, "bob", &wait("b1")).await, 200);
    assert_eq!(invoke_as(&rig, "bob", &wait("b2")).await, 200);
    assert_eq!(invoke_as(&rig, "carol", &wait("c1")).await, 503);
    // Once Alice's answer, her share is free again.
    rig.tools.gate.add_permits(4);
    rig.settle().await;
    assert_eq!(receiver.wait_for(4).await.len(), 4);
    assert_eq!(invoke_as(&rig, "alice", &wait("a4")).await, 200);
    rig.tools.gate.add_permits(1);
    rig.settle().await;
    let ids: Vec<String> = receiver
        .wait_for(5)
        .await
        .iter()
        .map(|h| h.body["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(!ids.contains(&"a3".to_owned()), "the refused one never ran");
    assert!(ids.contains(&"a4".to_owned()));
}

#[tokio::test]
async fn a_result_without_room_in_its_callers_share_is_answered_with_a_retryable_busy_error() {
    let rig = Rig::build(
        |c| {
            // Room for one result of two parts per caller.
            *c = Config::from_vars(false, [("OXP_WORK_MAX_BYTES_PER_CALLER", "300000")]).unwrap();
            c.auth = AuthConfig::ApiGateway {
                bind_user_id: false,
            };
        },
        |r| r.retry.attempt_timeout = Duration::from_secs(10),
    )
    .await;
    let (held, receiver) = (Receiver::ok().await, Receiver::ok().await);
    // Long enough for her next and bob's to be answered meanwhile, on a loaded machine too.
    held.hold("tool_result", Duration::from_secs(5));
    let big = |url: &str, id: &str| with_id(invocation(url, "Test_Big", json!({})), id);
    // Alice's first result is kept while its delivery is in flight: her room is full.
    assert_eq!(invoke_as(&rig, "alice", &big(&held.url, "a1")).await, 200);
    held.wait_kind("tool_result", 1).await;
    // Her next is answered with an error she can retry, not kept whole.
    assert_eq!(
        invoke_as(&rig, "alice", &big(&receiver.url, "a2")).await,
        200
    );
    let refused = receiver.result().await;
    assert_eq!(refused["id"], "a2");
    let error = error_of(&refused);
    assert_eq!(error["kind"], "busy");
    assert_eq!(error["can_retry"], true);
    // Bob's room is his own.
    assert_eq!(invoke_as(&rig, "bob", &big(&receiver.url, "b1")).await, 200);
    let bobs = receiver.wait_kind("tool_result", 2).await.remove(1);
    assert_eq!(bobs["id"], "b1");
    assert_eq!(bobs["text"].as_str().unwrap().len(), 400_008);
    // Once her first is delivered, its room is given back: the refused invocation sent again
    // is answered with its result, whole.
    rig.settle().await;
    assert_eq!(
        held.of_kind("tool_result")[0]["text"]
            .as_str()
            .unwrap()
            .len(),
        400_008
    );
    assert_eq!(
        invoke_as(&rig, "alice", &big(&receiver.url, "a2")).await,
        200
    );
    let again = receiver.wait_kind("tool_result", 3).await.remove(2);
    assert_eq!(again["id"], "a2");
    assert_eq!(again["text"].as_str().unwrap().len(), 400_008);
}

#[tokio::test]
async fn without_authentication_the_one_caller_runs_more_jobs_at_once_than_a_callers_share() {
    // Callers do not authenticate: every invocation is the one anonymous caller's, which has
    // no share of the runner's turns (64), as a call without a subject has none of the
    // invoker's slots. Twelve jobs run at once where a caller's share is eight.
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    for n in 0..12 {
        let body = with_id(
            invocation(&receiver.url, "Test_Wait", json!({})),
            &format!("w{n}"),
        );
        assert_eq!(rig.invoke(body).await.status, 200);
    }
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while rig.tools.waiting.load(Ordering::SeqCst) < 12 && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        rig.tools.waiting.load(Ordering::SeqCst),
        12,
        "all twelve run at once"
    );
    rig.tools.gate.add_permits(12);
    rig.settle().await;
    assert_eq!(receiver.wait_for(12).await.len(), 12);
}

#[tokio::test]
async fn one_callers_hung_callbacks_do_not_delay_another_callers_result() {
    let rig = Rig::build(
        |c| {
            c.auth = AuthConfig::ApiGateway {
                bind_user_id: false,
            }
        },
        |r| r.retry.attempt_timeout = Duration::from_secs(30),
    )
    .await;
    // Alice's callback accepts the connection and never answers: each of her 70 results is
    // in flight for the attempt's 30 s.
    let hanging = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung = format!("http://{}/callback", hanging.local_addr().unwrap());
    for n in 0..70 {
        let body = with_id(add(&hung), &format!("a{n}"));
        assert_eq!(invoke_as(&rig, "alice", &body).await, 200);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Bob's result arrives as it would alone: Alice's runs hold her own turns, not his.
    let receiver = Receiver::ok().await;
    let started = std::time::Instant::now();
    assert_eq!(invoke_as(&rig, "bob", &add(&receiver.url)).await, 200);
    assert_eq!(receiver.result().await["text"], "3");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "bob waited {took:?}");
    drop(hanging);
}

#[tokio::test]
async fn an_invocation_over_the_rate_limit_is_a_429_with_retry_after_and_runs_nothing() {
    let rig = Rig::with_rap(|r| {
        r.rate_limit = Some(oxp_lambda::config::RateLimit {
            invocations: 1,
            per: Duration::from_secs(60),
        })
    })
    .await;
    let receiver = Receiver::ok().await;
    let first = rig.invoke(with_id(add(&receiver.url), "r1")).await;
    assert_eq!(first.status, 200);
    let over = rig.invoke(with_id(add(&receiver.url), "r2")).await;
    assert_eq!(over.status, 429, "{}", over.text);
    let wait: u64 = over.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(over.json["error"]["kind"], "rate_limited");
    assert_eq!(over.json["error"]["can_retry"], true);
    rig.settle().await;
    assert_eq!(
        receiver.hits().len(),
        1,
        "the refused invocation was neither run nor delivered"
    );
}

#[tokio::test]
async fn every_invocation_is_audited_with_operation_ids_timestamps_and_outcome_but_no_data() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.subscriber());

    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    accepted(
        &rig.invoke(invocation(
            &receiver.url,
            "Doorbell_Ring",
            json!({"doorbell_id": "ARGUMENT-VALUE"}),
        ))
        .await,
    );
    accepted(
        &rig.invoke(with_id(
            invocation(&receiver.url, "Test_Panic", json!({})),
            "call_panic",
        ))
        .await,
    );
    rig.settle().await;
    let _ = post(&rig.app, "/invoke", "{not json").await;
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let audit: Vec<Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["target"] == "oxp::rap::audit")
        .collect();
    assert_eq!(audit.len(), 3, "one line per invocation: {logs}");
    let ring = &audit
        .iter()
        .find(|l| l["fields"]["operation"] == "Doorbell_Ring")
        .unwrap()["fields"];
    assert_eq!(ring["id"], "call_abc123");
    assert_eq!(ring["group_id"], "thread_xyz");
    assert_eq!(ring["user_id"], "user_42");
    assert_eq!(ring["outcome"], "tool_error");
    assert_eq!(ring["delivery"], "delivered");
    assert!(ring["received_at"].as_str().unwrap().ends_with('Z'));
    assert!(ring["completed_at"].as_str().unwrap().ends_with('Z'));
    assert!(audit.iter().any(|l| l["fields"]["outcome"] == "refused"));
    for line in &audit {
        let text = line.to_string();
        assert!(
            !text.contains("ARGUMENT-VALUE") && !text.contains("hunter2"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn close_thread_takes_the_published_thread_id_and_always_answers_200() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.subscriber());
    let rig = Rig::new().await;
    // The published spec's body, then this adapter's first reading of it.
    for body in [
        json!({"thread_id": "thread_xyz"}),
        json!({"group_id": "thread_abc"}),
    ] {
        let reply = post(&rig.app, "/close_thread", body.to_string()).await;
        assert_eq!(reply.status, 200);
    }
    let logs = captured.text();
    let closed: Vec<Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["fields"]["message"] == "thread closed")
        .map(|l| l["fields"]["thread_id"].clone())
        .collect();
    assert_eq!(closed, [json!("thread_xyz"), json!("thread_abc")], "{logs}");
    // "MUST answer 200 whatever the body": empty, malformed, a forged log line.
    for body in [
        "{}",
        "not json",
        r#"{"thread_id": "a\nlevel=ERROR forged"}"#,
    ] {
        let reply = post(&rig.app, "/close_thread", body).await;
        assert_eq!(reply.status, 200, "{body}");
    }
    assert!(!captured.text().contains("forged"));
}

#[tokio::test]
async fn the_documented_result_examples_are_what_the_server_sends() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    let mut add = invocation(&receiver.url, "Calculator_Add", json!({"a": 20, "b": 22}));
    add["call_id"] = json!("model_7");
    for body in [
        add,
        with_id(
            invocation(
                &receiver.url,
                "Doorbell_Ring",
                json!({"doorbell_id": "nope"}),
            ),
            "call_abc124",
        ),
        with_id(
            invocation(&receiver.url, "Calculator_Add", json!({"a": 1, "b": "x"})),
            "call_abc125",
        ),
    ] {
        accepted(&rig.invoke(body).await);
        rig.settle().await;
    }
    let sent: Vec<Value> = receiver
        .wait_for(3)
        .await
        .into_iter()
        .map(|h| h.body)
        .collect();
    let readme = std::fs::read_to_string("docs/rap.md").unwrap();
    let documented: Vec<Value> = readme
        .lines()
        .filter(|l| l.starts_with(r#"{"type":"tool_result""#))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(documented.len(), 3);
    for example in &documented {
        // Compare the error objects, not the text bytes, so key order does not matter.
        let same = |s: &Value| {
            let decode = |v: &Value| {
                let mut v = v.clone();
                let text = v["text"].as_str().unwrap().to_owned();
                v["text"] = rap_error(&text).unwrap_or(Value::String(text));
                v
            };
            decode(s) == decode(example)
        };
        assert!(
            sent.iter().any(same),
            "docs/rap.md example not sent: {example}\nsent: {sent:?}"
        );
    }
}

/// `/invoke` through API Gateway with a JWT authorizer that verified `sub`.
async fn invoke_as(rig: &Rig, sub: &str, body: &Value) -> u16 {
    use lambda_http::request::LambdaRequest;
    use lambda_http::{Adapter, Context, LambdaEvent, Service};
    let mut event: Value = serde_json::from_str(
        &std::fs::read_to_string("events/apigw-http-rap-invoke.json").unwrap(),
    )
    .unwrap();
    event["body"] = Value::String(body.to_string());
    event["requestContext"]["authorizer"] =
        json!({"jwt": {"claims": {"sub": sub}, "scopes": null}});
    let request: LambdaRequest = serde_json::from_value(event).unwrap();
    let response = Adapter::from(rig.app.clone())
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .unwrap();
    serde_json::to_value(response).unwrap()["statusCode"]
        .as_u64()
        .unwrap() as u16
}

#[tokio::test]
async fn with_user_binding_a_caller_can_only_act_for_itself() {
    let rig = Rig::with(|c| c.auth = AuthConfig::ApiGateway { bind_user_id: true }).await;
    let receiver = Receiver::ok().await;
    let mut body = invocation(&receiver.url, "Test_Echo", json!({}));
    body["user_id"] = json!("mallory");
    assert_eq!(invoke_as(&rig, "alice", &body).await, 200);
    let error = error_of(&receiver.result().await);
    assert_eq!(error["kind"], "unauthorized");
    body.as_object_mut().unwrap().remove("user_id");
    assert_eq!(invoke_as(&rig, "alice", &body).await, 200);
    let hits = receiver.wait_for(2).await;
    let seen: Value = serde_json::from_str(hits[1].body["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["user_id"], "alice", "the user defaults to the caller");
}

// ---- One call path: RAP and OXP share the invoker --------------------------------------------

#[tokio::test]
async fn the_same_invocation_sent_twice_runs_its_tool_once_and_is_answered_once() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    let body = invocation(&receiver.url, "Test_Count", json!({"n": 1}));
    for _ in 0..2 {
        accepted(&rig.invoke(body.clone()).await);
        rig.settle().await;
    }
    assert_eq!(
        rig.tools.runs.load(Ordering::SeqCst),
        1,
        "the tool ran once"
    );
    receiver.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        receiver.hits().len(),
        1,
        "the delivered result is not delivered again"
    );
    // Another invocation id is another call.
    accepted(&rig.invoke(with_id(body, "call_other")).await);
    rig.settle().await;
    assert_eq!(rig.tools.runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_same_id_in_another_thread_is_another_invocation_run_and_answered_as_its_own() {
    // Runtimes number their calls per thread (`call_1`, `call_2`, ...): the same id in another
    // thread was taken for the first thread's call, a replay of its result when the arguments
    // were the same (the tool never ran: an SMS never sent) and `id_reused` when not.
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    let in_thread = |group: &str, n: u64| {
        let mut body = invocation(&receiver.url, "Test_Count", json!({"n": n}));
        body["id"] = json!("call_1");
        body["group_id"] = json!(group);
        body
    };
    for (group, n) in [("thread_a", 1), ("thread_b", 1), ("thread_c", 2)] {
        accepted(&rig.invoke(in_thread(group, n)).await);
        rig.settle().await;
    }
    assert_eq!(
        rig.tools.runs.load(Ordering::SeqCst),
        3,
        "each thread's call ran"
    );
    let results: Vec<Value> = receiver
        .wait_for(3)
        .await
        .into_iter()
        .map(|h| h.body)
        .collect();
    for group in ["thread_a", "thread_b", "thread_c"] {
        let result = results
            .iter()
            .find(|r| r["group_id"] == group)
            .unwrap_or_else(|| panic!("no result for {group}: {results:?}"));
        assert_eq!(result["type"], "tool_result", "{result}");
        assert!(
            !result["text"].as_str().unwrap().starts_with("Error"),
            "{result}"
        );
    }
    // Within its thread the id is still one invocation: sent again, it runs nothing.
    accepted(&rig.invoke(in_thread("thread_b", 1)).await);
    rig.settle().await;
    assert_eq!(rig.tools.runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_repeat_of_a_dead_lettered_invocation_tries_the_callback_again() {
    let rig = Rig::new().await;
    let refusing = Receiver::start(&[], 400).await;
    let body = invocation(&refusing.url, "Test_Count", json!({"n": 1}));
    accepted(&rig.invoke(body.clone()).await);
    rig.settle().await;
    assert_eq!(rig.dead_letters().len(), 1, "not delivered: dead-lettered");
    // The runtime sends it again: the stored result is offered to the callback again.
    accepted(&rig.invoke(body).await);
    rig.settle().await;
    assert_eq!(refusing.hits().len(), 2);
    assert_eq!(
        rig.tools.runs.load(Ordering::SeqCst),
        1,
        "the tool ran once"
    );
}

#[tokio::test]
async fn one_concurrency_limit_holds_for_every_protocol_together() {
    let rig = Rig::build(
        |c| {
            c.max_concurrent_calls = 1;
            c.tool_timeout = Some(Duration::from_millis(300));
        },
        |r| r.tool_timeout = Some(Duration::from_secs(20)),
    )
    .await;
    let receiver = Receiver::ok().await;
    // An async run takes the only slot and holds it.
    accepted(
        &rig.invoke(invocation(&receiver.url, "Test_Wait", json!({})))
            .await,
    );
    let add = json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}});
    let mut busy = None;
    for _ in 0..50 {
        let reply = call(&rig.app, add.clone()).await;
        if reply.json["result"]["success"] == false {
            busy = Some(reply);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let busy = busy.expect("an OXP call finds the async run holding the slot");
    assert_eq!(busy.status, 200);
    assert_eq!(busy.json["result"]["error"]["can_retry"], true);
    assert_eq!(busy.json["result"]["error"]["retry_after_ms"], 1000);
    // Once the async run finishes, the slot is free again.
    rig.tools.gate.add_permits(1);
    rig.settle().await;
    let reply = call(&rig.app, add).await;
    assert_eq!(reply.json["result"]["value"], 3);
}

#[tokio::test]
async fn every_protocol_writes_the_same_call_log_line_naming_itself() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.subscriber());
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    accepted(&rig.invoke(add(&receiver.url)).await);
    rig.settle().await;
    let reply = call(
        &rig.app,
        json!({"request": {"tool_id": "Calculator_Add", "call_id": "c-1", "input": {"a": 1, "b": 2}}}),
    )
    .await;
    assert_eq!(reply.status, 200);
    let logs = captured.text();
    let lines: Vec<Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["target"] == "oxp::call")
        .map(|l| l["fields"].clone())
        .collect();
    let of = |protocol: &str| {
        lines
            .iter()
            .find(|l| l["protocol"] == protocol)
            .unwrap_or_else(|| panic!("no {protocol} call line in {logs}"))
            .clone()
    };
    let (oxp, rap) = (of("oxp"), of("rap"));
    let keys = |l: &Value| {
        l.as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(keys(&oxp), keys(&rap), "the same fields: {oxp} / {rap}");
    for line in [&oxp, &rap] {
        assert_eq!(line["tool_id"], "Calculator.Add@1.0.0");
        assert_eq!(line["outcome"], "success");
        assert!(line["duration_ms"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(oxp["call_id"], "c-1");
    assert_eq!(
        rap["call_id"], "call_abc123",
        "the invocation id is the call id"
    );
}
