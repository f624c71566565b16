//! Every recorded event in `events/` replayed through the Lambda request path: the event is
//! deserialized as `lambda_http` does, adapted to an HTTP request, routed by the app, and the
//! answer converted back into the event source's response format. (The SQS batches in
//! `events/sqs/` go to the RAP worker: see `tests/rap_sqs.rs`.)

use crate::common;

use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Context, LambdaEvent, Service};
use serde_json::Value;
use std::collections::BTreeMap;

/// `actual` holds every key of `expected` with the same value (objects compared recursively,
/// arrays item by item).
fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| contains(av, v))),
        (Value::Array(a), Value::Array(e)) => {
            a.len() == e.len() && a.iter().zip(e).all(|(a, e)| contains(a, e))
        }
        _ => actual == expected,
    }
}

async fn replay(event: &str) -> (u16, Value) {
    let request: LambdaRequest = serde_json::from_str(event).expect("a Lambda HTTP event");
    let mut adapter = Adapter::from(common::example_app());
    let response = adapter
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .expect("the app never fails");
    let response = serde_json::to_value(response).unwrap();
    let status = response["statusCode"].as_u64().unwrap() as u16;
    let body = response["body"].as_str().unwrap_or_default();
    let body = if response["isBase64Encoded"] == true {
        panic!("JSON answers are sent as text, not base64: {body}");
    } else if body.is_empty() {
        // MCP notifications: 202 without a body.
        Value::Null
    } else {
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
    };
    (status, body)
}

#[tokio::test]
async fn every_event_fixture_gives_its_expected_answer() {
    let expected: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string("tests/events_expected.json").unwrap())
            .unwrap();
    let mut seen = 0;
    for entry in std::fs::read_dir("events").unwrap() {
        let path = entry.unwrap().path();
        // Subdirectories hold events of other sources (events/sqs: the RAP worker's batches).
        if !path.is_file() {
            continue;
        }
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let want = expected
            .get(&name)
            .unwrap_or_else(|| panic!("{name} has no entry in tests/events_expected.json"));
        let (status, body) = replay(&std::fs::read_to_string(&path).unwrap()).await;
        assert_eq!(
            status,
            want["status"].as_u64().unwrap() as u16,
            "{name}: {body}"
        );
        assert!(
            contains(&body, &want["body"]),
            "{name}: got {body}, want {}",
            want["body"]
        );
        seen += 1;
    }
    assert_eq!(seen, expected.len(), "every expectation has its fixture");
}

#[tokio::test]
async fn fixtures_cover_each_event_source_and_case() {
    let names: Vec<String> = std::fs::read_dir("events")
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    for source in ["apigw-rest-", "apigw-http-", "function-url-", "alb-"] {
        assert!(names.iter().any(|n| n.starts_with(source)), "{source}");
    }
    for case in [
        "list-tools",
        "call-success",
        "server-error",
        "validation-error",
        "tool-error",
        "base64",
    ] {
        assert!(names.iter().any(|n| n.contains(case)), "{case}");
    }
}

#[tokio::test]
async fn a_listing_through_api_gateway_is_the_same_as_locally() {
    let local = common::get(&common::example_app(), "/tools").await.json;
    for name in [
        "apigw-rest-list-tools.json",
        "apigw-http-list-tools.json",
        "alb-list-tools.json",
    ] {
        let (status, body) =
            replay(&std::fs::read_to_string(format!("events/{name}")).unwrap()).await;
        assert_eq!(status, 200);
        assert_eq!(body, local, "{name}");
    }
}

#[tokio::test]
async fn an_alb_with_multi_value_headers_on_is_answered_in_multi_value_headers() {
    // With multi-value headers on, an ALB reads only the response's `multiValueHeaders`.
    let event = std::fs::read_to_string("events/alb-multi-value-mcp-call.json").unwrap();
    let request: LambdaRequest = serde_json::from_str(&event).unwrap();
    let mut adapter = Adapter::from(common::example_app());
    let response = adapter
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .unwrap();
    let response = serde_json::to_value(response).unwrap();
    assert_eq!(response["statusCode"], 200, "{response}");
    assert_eq!(
        response["multiValueHeaders"]["content-type"],
        serde_json::json!(["application/json"]),
        "{response}"
    );
}

/// A Function URL event of `method` to `path` from a page of `origin`, with `headers` beside.
fn from_page(
    method: &str,
    path: &str,
    origin: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    let mut event: Value = serde_json::from_str(
        &std::fs::read_to_string("events/function-url-call-success.json").unwrap(),
    )
    .unwrap();
    event["rawPath"] = path.into();
    event["requestContext"]["http"]["path"] = path.into();
    event["requestContext"]["http"]["method"] = method.into();
    event["headers"]["origin"] = origin.into();
    event["headers"]["accept"] = "application/json, text/event-stream".into();
    for (name, value) in headers {
        event["headers"][*name] = (*value).into();
    }
    event["body"] = body.into();
    event.to_string()
}

#[tokio::test]
async fn a_page_of_an_allowed_origin_gets_cors_from_a_deployed_function() {
    // The browser client of a deployed server (a web agent, the MCP Inspector's direct
    // connection) sends a preflight before its JSON body, and reads an answer only with
    // `Access-Control-Allow-Origin`: the local server answered both, a Function URL or an API
    // neither (the preflight was 405), whatever `OXP_ALLOWED_ORIGINS` said.
    let page = "https://agent.example.com";
    let app = common::app_with(
        common::example_tools::registry().unwrap(),
        common::test_config_with(&[("OXP_ALLOWED_ORIGINS", page)]),
    );
    let answer = |event: String| {
        let mut adapter = Adapter::from(app.clone());
        async move {
            let request: LambdaRequest = serde_json::from_str(&event).unwrap();
            let response = adapter.call(LambdaEvent::new(request, Context::default()));
            serde_json::to_value(response.await.unwrap()).unwrap()
        }
    };
    let asks = [
        ("access-control-request-method", "POST"),
        (
            "access-control-request-headers",
            "content-type,mcp-protocol-version,authorization",
        ),
    ];
    let preflight = answer(from_page("OPTIONS", "/mcp", page, &asks, "")).await;
    assert_eq!(preflight["statusCode"], 200, "{preflight}");
    let headers = &preflight["headers"];
    assert_eq!(headers["access-control-allow-origin"], page, "{preflight}");
    let allowed = headers["access-control-allow-headers"]
        .as_str()
        .unwrap_or_default();
    assert!(allowed.contains("mcp-protocol-version"), "{preflight}");
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Calculator_Add","arguments":{"a":1,"b":2}}}"#;
    let json = [("content-type", "application/json")];
    for path in ["/mcp", "/tools/call"] {
        let body = if path == "/mcp" {
            call.to_owned()
        } else {
            r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":2}}}"#.to_owned()
        };
        let answered = answer(from_page("POST", path, page, &json, &body)).await;
        assert_eq!(answered["statusCode"], 200, "{path}: {answered}");
        assert_eq!(
            answered["headers"]["access-control-allow-origin"], page,
            "{path}"
        );
        // Another site's page: no CORS answer, so its browser lets it read nothing (and /mcp
        // refuses its Origin outright, as the MCP spec has servers do).
        let other = answer(from_page(
            "POST",
            path,
            "https://evil.example",
            &json,
            &body,
        ))
        .await;
        assert!(
            other["headers"]
                .get("access-control-allow-origin")
                .is_none(),
            "{other}"
        );
    }
}
