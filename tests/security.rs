//! The server as an attacker meets it: a web page in the developer's browser, a caller replaying
//! someone else's call id, bodies shaped to slip past the wire format, unbounded fields. Each
//! test is a row of the table in docs/security.md.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::receiver::Receiver;
use common::*;
use jsonwebtoken::{EncodingKey, Header};
use oxp_lambda::config::{AuthConfig, JwtConfig, JwtKeys};
use oxp_lambda::{App, Config, NoInput, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const HS_KEY: &str = "security-test-signing-key-of-at-least-32-bytes";

/// Counts its runs and answers the run number.
fn counter() -> (Tool, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let tool = Tool::builder("T.Count", "1.0.0")
        .authorization("crm", Vec::<String>::new())
        .handler(move |_: NoInput, _: ToolContext| {
            let runs = counted.clone();
            async move { Ok::<_, ToolError>(runs.fetch_add(1, Ordering::SeqCst) + 1) }
        });
    (tool, runs)
}

fn token(sub: &str) -> String {
    signed(json!({"sub": sub}))
}

/// A token with `claims` (and an expiry), as the server's key signs it.
fn signed(mut claims: Value) -> String {
    claims["exp"] = json!(jsonwebtoken::get_current_timestamp() + 300);
    oxp_lambda::__private::install_jwt_crypto();
    jsonwebtoken::encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap(),
    )
    .unwrap()
}

async fn call_as(app: &App, sub: &str, body: &Value) -> Reply {
    let request = Request::post("/tools/call")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {}", token(sub)))
        .body(Body::from(body.to_string()))
        .unwrap();
    send(app, request).await
}

fn jwt_app(tools: Vec<Tool>) -> App {
    jwt_app_with(tools, jwt_config())
}

/// A config whose callers authenticate with tokens [`signed`] makes.
fn jwt_config() -> Config {
    Config {
        auth: AuthConfig::Jwt(JwtConfig {
            keys: JwtKeys::Hs256 {
                secret_id: "JWT_KEY".into(),
            },
            issuer: None,
            audience: None,
            client_id: None,
            token_use: None,
            leeway_secs: 5,
            bind_user_id: true,
        }),
        ..Config::default()
    }
}

fn jwt_app_with(tools: Vec<Tool>, config: Config) -> App {
    let registry = Registry::builder().tools(tools).build().unwrap();
    build(
        App::builder(registry)
            .config(config)
            .secret("JWT_KEY", HS_KEY),
    )
}

// ---- A web page in the developer's browser ---------------------------------------------------

#[tokio::test]
async fn every_post_route_refuses_a_body_that_is_not_declared_json() {
    let app = example_app();
    let add = json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}});
    // A page's `fetch(url, {mode: "no-cors", body})` sends no content type or text/plain.
    for (path, body) in [
        ("/tools/call", add.to_string()),
        ("/call", add.to_string()),
        ("/invoke", json!({"operation": "Calculator_Add", "arguments": {}, "id": "i", "group_id": "g", "callback_url": "http://127.0.0.1:9/cb"}).to_string()),
        ("/close_thread", json!({"group_id": "g"}).to_string()),
        ("/cancel_tool_call", json!({"thread_id": "g", "tool_call_id": "i"}).to_string()),
        ("/tool_call_status", json!({"thread_id": "g", "tool_call_id": "i"}).to_string()),
        ("/user_choice_response/t", json!({"id": "i", "selected": 0}).to_string()),
        ("/mcp", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "Calculator_Add", "arguments": {"a": 1, "b": 2}}}).to_string()),
    ] {
        for content_type in [None, Some("text/plain"), Some("application/x-www-form-urlencoded")] {
            let mut request = Request::post(path);
            if let Some(ct) = content_type {
                request = request.header("content-type", ct);
            }
            let reply = send(&app, request.body(Body::from(body.clone())).unwrap()).await;
            // OXP answers every error before the tool runs with a 400 (the published 1.0
            // OpenAPI); RAP and MCP keep 415. Refused either way: the tool never runs.
            let status = if path.starts_with("/tools") || path == "/call" { 400 } else { 415 };
            assert_eq!(reply.status, status, "{path} {content_type:?}: {}", reply.text);
        }
    }
}

#[tokio::test]
async fn a_loopback_server_refuses_other_host_names_and_web_origins() {
    let config = Config {
        allowed_origins: vec!["http://localhost:3000".into()],
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;
    let port = addr.rsplit(':').next().unwrap();
    let call = r#"{"request":{"tool_id":"Calculator.Add","input":{"a":1,"b":2}}}"#;
    let json = "Content-Type: application/json\r\n";
    for (headers, expected) in [
        (format!("Host: {addr}\r\n{json}"), 200),
        (format!("Host: localhost:{port}\r\n{json}"), 200),
        // DNS rebinding: the page's own name, resolved to 127.0.0.1.
        (format!("Host: attacker.example:{port}\r\n{json}"), 403),
        (
            format!("Host: {addr}\r\nOrigin: https://attacker.example\r\n{json}"),
            403,
        ),
        (format!("Host: {addr}\r\nOrigin: null\r\n{json}"), 403),
        (
            format!("Host: {addr}\r\nOrigin: http://localhost:3000\r\n{json}"),
            200,
        ),
        // The server's own origin is same-origin (no page of another site can send it), and a
        // rebound name's "own origin" still fails on its Host.
        (
            format!("Host: {addr}\r\nOrigin: http://{addr}\r\n{json}"),
            200,
        ),
        (
            format!("Host: {addr}\r\nOrigin: http://127.0.0.1:1\r\n{json}"),
            403,
        ),
        (
            format!(
                "Host: attacker.example:{port}\r\nOrigin: http://attacker.example:{port}\r\n{json}"
            ),
            403,
        ),
    ] {
        let (status, body) = http_raw_with(&addr, "POST", "/tools/call", &headers, call).await;
        assert_eq!(status, expected, "{headers:?}: {body}");
        if status == 403 {
            let body: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(body["message"], "Forbidden");
            assert!(
                !body.to_string().contains("attacker"),
                "nothing echoed: {body}"
            );
        }
    }
    // The rule covers every route, /health included.
    let (status, _) =
        http_raw_with(&addr, "GET", "/health", "Host: attacker.example\r\n", "").await;
    assert_eq!(status, 403);
}

/// Whether `body`, a refusal's answer on `path`, has the shape of the protocol serving it.
fn shaped_as_its_protocol(path: &str, body: &Value) -> bool {
    match path {
        "/mcp" => {
            body["jsonrpc"] == "2.0" && body["id"].is_null() && body["error"]["code"].is_i64()
        }
        "/invoke" | "/tool_call_status" => body["error"]["kind"].is_string(),
        p if p.starts_with("/webhooks/") => body["error"].is_string(),
        _ => body["$schema"] == "urn:oxp:1.0" && body["message"].is_string(),
    }
}

/// `head` and `body` sent as they are (a body that never arrives whole, a malformed chunk):
/// the server's answer, as its status and JSON.
async fn sent_raw(addr: &str, head: &str, body: &str) -> (u16, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("{head}Host: {addr}\r\nContent-Type: application/json\r\n\r\n{body}");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    let read = stream.read_to_end(&mut reply);
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .unwrap()
        .unwrap();
    let reply = String::from_utf8(reply).unwrap();
    let status = reply[9..12].parse().unwrap();
    let body = reply.split_once("\r\n\r\n").unwrap().1;
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_refusal_in_front_of_the_routes_is_answered_in_the_shape_of_the_protocol_asked() {
    // A page's origin or a rebound name (403), another method (405), a body that never arrives
    // whole (408) or does not read (400).
    let config = Config {
        body_read_timeout: Duration::from_millis(300),
        ..test_config()
    };
    let (addr, _stop) = serve_on_loopback(config).await;
    let port = addr.rsplit(':').next().unwrap();
    let json = "Content-Type: application/json\r\n";
    let paths = [
        "/mcp",
        "/invoke",
        "/tool_call_status",
        "/tools/call",
        "/call",
        "/webhooks/demo",
    ];
    for path in paths {
        for (method, headers, status) in [
            (
                "POST",
                format!("Host: {addr}\r\nOrigin: https://attacker.example\r\n{json}"),
                403,
            ),
            (
                "POST",
                format!("Host: attacker.example:{port}\r\n{json}"),
                403,
            ),
            ("PATCH", format!("Host: {addr}\r\n{json}"), 405),
        ] {
            let (got, body) = http_raw_with(&addr, method, path, &headers, "{}").await;
            assert_eq!(got, status, "{path} {headers:?}: {body}");
            assert!(!body.contains("attacker"), "nothing echoed: {body}");
            let body: Value = serde_json::from_str(&body).unwrap();
            assert!(
                shaped_as_its_protocol(path, &body),
                "{path} {status}: {body}"
            );
        }
        let head = format!("POST {path} HTTP/1.1\r\n");
        let (status, body) = sent_raw(&addr, &format!("{head}Content-Length: 100\r\n"), "{").await;
        assert_eq!(status, 408, "{path}: {body}");
        assert!(shaped_as_its_protocol(path, &body), "{path} 408: {body}");
        let chunked = format!("{head}Transfer-Encoding: chunked\r\n");
        let (status, body) = sent_raw(&addr, &chunked, "zz\r\n{}\r\n0\r\n\r\n").await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(shaped_as_its_protocol(path, &body), "{path} 400: {body}");
    }
    // The app served by a program of its own refuses a page's request in the same shapes; so
    // is a path under a protocol's that no route serves (a client's URL with a segment too many).
    let app = example_app();
    for path in paths {
        for (uri, origin, status) in [
            (path.to_owned(), Some("https://attacker.example"), 403),
            (format!("{path}/nowhere"), None, 404),
        ] {
            let mut request = Request::post(&uri).header("content-type", "application/json");
            if let Some(origin) = origin {
                request = request.header("origin", origin);
            }
            let reply = send(&app, request.body(Body::from("{}")).unwrap()).await;
            assert_eq!(reply.status, status, "{uri}: {}", reply.text);
            assert!(
                shaped_as_its_protocol(path, &reply.json),
                "{uri}: {}",
                reply.text
            );
        }
    }
    // A path no protocol serves gets the plumbing's own answer.
    let (status, body) =
        http_raw_with(&addr, "GET", "/health", "Host: attacker.example\r\n", "").await;
    assert_eq!(status, 403);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["message"],
        "Forbidden"
    );
}

// ---- Bodies shaped to slip past the wire format ------------------------------------------------

#[tokio::test]
async fn every_object_of_the_wire_format_must_be_a_json_object() {
    let app = example_app();
    for body in [
        json!([null, {"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}}]),
        json!({"request": ["Calculator.Add@1.0.0", null, null, {"a": 1, "b": 2}]}),
        json!({"request": {"tool_id": "SMS.Send", "input": {"to": "+1", "message": "m"}, "context": [[], [["TWILIO_API_KEY", "v"]]]}}),
        json!({"request": {"tool_id": "SMS.Send", "input": {"to": "+1", "message": "m"}, "context": {"secrets": [["TWILIO_API_KEY", "v"]]}}}),
        json!({"request": {"tool_id": "SMS.Send", "input": {"to": "+1", "message": "m"}, "context": {"authorization": [["google", "t"]]}}}),
    ] {
        let reply = call(&app, body.clone()).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
        assert_eq!(reply.json["$schema"], "urn:oxp:1.0");
    }
    let reply = call(
        &app,
        json!({"request": {"tool_id": "Calculator.Add", "input": [1, 2]}}),
    )
    .await;
    assert_eq!(reply.status, 422, "an input that is not an object");
}

#[tokio::test]
async fn an_empty_call_id_is_refused_not_shared() {
    let reply = call(
        &example_app(),
        json!({"request": {"tool_id": "Calculator.Add", "call_id": "", "input": {"a": 1, "b": 2}}}),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json["developer_message"]
            .as_str()
            .unwrap()
            .contains("call_id")
    );
}

#[tokio::test]
async fn ids_are_bounded_in_length() {
    let app = example_app();
    let long = "x".repeat(300);
    for body in [
        json!({"request": {"tool_id": "Calculator.Add", "call_id": long, "input": {"a": 1, "b": 2}}}),
        json!({"request": {"tool_id": "Calculator.Add", "trace_id": long, "input": {"a": 1, "b": 2}}}),
        json!({"request": {"tool_id": long}}),
        json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}, "context": {"user_id": long}}}),
    ] {
        let reply = call(&app, body).await;
        assert_eq!(reply.status, 400, "{}", reply.text);
        assert!(!reply.text.contains(&long), "not echoed");
    }
    let receiver = Receiver::ok().await;
    let invocation = |id: &str, operation: &str| {
        json!({"operation": operation, "arguments": {"a": 1, "b": 2}, "id": id,
               "group_id": "g", "callback_url": receiver.url})
    };
    let reply = post(
        &app,
        "/invoke",
        invocation(&long, "Calculator_Add").to_string(),
    )
    .await;
    assert_eq!(reply.status, 400, "no usable id to answer to");
    let reply = post(&app, "/invoke", invocation("ok-id", &long).to_string()).await;
    assert_eq!(reply.status, 200, "acknowledged, then reported");
    let result = receiver.result().await;
    let error = rap_error(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["kind"], "malformed_invocation");
}

// ---- Someone else's call id --------------------------------------------------------------------

#[tokio::test]
async fn another_caller_replaying_a_call_id_neither_gets_the_result_nor_learns_it_exists() {
    let (tool, runs) = counter();
    let app = jwt_app(vec![tool]);
    let body = |token: &str| {
        json!({"request": {"tool_id": "T.Count", "call_id": "shared-key",
            "context": {"authorization": [{"id": "crm", "token": token}]}}})
    };
    let first = call_as(&app, "alice", &body("alice-crm-token")).await;
    assert_eq!(first.json["result"]["value"], 1, "{}", first.text);
    // Bob sends Alice's call id and input: his own call runs, Alice's result stays hers.
    let bob = call_as(&app, "bob", &body("bob-crm-token")).await;
    assert_eq!(bob.status, 200, "{}", bob.text);
    assert_eq!(bob.json["result"]["value"], 2);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // Alice's own repeat is replayed; with another token it is another call.
    let again = call_as(&app, "alice", &body("alice-crm-token")).await;
    assert_eq!(again.json["result"]["value"], 1);
    let other_token = call_as(&app, "alice", &body("another-token")).await;
    assert_eq!(other_token.status, 400, "{}", other_token.text);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn one_callers_many_calls_never_evict_another_callers_stored_outcome() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let tool = Tool::builder("T.Tick", "1.0.0").handler(move |_: NoInput, _: ToolContext| {
        let runs = counted.clone();
        async move { Ok::<_, ToolError>(runs.fetch_add(1, Ordering::SeqCst) + 1) }
    });
    let mut config = jwt_config();
    // About 2,000 outcomes in all, at most about 150 of one caller's.
    config.idempotency.max_bytes = 1 << 20;
    config.idempotency.max_bytes_per_caller = 64 * 1024;
    let app = jwt_app_with(vec![tool], config);
    let tick = |id: String| json!({"request": {"tool_id": "T.Tick", "call_id": id}});
    for i in 0..6_000 {
        if i == 3_000 {
            let bob = call_as(&app, "bob", &tick("bob-1".into())).await;
            assert_eq!(bob.json["result"]["value"], 3_001, "{}", bob.text);
        }
        call_as(&app, "alice", &tick(format!("a-{i}"))).await;
    }
    // With one pool for every caller (a share of the whole store), alice's calls evicted it.
    let again = call_as(&app, "bob", &tick("bob-1".into())).await;
    assert_eq!(again.json["result"]["value"], 3_001, "{}", again.text);
    assert_eq!(runs.load(Ordering::SeqCst), 6_001);
}

#[tokio::test]
async fn one_callers_slow_calls_never_hold_the_slot_another_callers_call_needs() {
    // Alice's calls wait on a gate the test holds; bob's answers at once.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = gate.clone();
    let slow = Tool::builder("T.Slow", "1.0.0").handler(move |_: NoInput, _: ToolContext| {
        let gate = held.clone();
        async move {
            drop(gate.acquire().await);
            Ok::<_, ToolError>(1)
        }
    });
    let quick = Tool::builder("T.Quick", "1.0.0")
        .handler(|_: NoInput, _: ToolContext| async { Ok::<_, ToolError>(2) });
    let mut config = jwt_config();
    config.max_concurrent_calls = 4;
    config.max_concurrent_calls_per_caller = 2;
    let app = jwt_app_with(vec![slow, quick], config);
    let call = |tool: &str| json!({"request": {"tool_id": tool}});
    let slow_call = call("T.Slow");
    let alice = futures_util::future::join_all((0..4).map(|_| call_as(&app, "alice", &slow_call)));
    let bob = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        // With one pool for every caller, alice's four calls held all four slots and bob's
        // waited for one (30 s, then busy).
        let started = std::time::Instant::now();
        let bob = tokio::time::timeout(
            Duration::from_secs(2),
            call_as(&app, "bob", &call("T.Quick")),
        )
        .await
        .expect("bob's call is not held up by alice's");
        assert_eq!(bob.json["result"]["value"], 2, "{}", bob.text);
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
        // Two of alice's run and two wait for hers: her own end lets them in.
        gate.add_permits(4);
    };
    let (alice, ()) = tokio::join!(alice, bob);
    for reply in alice {
        assert_eq!(reply.json["result"]["value"], 1, "{}", reply.text);
    }
}

/// Calls `body` with the bearer `token`.
async fn call_with_token(app: &App, token: &str, body: &Value) -> Reply {
    let request = Request::post("/tools/call")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(body.to_string()))
        .unwrap();
    send(app, request).await
}

#[tokio::test]
async fn a_tool_that_declares_caller_scopes_runs_only_for_tokens_that_grant_them() {
    let (tool, runs) = counter();
    let guarded = Tool::builder("Crm.Delete", "1.0.0")
        .caller_scopes(["crm:write"])
        .handler(|_: NoInput, _: ToolContext| async { Ok::<_, ToolError>("deleted") });
    let app = jwt_app(vec![tool, guarded]);
    let body = json!({"request": {"tool_id": "Crm.Delete"}});
    let reader = signed(json!({"sub": "ana", "scope": "crm:read"}));
    let refused = call_with_token(&app, &reader, &body).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(
        refused.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("insufficient_scope"),
        "{:?}",
        refused.headers
    );
    assert!(refused.text.contains("crm:write"), "{}", refused.text);
    let writer = signed(json!({"sub": "ana", "scope": "crm:read crm:write"}));
    let allowed = call_with_token(&app, &writer, &body).await;
    assert_eq!(
        allowed.json["result"]["value"], "deleted",
        "{}",
        allowed.text
    );
    // Over MCP too: the model reads which scope is missing; nothing ran.
    let mcp = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {reader}"))
        .body(Body::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "Crm_Delete", "arguments": {}}})
            .to_string(),
        ))
        .unwrap();
    let reply = send(&app, mcp).await;
    assert_eq!(reply.json["result"]["isError"], true, "{}", reply.text);
    assert!(reply.text.contains("crm:write"), "{}", reply.text);
    // Tools without caller scopes are not affected.
    let other = call_with_token(
        &app,
        &reader,
        &json!({"request": {"tool_id": "T.Count",
            "context": {"authorization": [{"id": "crm", "token": "t"}]}}}),
    )
    .await;
    assert_eq!(other.status, 200, "{}", other.text);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn tokens_without_a_subject_are_their_clients_never_one_shared_caller() {
    let (tool, runs) = counter();
    let app = jwt_app(vec![tool]);
    let body = json!({"request": {"tool_id": "T.Count", "call_id": "nightly-sync",
        "context": {"authorization": [{"id": "crm", "token": "t"}]}}});
    // Two client-credentials tokens (no `sub`): each is its own caller, so the second client's
    // call with the same call id runs, rather than replaying the first client's result.
    let first = call_with_token(&app, &signed(json!({"client_id": "billing"})), &body).await;
    assert_eq!(first.json["result"]["value"], 1, "{}", first.text);
    let second = call_with_token(&app, &signed(json!({"azp": "reports"})), &body).await;
    assert_eq!(second.json["result"]["value"], 2, "{}", second.text);
    // The first client's own repeat is its replay.
    let again = call_with_token(&app, &signed(json!({"client_id": "billing"})), &body).await;
    assert_eq!(again.json["result"]["value"], 1, "{}", again.text);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // A token that names no one (no `sub`, `client_id` or `azp`, or empty ones) is refused.
    for claims in [json!({}), json!({"sub": ""}), json!({"client_id": " "})] {
        let reply = call_with_token(&app, &signed(claims.clone()), &body).await;
        assert_eq!(reply.status, 401, "{claims}: {}", reply.text);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn with_authentication_on_a_caller_acts_for_itself_by_default() {
    let whoami =
        Tool::builder("Auth.WhoAmI", "1.0.0").handler(|_: NoInput, ctx: ToolContext| async move {
            Ok::<_, ToolError>(json!({"user_id": ctx.user_id}))
        });
    let app = jwt_app(vec![whoami]);
    let reply = call_as(
        &app,
        "alice",
        &json!({"request": {"tool_id": "Auth.WhoAmI"}}),
    )
    .await;
    assert_eq!(reply.json["result"]["value"]["user_id"], "alice");
    let reply = call_as(
        &app,
        "alice",
        &json!({"request": {"tool_id": "Auth.WhoAmI", "context": {"user_id": "bob"}}}),
    )
    .await;
    assert_eq!(reply.status, 400);
}

// ---- Nothing unbounded -------------------------------------------------------------------------

#[tokio::test]
async fn the_rate_limit_counts_malformed_invocations_and_a_varying_user_id_does_not_reset_it() {
    let config = test_config_with(&[("OXP_RAP_RATE_LIMIT", "2/min")]);
    let app = app_with(common::example_tools::registry().unwrap(), config);
    let receiver = Receiver::ok().await;
    let invocation = |id: &str, user: &str, operation: &str| {
        json!({"operation": operation, "arguments": {"a": 1, "b": 2}, "id": id, "group_id": "g",
               "callback_url": receiver.url, "user_id": user})
    };
    for (body, status) in [
        (invocation("i1", "u1", "No_Such_Operation"), 200),
        (invocation("i2", "u2", "Calculator_Add"), 200),
        (invocation("i3", "u3", "Calculator_Add"), 429),
    ] {
        assert_eq!(post(&app, "/invoke", body.to_string()).await.status, status);
    }
    let hits = receiver.wait_for(2).await;
    let kinds: Vec<Value> = hits
        .iter()
        .map(|h| {
            let text = h.body["text"].as_str().unwrap();
            rap_error(text).map_or(json!("success"), |v| v["error"]["kind"].clone())
        })
        .collect();
    assert!(kinds.contains(&json!("unknown_operation")), "{kinds:?}");
    assert!(kinds.contains(&json!("success")), "{kinds:?}");
}

#[tokio::test]
async fn one_callers_dead_letters_never_rotate_another_callers_letters_away() {
    // Every callback refuses its result (a 4xx: one attempt, then a dead letter).
    let receiver = Receiver::start(&[], 400).await;
    let file = std::env::temp_dir().join(format!("oxp-dead-{}.jsonl", uuid::Uuid::new_v4()));
    let letters = file.clone();
    let registry = common::example_tools::registry().unwrap();
    let app = build(
        App::builder(registry)
            .config(jwt_config())
            .secret("JWT_KEY", HS_KEY)
            .configure::<oxp_lambda::protocols::Rap>(move |r| {
                // About sixteen letters a file, a quarter of it each caller's.
                r.dead_letter_file = letters;
                r.dead_letter_max_bytes = 8 * 1024;
                r.dead_letter_max_bytes_per_caller = 2 * 1024;
            }),
    );
    let invoke_as = |sub: &str, id: &str| {
        let body = json!({"operation": "Calculator_Add", "arguments": {"a": 1, "b": 2}, "id": id,
                          "group_id": "g", "callback_url": receiver.url});
        let request = Request::post("/invoke")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", token(sub)))
            .body(Body::from(body.to_string()))
            .unwrap();
        send(&app, request)
    };
    assert_eq!(invoke_as("bob", "bob-1").await.status, 200);
    assert_eq!(app.drain(Duration::from_secs(10)).await, 0);
    // Mallory's results fill the file three times over: with one pool for every caller it was
    // rotated twice, and bob's letter went with the second rotation.
    for n in 0..60 {
        assert_eq!(invoke_as("mallory", &format!("m-{n}")).await.status, 200);
    }
    assert_eq!(app.drain(Duration::from_secs(30)).await, 0);
    // Mallory's share is full, bob's has room: his next letter is recorded.
    assert_eq!(invoke_as("bob", "bob-2").await.status, 200);
    assert_eq!(app.drain(Duration::from_secs(10)).await, 0);
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.contains("\"bob-1\""), "bob's letter is kept");
    assert!(kept.contains("\"bob-2\""), "bob's share is his own");
    assert!(kept.contains("\"m-0\""), "mallory's first letters are kept");
    let rotated = file.with_extension("jsonl.1");
    assert!(!rotated.exists(), "nothing was rotated");
    let _ = std::fs::remove_file(&file);
}

#[tokio::test]
async fn a_full_in_process_queue_refuses_with_503_and_retry_after() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let held = gate.clone();
    let wait = Tool::builder("T.Wait", "1.0.0").handler(move |_: NoInput, _: ToolContext| {
        let gate = held.clone();
        async move {
            gate.acquire().await.unwrap().forget();
            Ok::<_, ToolError>(())
        }
    });
    let config = test_config_with(&[("OXP_RAP_MAX_PENDING", "1")]);
    let app = app_with(Registry::builder().tool(wait).build().unwrap(), config);
    let receiver = Receiver::ok().await;
    let invocation = |id: &str| json!({"operation": "T_Wait", "arguments": {}, "id": id, "group_id": "g", "callback_url": receiver.url});
    assert_eq!(
        post(&app, "/invoke", invocation("a").to_string())
            .await
            .status,
        200
    );
    let full = post(&app, "/invoke", invocation("b").to_string()).await;
    assert_eq!(full.status, 503, "{}", full.text);
    assert_eq!(full.headers["retry-after"], "1");
    assert_eq!(full.json["error"]["kind"], "busy");
    assert_eq!(full.json["error"]["can_retry"], true);
    gate.add_permits(1);
    assert_eq!(app.drain(Duration::from_secs(10)).await, 0);
    assert_eq!(
        post(&app, "/invoke", invocation("c").to_string())
            .await
            .status,
        200
    );
    gate.add_permits(1);
    assert_eq!(app.drain(Duration::from_secs(10)).await, 0);
}

#[tokio::test]
async fn a_404_does_not_repeat_the_path_it_was_asked_for() {
    let app = example_app();
    let reply = get(&app, "/no-such-route-%3Cscript%3E-TWILIO_API_KEY=sk_live").await;
    assert_eq!(reply.status, 404);
    assert!(!reply.text.contains("no-such-route"), "{}", reply.text);
    assert!(!reply.text.contains("sk_live"), "{}", reply.text);
}
