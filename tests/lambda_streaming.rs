//! Lambda response streaming (`OXP_LAMBDA_STREAMING=true`, for a function behind a Function URL
//! with `InvokeMode: RESPONSE_STREAM` or a streaming API Gateway REST integration): the real
//! bootstrap answers through the Runtime API's streaming response, as Lambda reads it: the
//! status and headers as a JSON prelude, eight NUL bytes, then the body as the app writes it.
//! The Runtime API on loopback notes when each chunk arrives, so a test can see an MCP call's
//! progress arrive before its result rather than all at once at the end.

use crate::common;

use common::runtime_api::{Bootstrap, Chunks, RuntimeApi};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn fixture(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Serves the event of file `event` once (request id `s-1`) with streaming on; the streamed
/// answer's chunks, and the JSON lines the bootstrap wrote until the stream ended.
async fn streamed(event: &str) -> (Chunks, Vec<Value>) {
    streamed_event(fixture(event)).await
}

/// [`streamed`], of `event`.
async fn streamed_event(event: Value) -> (Chunks, Vec<Value>) {
    let (api, addr) = RuntimeApi::start(vec![("s-1".into(), event, None)], Duration::ZERO).await;
    let out = std::env::temp_dir().join(format!("oxp-stream-{}.log", uuid::Uuid::new_v4()));
    let mut bootstrap = Bootstrap::start_captured(addr, &[("OXP_LAMBDA_STREAMING", "true")], &out);
    let chunks = api.wait_for_stream("s-1", &mut bootstrap).await;
    assert!(
        api.errors.lock().unwrap().is_empty(),
        "{:?}",
        api.errors.lock().unwrap()
    );
    let lines = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let _ = std::fs::remove_file(&out);
    (chunks, lines)
}

/// The prelude (status and headers) and the body's bytes, each body byte with the instant its
/// chunk arrived.
fn split(chunks: &Chunks) -> (Value, Vec<(Instant, u8)>) {
    let bytes: Vec<(Instant, u8)> = chunks
        .iter()
        .flat_map(|(at, data)| data.iter().map(move |b| (*at, *b)))
        .collect();
    let plain: Vec<u8> = bytes.iter().map(|(_, b)| *b).collect();
    let end = plain
        .windows(8)
        .position(|w| w == [0u8; 8])
        .expect("the prelude ends with eight NUL bytes");
    let prelude = serde_json::from_slice(&plain[..end]).expect("the prelude is JSON");
    (prelude, bytes[end + 8..].to_vec())
}

/// Each Server-Sent Event's data, parsed, with the instant its last byte arrived.
fn events(body: &[(Instant, u8)]) -> Vec<(Instant, Value)> {
    let mut out = Vec::new();
    let mut text = String::new();
    for (at, b) in body {
        text.push(*b as char);
        if text.ends_with("\n\n") {
            let data: String = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect();
            if !data.is_empty() {
                out.push((*at, serde_json::from_str(&data).unwrap()));
            }
            text.clear();
        }
    }
    out
}

#[tokio::test]
async fn an_mcp_calls_progress_reaches_the_client_before_its_result() {
    // Demo_Sleep sleeps 1500 ms and reports progress at each tenth of it.
    let (chunks, lines) = streamed("events/streaming/function-url-mcp-sleep-progress.json").await;
    let (prelude, body) = split(&chunks);
    assert_eq!(prelude["statusCode"], 200, "{prelude}");
    assert_eq!(
        prelude["headers"]["content-type"], "text/event-stream",
        "{prelude}"
    );
    let events = events(&body);
    let progress: Vec<&(Instant, Value)> = events
        .iter()
        .filter(|(_, e)| e["method"] == "notifications/progress")
        .collect();
    let (result_at, result) = events
        .iter()
        .find(|(_, e)| e["id"] == 7)
        .expect("the call's result is on the stream");
    assert_eq!(
        result["result"]["structuredContent"]["cancelled"], false,
        "{result}"
    );
    assert_eq!(progress.len(), 10, "one notification per tenth: {events:?}");
    assert_eq!(progress[0].1["params"]["progressToken"], "sleep-1");
    let ahead = result_at.duration_since(progress[0].0);
    assert!(
        ahead >= Duration::from_millis(700),
        "the first progress arrived only {ahead:?} before the result: the answer was buffered"
    );
    let last = events.last().unwrap();
    assert_eq!(last.1["id"], 7, "the result ends the stream");

    // The call ran in a task of rmcp's, after the headers went back: its line still carries
    // the invocation's fields, and its metrics were sent before the stream ended (Lambda may
    // freeze the environment then).
    let call = lines
        .iter()
        .find(|l| l["target"] == "oxp::call")
        .unwrap_or_else(|| panic!("no call line: {lines:#?}"));
    assert_eq!(call["function_request_id"], "s-1", "{call}");
    assert_eq!(call["tool_id"], "Demo.Sleep@1.0.0");
    let metrics = lines.iter().any(|l| {
        l["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["Name"] == "calls"))
    });
    assert!(metrics, "the call's metrics were flushed: {lines:#?}");
}

#[tokio::test]
async fn an_answer_without_progress_streams_whole_with_its_status_and_headers() {
    // An API Gateway REST event (its streaming integration takes the same format): OXP's list.
    let (chunks, _) = streamed("events/apigw-rest-list-tools.json").await;
    let (prelude, body) = split(&chunks);
    assert_eq!(prelude["statusCode"], 200, "{prelude}");
    assert!(
        prelude["headers"]["content-type"]
            .as_str()
            .is_some_and(|t| t.starts_with("application/json")),
        "{prelude}"
    );
    let body: Vec<u8> = body.into_iter().map(|(_, b)| b).collect();
    let list: Value = serde_json::from_slice(&body).expect("the body is the JSON answer");
    assert!(
        list["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{list}"
    );
}

#[tokio::test]
async fn a_streamed_event_whose_query_makes_no_uri_is_answered_not_failed() {
    // As an HTTP API or a Function URL passes on a query sent with characters a URI does not
    // take: `lambda_http` panicked building the request's URI (`src/transport/lambda/uri.rs`).
    let mut event = fixture("events/apigw-http-list-tools.json");
    event["rawQueryString"] = json!("q={\"a\":1} <x>");
    let (chunks, _) = streamed_event(event).await;
    let (prelude, _) = split(&chunks);
    assert_eq!(prelude["statusCode"], 200, "{prelude}");
}

#[tokio::test]
async fn on_managed_instances_streamed_answers_overlap() {
    // With AWS_LAMBDA_MAX_CONCURRENCY, one environment streams several answers at once.
    let event = fixture("events/streaming/function-url-mcp-sleep-progress.json");
    let ids = ["m-0", "m-1", "m-2"];
    let queued = ids
        .iter()
        .map(|id| (id.to_string(), event.clone(), None))
        .collect();
    let (api, addr) = RuntimeApi::start(queued, Duration::ZERO).await;
    let mut bootstrap = Bootstrap::start(
        addr,
        &[
            ("OXP_LAMBDA_STREAMING", "true"),
            ("AWS_LAMBDA_MAX_CONCURRENCY", "3"),
        ],
    );
    for id in ids {
        let (prelude, body) = split(&api.wait_for_stream(id, &mut bootstrap).await);
        assert_eq!(prelude["statusCode"], 200, "{prelude}");
        assert!(events(&body).iter().any(|(_, e)| e["id"] == 7), "{id}");
    }
    assert_eq!(api.max_in_flight(), 3, "the three calls streamed at once");
}
