//! Bad input never crashes or hangs the server, never answers 500, and always gets a clear JSON
//! error with the right status.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use oxp_lambda::Config;
use serde_json::json;
use std::time::Duration;

/// Sends `body` to `/tools/call` and checks the status and that the message is set.
async fn rejected(app: &App, body: impl Into<Body>, status: u16) -> Reply {
    let reply = tokio::time::timeout(Duration::from_secs(10), post(app, "/tools/call", body))
        .await
        .expect("no hang");
    assert_eq!(reply.status, status, "{}", reply.text);
    assert!(!reply.json["message"].as_str().unwrap().is_empty());
    assert!(!reply.text.contains("panicked"), "{}", reply.text);
    reply
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_400() {
    let reply = rejected(&example_app(), "tool_id=Calculator.Add", 400).await;
    assert_eq!(reply.json["message"], "The request body is not valid JSON");
}

#[tokio::test]
async fn json_that_is_not_an_object_is_a_400() {
    let app = example_app();
    for body in ["[]", "42", "\"text\"", "null", "true"] {
        let reply = rejected(&app, body, 400).await;
        assert_eq!(
            reply.json["message"], "The request body is not a valid tool call",
            "{body}"
        );
    }
}

#[tokio::test]
async fn an_empty_body_is_a_400() {
    let app = example_app();
    for body in ["", "  \n"] {
        let reply = rejected(&app, body, 400).await;
        assert_eq!(reply.json["message"], "The request body is empty");
    }
}

#[tokio::test]
async fn a_missing_request_is_a_400() {
    let reply = rejected(&example_app(), r#"{"$schema":"urn:oxp:1.0"}"#, 400).await;
    assert!(
        reply.json["developer_message"]
            .as_str()
            .unwrap()
            .contains("request")
    );
}

#[tokio::test]
async fn a_missing_or_mistyped_tool_id_is_a_400() {
    let app = example_app();
    let reply = rejected(&app, r#"{"request":{"input":{}}}"#, 400).await;
    assert!(
        reply.json["developer_message"]
            .as_str()
            .unwrap()
            .contains("tool_id")
    );
    rejected(&app, r#"{"request":{"tool_id":5}}"#, 400).await;
    rejected(&app, r#"{"request":"Calculator.Add"}"#, 400).await;
    rejected(
        &app,
        r#"{"request":{"tool_id":"Calculator.Add","context":{"secrets":"x"}}}"#,
        400,
    )
    .await;
    rejected(
        &app,
        r#"{"request":{"tool_id":"Calculator.Add","call_id":7}}"#,
        400,
    )
    .await;
}

#[tokio::test]
async fn both_input_and_inputs_is_a_400() {
    rejected(
        &example_app(),
        r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":1},"inputs":{"a":1,"b":1}}}"#,
        400,
    )
    .await;
}

#[tokio::test]
async fn input_that_is_not_an_object_is_a_422() {
    let app = example_app();
    for input in [json!("a"), json!([1, 2]), json!(3)] {
        let body = json!({"request": {"tool_id": "Calculator.Add", "input": input}}).to_string();
        let reply = rejected(&app, body, 422).await;
        assert_eq!(reply.json["parameter_errors"]["input"], "Must be an object");
    }
}

#[tokio::test]
async fn a_body_in_a_content_coding_is_refused_in_each_protocols_shape_naming_identity() {
    // Nothing decodes a gzip body: it would fail as "not JSON" after the tool's lookup. Refused
    // up front, with `Accept-Encoding: identity` (RFC 9110, 15.5.16); `identity` is no coding.
    let app = example_app();
    let add = json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}});
    let mcp = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "Calculator_Add", "arguments": {"a": 1, "b": 2}}});
    for (path, body, status) in [("/tools/call", add, 400), ("/mcp", mcp, 415)] {
        for (coding, expected) in [
            ("gzip", status),
            ("identity, br", status),
            ("identity", 200),
        ] {
            let request = Request::post(path)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("content-encoding", coding)
                .body(Body::from(body.to_string()))
                .unwrap();
            let reply = send(&app, request).await;
            assert_eq!(reply.status, expected, "{path} {coding}: {}", reply.text);
            let accepted = reply.headers.get("accept-encoding");
            if expected == 200 {
                assert!(accepted.is_none());
                continue;
            }
            assert_eq!(accepted.unwrap(), "identity", "{path} {coding}");
            let shape = if path == "/mcp" {
                &reply.json["error"]["code"]
            } else {
                &reply.json["message"]
            };
            assert!(
                !shape.is_null(),
                "{path}: the protocol's own error: {}",
                reply.text
            );
        }
    }
    let invoke = json!({"operation": "Calculator_Add", "arguments": {}, "id": "i",
        "group_id": "g", "callback_url": "http://127.0.0.1:9/cb"});
    let request = Request::post("/invoke")
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(Body::from(invoke.to_string()))
        .unwrap();
    let reply = send(&app, request).await;
    assert_eq!(reply.status, 415, "{}", reply.text);
    assert_eq!(reply.headers["accept-encoding"], "identity");
}

#[tokio::test]
async fn a_wrong_content_type_is_a_400_and_the_call_is_refused() {
    let request = Request::post("/tools/call")
        .header("content-type", "text/plain")
        .body(Body::from(r#"{"request":{"tool_id":"Calculator.Add"}}"#))
        .unwrap();
    let reply = send(&example_app(), request).await;
    // Every error before the tool runs is a 400 `ServerErrorResponse` (the published 1.0
    // OpenAPI): the status changed from 415, the protection did not.
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json["message"], "The request body must be JSON");
    // A JSON content type with parameters or a +json suffix is fine; none at all is not (a
    // browser sends that without asking the server first: see tests/security.rs).
    for content_type in [
        "application/json; charset=utf-8",
        "application/vnd.oxp+json",
        // A media type's name is case-insensitive (RFC 9110, 8.3.1).
        "Application/JSON",
        "APPLICATION/VND.OXP+JSON ; charset=utf-8",
    ] {
        let request = Request::post("/tools/call")
            .header("content-type", content_type)
            .body(Body::from(
                r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":2}}}"#,
            ))
            .unwrap();
        assert_eq!(
            send(&example_app(), request).await.status,
            200,
            "{content_type:?}"
        );
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_a_400() {
    let config = Config {
        max_body_bytes: 1024,
        ..Config::default()
    };
    let app = app_with(common::example_tools::registry().unwrap(), config);
    let big = format!(
        r#"{{"request":{{"tool_id":"Doorbell.Ring","input":{{"doorbell_id":"{}"}}}}}}"#,
        "x".repeat(2048)
    );
    let reply = rejected(&app, big, 400).await;
    assert_eq!(reply.json["message"], "The request body is too large");
    // The default limit is 1 MiB.
    let huge = format!(
        r#"{{"request":{{"tool_id":"Doorbell.Ring","pad":"{}"}}}}"#,
        "x".repeat(1024 * 1024)
    );
    rejected(&example_app(), huge, 400).await;
}

#[tokio::test]
async fn nesting_deeper_than_the_limit_is_a_400() {
    let app = example_app();
    let deep = format!(
        r#"{{"request":{{"tool_id":"Calculator.Add","input":{{"a":{}1{}}}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let reply = rejected(&app, deep, 400).await;
    assert!(
        reply.json["developer_message"]
            .as_str()
            .unwrap()
            .contains("recursion limit")
    );
    let deep_envelope = "[".repeat(1_000_000);
    rejected(&app, deep_envelope, 400).await;
}

#[tokio::test]
async fn huge_numbers_are_handled() {
    let app = example_app();
    // Out of f64 range: not representable, so not valid input JSON for this server.
    rejected(
        &app,
        r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1e400,"b":1}}}"#,
        400,
    )
    .await;
    // Big but representable numbers are just numbers.
    let reply = post(
        &app,
        "/tools/call",
        r#"{"request":{"tool_id":"Calculator.Add","input":{"a":123456789012345678901234567890,"b":1}}}"#,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json["result"]["success"], true);
    // Integer overflow falls back to floating point rather than wrapping.
    let reply = post(
        &app,
        "/tools/call",
        format!(
            r#"{{"request":{{"tool_id":"Calculator.Add","input":{{"a":{},"b":{}}}}}}}"#,
            i64::MAX,
            i64::MAX
        ),
    )
    .await;
    assert!(reply.json["result"]["value"].as_f64().unwrap() > 1.8e19);
    let reply = post(
        &app,
        "/tools/call",
        r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1e308,"b":1e308}}}"#,
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json["result"]["success"], false,
        "an infinite sum is a tool error"
    );
}

#[tokio::test]
async fn invalid_utf8_is_a_400() {
    let mut body = br#"{"request":{"tool_id":"Doorbell.Ring","input":{"doorbell_id":""#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe, 0xfd]);
    body.extend_from_slice(br#""}}}"#);
    rejected(&example_app(), body, 400).await;
}

#[tokio::test]
async fn unknown_tools_and_bad_versions_are_400s() {
    let app = example_app();
    for tool_id in [
        "Nope.Tool",
        "Calculator.Add@2",
        "Calculator.Add@1.0",
        "Calculator.Add@",
        "@1",
        "Calculator.Add@latest",
        "../../etc/passwd",
        "Calculator.Add@1.0.0-beta",
    ] {
        let reply = rejected(
            &app,
            json!({"request": {"tool_id": tool_id}}).to_string(),
            400,
        )
        .await;
        assert!(reply.json["developer_message"].is_string(), "{tool_id}");
    }
}

#[tokio::test]
async fn unknown_paths_are_404_and_wrong_methods_405_with_allow() {
    let app = example_app();
    let reply = get(&app, "/nothing/here").await;
    assert_eq!(reply.status, 404);
    assert!(reply.json["message"].is_string());
    let reply = get(&app, "/tools/call").await;
    assert_eq!(reply.status, 405);
    assert_eq!(reply.headers["allow"], "POST");
    let reply = send(&app, Request::delete("/tools").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, 405);
    assert_eq!(reply.headers["allow"], "GET, HEAD");
    let reply = send(&app, Request::put("/health").body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, 405);
}

#[tokio::test]
async fn a_malformed_get_body_is_a_400() {
    let request = Request::get("/tools").body(Body::from("{nope")).unwrap();
    let reply = send(&example_app(), request).await;
    assert_eq!(reply.status, 400);
}

#[tokio::test]
async fn many_bad_requests_in_a_row_leave_the_server_healthy() {
    let app = example_app();
    for body in [
        "{",
        "}",
        "\u{0}",
        "{\"request\":{\"tool_id\":\"\\ud800\"}}",
        "{\"request\":{}}",
        "nul",
    ] {
        let reply = post(&app, "/tools/call", body).await;
        assert_eq!(reply.status, 400, "{body:?}: {}", reply.text);
    }
    assert_eq!(get(&app, "/health").await.status, 200);
}
