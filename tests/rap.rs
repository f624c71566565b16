//! The async tool invocation protocol (RAP), sentence by sentence of
//! `async-tool-invocation.txt` and its notes, against a callback receiver on 127.0.0.1:
//! discovery, the acknowledgement and the result, validation, threads. Delivery is in
//! `rap_delivery.rs`, the protections in `rap_security.rs`, the call path RAP shares with OXP
//! in `rap_one_path.rs`, the rig in `common/rap.rs`.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::rap::*;
use common::receiver::Receiver;
use common::*;
use oxp_lambda::config::AuthConfig;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::Duration;

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
    rig.accept(body).await;
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
    rig.accept(body).await;
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
    rig.accept(add(&receiver.url)).await;
    let result = receiver.result().await;
    assert!(result.get("call_id").is_none(), "{result}");
    assert_eq!(result["id"], "call_abc123");
}

#[tokio::test]
async fn structured_output_goes_in_text_as_json() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    rig.accept(invocation(&receiver.url, "Test_Echo", json!({})))
        .await;
    let result = receiver.result().await;
    let output: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(output["group_id"], "thread_xyz");
}

#[tokio::test]
async fn thread_ancestors_group_id_and_user_id_reach_the_tool_context() {
    let rig = Rig::new().await;
    let receiver = Receiver::ok().await;
    rig.accept(invocation(&receiver.url, "Test_Echo", json!({})))
        .await;
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
    rig.accept(invocation(&receiver.url, "Test_Fail", json!({})))
        .await;
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
    rig.accept(invocation(&receiver.url, "Test_Panic", json!({})))
        .await;
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
    rig.accept(invocation(
        &receiver.url,
        "SMS_Send",
        json!({"to": "+15550100", "message": "hi"}),
    ))
    .await;
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
    rig.accept(invocation(&receiver.url, "Nope_Tool", json!({})))
        .await;
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
        rig.accept(invocation(&receiver.url, "Test_Count", arguments))
            .await;
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
        rig.accept(body).await;
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
    let reply = rig.invoke(add(&receiver.url)).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json["error"]["kind"], "unauthenticated");
    assert_eq!(reply.headers["www-authenticate"], "Bearer");
    rig.settle().await;
    assert!(receiver.hits().is_empty());
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
        rig.accept(body).await;
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
