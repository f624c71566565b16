//! The fuzz target's rule, shared: what its bytes ask and what every answer must be.
//! `fuzz/fuzz_targets/call.rs` includes this file, and the test below replays the seed corpus
//! (`fuzz/corpus_seed/`) through the same rule on every run of the tests, so the target and its
//! rule keep working without the nightly build; the coverage-guided run is `scripts/fuzz`'s
//! (docs/reliability.md, "Fuzzing").

use axum::body::Body;
use axum::http::Request;

/// The fuzzed server's settings, as variables the binary would read. Callbacks go nowhere (the
/// allow-list holds only an unresolvable host) and state stays in memory (no database file
/// written beside the corpus).
pub const VARS: [(&str, &str); 6] = [
    ("OXP_MAX_BODY_BYTES", "65536"),
    ("OXP_STATE", "off"),
    ("OXP_RAP_ALLOW_LOOPBACK_CALLBACKS", "false"),
    ("OXP_RAP_CALLBACK_HOSTS", "callback.invalid"),
    ("OXP_RAP_DELIVERY_ATTEMPTS", "1"),
    ("OXP_RAP_DEAD_LETTER_FILE", "/dev/null"),
];

/// The request `data` stands for: its first byte picks the route (an OXP call, an async
/// invocation or an MCP message), the rest is the body. Nothing for empty data.
pub fn request(data: &[u8]) -> Option<(&'static str, Request<Body>)> {
    let (&route, body) = data.split_first()?;
    let path = ["/tools/call", "/invoke", "/mcp"][usize::from(route % 3)];
    let request = Request::post(path)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Body::from(body.to_vec()))
        .expect("a request");
    Some((path, request))
}

/// Panics unless the answer to a request on `path` is its protocol's: on `/mcp` JSON-RPC with
/// 200, 400 or 413, a bodiless 202 for a notification (or a batch of them), a JSON array of
/// answers for a 2025-03-26 batch, or an event stream of JSON-RPC messages for a call that
/// reports progress; accepted or a RAP error on `/invoke`; an OXP answer with 200, 400 or 422 on
/// `/tools/call`.
pub fn check(path: &str, status: u16, body: &[u8]) {
    if path == "/mcp" {
        return check_mcp(status, body);
    }
    let json: serde_json::Value = serde_json::from_slice(body).expect("every answer is JSON");
    if path == "/invoke" {
        assert!(
            [200, 400, 409, 413, 429, 503].contains(&status),
            "status {status}"
        );
        assert!(
            json["status"] == "accepted" || json["error"]["kind"].is_string(),
            "{json}"
        );
    } else {
        assert!([200, 400, 422].contains(&status), "status {status}");
        assert_eq!(json["$schema"], "urn:oxp:1.0");
    }
}

/// `/mcp`'s part of [`check`].
fn check_mcp(status: u16, body: &[u8]) {
    if status == 202 {
        assert!(body.is_empty(), "a notification's 202 has no body");
        return;
    }
    assert!([200, 400, 413].contains(&status), "status {status}");
    let messages: Vec<serde_json::Value> = match serde_json::from_slice(body) {
        Ok(serde_json::Value::Array(answers)) => answers,
        Ok(answer) => vec![answer],
        // An event stream: each event's data one message.
        Err(_) => std::str::from_utf8(body)
            .expect("an event stream is text")
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| serde_json::from_str(data.trim()).expect("each event is JSON"))
            .collect(),
    };
    assert!(!messages.is_empty(), "an answer with no message");
    for message in messages {
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
    }
}

#[cfg(test)]
mod tests {
    use super::{VARS, check, request};
    use crate::common::{app_with, example_tools};
    use http_body_util::BodyExt;
    use oxp_lambda::Config;
    use tower::ServiceExt;

    #[tokio::test]
    async fn every_seed_of_the_fuzz_target_is_answered_in_its_protocols_shape() {
        let config = Config::from_vars(false, VARS).expect("a valid configuration");
        let app = app_with(example_tools::registry().expect("valid tools"), config);
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus_seed");
        let mut seeds = 0;
        for entry in std::fs::read_dir(&dir).expect("the seed corpus") {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let (route, request) = request(&data).expect("no seed is empty");
            let response = app.clone().oneshot(request).await.expect("infallible");
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            check(route, status, &body);
            seeds += 1;
        }
        assert!(seeds >= 10, "the seeds were read: {seeds}");
    }
}
