//! The fuzz target's rule, shared: what its bytes ask and what every answer must be.
//! `fuzz/fuzz_targets/call.rs` includes this file, and the test below replays the seed corpus
//! (`fuzz/corpus_seed/`) through the same rule on every run of the tests, so the target and its
//! rule keep working without the nightly build; the coverage-guided run is `scripts/fuzz`'s
//! (docs/reliability.md, "Fuzzing").

use axum::body::Body;
use axum::http::Request;

/// The fuzzed server's settings, as variables the binary would read. Callbacks go nowhere (the
/// allow-list holds only an unresolvable host) and state stays in memory (the embedded store
/// without `OXP_STATE_PATH`: no database file written beside the corpus), where it serves what
/// needs it (MCP tasks and rounds, questions, subscriptions).
pub const VARS: [(&str, &str); 6] = [
    ("OXP_MAX_BODY_BYTES", "65536"),
    ("OXP_STATE", "embedded"),
    ("OXP_RAP_ALLOW_LOOPBACK_CALLBACKS", "false"),
    ("OXP_RAP_CALLBACK_HOSTS", "callback.invalid"),
    ("OXP_RAP_DELIVERY_ATTEMPTS", "1"),
    ("OXP_RAP_DEAD_LETTER_FILE", "/dev/null"),
];

/// The settings of the server a request with an `Authorization` header line is sent to, beside
/// [`VARS`]: callers authenticated with HS256 JWTs signed with [`KEY`] (held as secret
/// [`KEY_ID`]), so that a seed with a token that holds (`sub` `fuzz-caller`, expiring in 2100)
/// takes the fuzzer past authentication to what is kept per caller (the user bound to the
/// token's subject, each caller's shares), and the rest to the refusals of authentication.
pub const JWT_VARS: [(&str, &str); 4] = [
    ("OXP_AUTH", "jwt"),
    ("OXP_JWT_HS256_SECRET_ID", KEY_ID),
    ("OXP_JWT_ISSUER", "https://issuer.fuzz/"),
    ("OXP_JWT_AUDIENCE", "oxp-fuzz"),
];

/// The secret id the JWT server holds its signing key under.
pub const KEY_ID: &str = "FUZZ_JWT_KEY";
/// The signing key.
pub const KEY: &str = "a-fuzzing-signing-key-of-at-least-32-bytes";

/// The fuzzed server's configuration: with callers authenticated by JWT, or without.
pub fn config(authenticated: bool) -> oxp_lambda::Config {
    let jwt = JWT_VARS.iter().filter(|_| authenticated);
    let vars = VARS.iter().chain(jwt).copied();
    oxp_lambda::Config::from_vars(false, vars).expect("a valid configuration")
}

/// The MCP revisions a fuzzed `/mcp` request names in its `MCP-Protocol-Version` header (none:
/// 2025-03-26, as a client that sends none is taken).
const REVISIONS: [Option<&str>; 4] = [None, Some("2025-06-18"), Some("2025-11-25"), Some(MODERN)];

/// RAP's routes beside `/invoke`, which a first byte from 128 picks: a runtime's notes of a
/// closed thread and a cancelled call, its status checks, its user's choices.
const RAP_ROUTES: [&str; 4] = [
    "/close_thread",
    "/cancel_tool_call",
    "/tool_call_status",
    "/user_choice_response/t-0",
];

/// The revision whose requests carry their method and tool in headers too.
const MODERN: &str = "2026-07-28";

/// The request `data` stands for: its first byte picks the route (an OXP call, an async
/// invocation or an MCP message below 128, another of RAP's routes from there) and, for `/mcp`, the revision it names; the rest is the body
/// (after header lines, when there is a NUL byte; with an `Authorization` line, the request is
/// for the server that authenticates its callers: [`Sent::authenticated`]).
/// At 2026-07-28 the `Mcp-Method` and `Mcp-Name` headers say what the body says (where that is
/// a string a header can carry), as a client sends them, so that the fuzzer reaches past the
/// header checks. Nothing for empty data.
pub fn request(data: &[u8]) -> Option<(Sent, Request<Body>)> {
    let (&route, mut body) = data.split_first()?;
    let path = match route {
        0..128 => ["/tools/call", "/invoke", "/mcp"][usize::from(route % 3)],
        _ => RAP_ROUTES[usize::from(route) % RAP_ROUTES.len()],
    };
    let mut request = Request::post(path);
    // What comes before a NUL byte is header lines (`name: value`) sent before the usual ones:
    // an origin, a host, a trace context; on `/mcp` a session, `Mcp-Param-*`; the usual ones
    // again.
    let (mut headed, mut authenticated) = (false, false);
    if let Some(end) = body.iter().position(|b| *b == 0) {
        for line in body[..end].split(|b| *b == b'\n') {
            let Some(colon) = line.iter().position(|b| *b == b':') else {
                continue;
            };
            let name = axum::http::HeaderName::from_bytes(&line[..colon]);
            let value = axum::http::HeaderValue::from_bytes(line[colon + 1..].trim_ascii());
            if let (Ok(name), Ok(value)) = (name, value) {
                authenticated |= name == axum::http::header::AUTHORIZATION;
                request = request.header(name, value);
                headed = true;
            }
        }
        body = &body[end + 1..];
    }
    request = request
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    let revision = REVISIONS[usize::from(route / 3 % 4)].filter(|_| path == "/mcp");
    if let Some(revision) = revision {
        request = request.header("mcp-protocol-version", revision);
    }
    if revision == Some(MODERN) {
        let sent = serde_json::from_slice::<serde_json::Value>(body).unwrap_or_default();
        // The tool's or prompt's name, a resource's URI or a task's id, as the revision names
        // each method's target.
        let params = &sent["params"];
        let target = ["name", "uri", "taskId"].map(|key| &params[key]);
        let name = target
            .into_iter()
            .find(|v| v.is_string())
            .unwrap_or(&params["name"]);
        for (header, value) in [("mcp-method", &sent["method"]), ("mcp-name", name)] {
            if let Some(value) = value
                .as_str()
                .and_then(|v| axum::http::HeaderValue::from_str(v).ok())
            {
                request = request.header(header, value);
            }
        }
    }
    let request = request.body(Body::from(body.to_vec())).expect("a request");
    let modern = revision == Some(MODERN);
    // A request's id, when it is one JSON-RPC takes (a string or an integer), which its answer
    // must carry back.
    let parsed = serde_json::from_slice::<serde_json::Value>(body).ok();
    // A message (an object) whose params are too: MCP's always are, and rmcp refuses an array
    // (JSON-RPC's by-position params) with -32602.
    let object = parsed
        .as_ref()
        .is_some_and(|sent| sent.is_object() && !sent["params"].is_array());
    let id = parsed
        .filter(|sent| sent["method"].is_string())
        .map(|sent| sent["id"].clone())
        .filter(|id| id.is_string() || id.is_i64());
    let sent = Sent {
        path,
        modern,
        headed,
        authenticated,
        object,
        id,
    };
    Some((sent, request))
}

/// Where a fuzzed request went, for [`check`].
pub struct Sent {
    path: &'static str,
    /// At MCP 2026-07-28.
    modern: bool,
    /// With header lines of its own.
    headed: bool,
    /// With an `Authorization` header line: for the server configured with [`JWT_VARS`], which
    /// may refuse it 401 in the protocol's shape.
    pub authenticated: bool,
    /// The body is a JSON object (a message, where an array is a batch or nothing) with no
    /// array for its params.
    object: bool,
    /// On `/mcp`, the request's id.
    id: Option<serde_json::Value>,
}

/// Panics unless the answer to a request `sent` is its protocol's: on `/mcp` JSON-RPC with
/// 200, 400 or 413 (or, at 2026-07-28, 404 for a method it does not serve; with headers of its
/// own, 403, 404, 406 or 415 for what they say), a bodiless 202 for a notification (or a batch
/// of them), a JSON array of answers for a 2025-03-26 batch, or an event stream of JSON-RPC
/// messages for a call that reports progress, a request's answer carrying its id; accepted or a
/// RAP error on `/invoke`; an OXP answer with 200, 400 or 422 on `/tools/call` (and, with headers
/// of its own, 403 in each protocol's shape, 415 on RAP's; with an `Authorization` line, 401 in
/// each protocol's shape).
pub fn check(sent: &Sent, status: u16, body: &[u8]) {
    let path = sent.path;
    if path == "/mcp" {
        return check_mcp(status, body, sent);
    }
    // `/cancel_tool_call` answers 200 with no body, whatever it was sent (RAP's rule).
    if path == "/cancel_tool_call" && status == 200 {
        assert!(body.is_empty(), "{}", String::from_utf8_lossy(body));
        return;
    }
    let json: serde_json::Value = serde_json::from_slice(body).expect("every answer is JSON");
    // Headers of its own may name a foreign origin or host (403) or take back the body's
    // type (415 on RAP; OXP answers that 400).
    let refused =
        sent.headed && [403, 415].contains(&status) || sent.authenticated && status == 401;
    if RAP_ROUTES.contains(&path) {
        // 404 and 409: a choice for no question, or answered before.
        let answered = [200, 400, 404, 409, 413, 429, 503].contains(&status);
        assert!(answered || refused, "status {status}");
        let ok = status == 200 && (json["status"] == "ok" || json["alive"].is_boolean());
        assert!(ok || json["error"]["kind"].is_string(), "{json}");
    } else if path == "/invoke" {
        assert!(
            [200, 400, 409, 413, 429, 503].contains(&status) || refused,
            "status {status}"
        );
        assert!(
            json["status"] == "accepted" || json["error"]["kind"].is_string(),
            "{json}"
        );
    } else {
        let refused = refused && [401, 403].contains(&status);
        assert!(
            [200, 400, 422].contains(&status) || refused,
            "status {status}"
        );
        assert_eq!(json["$schema"], "urn:oxp:1.0");
    }
}

/// `/mcp`'s part of [`check`].
fn check_mcp(status: u16, body: &[u8], sent: &Sent) {
    if status == 202 {
        assert!(body.is_empty(), "a notification's 202 has no body");
        return;
    }
    let not_served = sent.modern && status == 404;
    // Headers of its own may name a foreign origin or host (403), or take back what the body
    // or the answer's type must be (415, 406), or name a session that never was (404).
    let refused = sent.headed && [403, 404, 406, 415].contains(&status)
        || sent.authenticated && status == 401;
    assert!(
        [200, 400, 413].contains(&status) || not_served || refused,
        "status {status}"
    );
    let messages: Vec<serde_json::Value> = match serde_json::from_slice(body) {
        Ok(serde_json::Value::Array(answers)) => answers,
        // One answer to what is no message (an array of a message's members, say), or to one
        // whose params are by position, is an error.
        Ok(answer) if !sent.object => {
            assert!(answer["result"].is_null(), "{answer}");
            vec![answer]
        }
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
    for message in &messages {
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
    }
    // The answer to a request carries its id back (JSON-RPC: "the same as the value of the id
    // member in the Request Object"); an error may say `null` only where it could not read it.
    if let (Some(id), Some(answer)) = (&sent.id, messages.last()) {
        let answered = !answer["result"].is_null() || !answer["id"].is_null();
        assert!(!answered || answer["id"] == *id, "{answer} answers {id}");
    }
}

#[cfg(test)]
mod tests {
    use super::{KEY, KEY_ID, check, config, request};
    use crate::common::{build, example_tools};
    use http_body_util::BodyExt;
    use oxp_lambda::App;
    use tower::ServiceExt;

    #[tokio::test]
    async fn every_seed_of_the_fuzz_target_is_answered_in_its_protocols_shape() {
        let registry = || example_tools::registry().expect("valid tools");
        let open = build(App::builder(registry()).config(config(false)));
        let jwt = App::builder(registry()).config(config(true));
        let jwt = build(jwt.secret(KEY_ID, KEY));
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus_seed");
        let (mut seeds, mut modern, mut let_in, mut let_out) = (0, 0, 0, 0);
        for entry in std::fs::read_dir(&dir).expect("the seed corpus") {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let (sent, request) = request(&data).expect("no seed is empty");
            let app = if sent.authenticated { &jwt } else { &open };
            let response = app.clone().oneshot(request).await.expect("infallible");
            let status = response.status().as_u16();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            check(&sent, status, &body);
            if sent.authenticated {
                *if status == 401 {
                    &mut let_out
                } else {
                    &mut let_in
                } += 1;
            }
            // The 2026-07-28 seeds reach past the header checks: their headers say what their
            // bodies say.
            if sent.modern {
                let answer = String::from_utf8_lossy(&body);
                assert!(!answer.contains("-32020"), "{}: {answer}", path.display());
                modern += 1;
            }
            seeds += 1;
        }
        assert!(
            seeds >= 20 && modern >= 7,
            "the seeds were read: {seeds}, {modern}"
        );
        // The seeds with the fuzz key's token reach past authentication; the forged one not.
        assert!(
            let_in >= 4 && let_out >= 1,
            "{let_in} let in, {let_out} not"
        );
    }
}
