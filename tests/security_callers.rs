//! The server as one caller meets it against another: a call id someone else sent, a stored
//! outcome another caller's calls would evict, the slots another caller's slow calls would hold,
//! scopes and subjects, dead letters. Each test is a row of the table in docs/security.md.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::auth::call_with;
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

/// `T.Tick`: counts its runs and answers the run number, needing nothing.
fn ticks() -> (Tool, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let tool = Tool::builder("T.Tick", "1.0.0").handler(move |_: NoInput, _: ToolContext| {
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
    let (tool, runs) = ticks();
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

#[tokio::test]
async fn a_tool_that_declares_caller_scopes_runs_only_for_tokens_that_grant_them() {
    let (tool, runs) = counter();
    let guarded = Tool::builder("Crm.Delete", "1.0.0")
        .caller_scopes(["crm:write"])
        .handler(|_: NoInput, _: ToolContext| async { Ok::<_, ToolError>("deleted") });
    let app = jwt_app(vec![tool, guarded]);
    let body = json!({"request": {"tool_id": "Crm.Delete"}});
    let reader = signed(json!({"sub": "ana", "scope": "crm:read"}));
    let refused = call_with(&app, &reader, &body).await;
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
    let allowed = call_with(&app, &writer, &body).await;
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
    let other = call_with(
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
    let first = call_with(&app, &signed(json!({"client_id": "billing"})), &body).await;
    assert_eq!(first.json["result"]["value"], 1, "{}", first.text);
    let second = call_with(&app, &signed(json!({"azp": "reports"})), &body).await;
    assert_eq!(second.json["result"]["value"], 2, "{}", second.text);
    // The first client's own repeat is its replay.
    let again = call_with(&app, &signed(json!({"client_id": "billing"})), &body).await;
    assert_eq!(again.json["result"]["value"], 1, "{}", again.text);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // A token that names no one (no `sub`, `client_id` or `azp`, or empty ones) is refused.
    for claims in [json!({}), json!({"sub": ""}), json!({"client_id": " "})] {
        let reply = call_with(&app, &signed(claims.clone()), &body).await;
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

/// MCP's "Servers MUST rate limit tool invocations": each caller has its own allowance of calls
/// (`OXP_RATE_LIMIT`), counted over every protocol together; past it a call is refused as
/// retryable with the wait and runs nothing, while another caller's calls go on.
#[tokio::test]
async fn each_caller_makes_at_most_its_rate_of_calls_over_every_protocol_and_others_go_on() {
    let (tool, runs) = ticks();
    let mut config = jwt_config();
    config.rate_limit = oxp_lambda::config::RateLimit::parse("2/min");
    let app = jwt_app_with(vec![tool], config);
    let oxp = json!({"request": {"tool_id": "T.Tick"}});
    let mcp = |caller: &str| {
        let bearer = format!("Bearer {}", token(caller));
        let app = app.clone();
        async move {
            let message = common::mcp::rpc(1, "tools/call", json!({"name": "T_Tick"}));
            let headers = [
                ("mcp-protocol-version", "2025-06-18"),
                ("authorization", bearer.as_str()),
            ];
            let (status, _, text) =
                common::mcp::post_mcp(&app, &message.to_string(), &headers).await;
            assert_eq!(status, 200, "{text}");
            serde_json::from_str::<Value>(&text).unwrap()["result"].clone()
        }
    };
    let first = call_as(&app, "alice", &oxp).await;
    assert_eq!(first.json["result"]["success"], true, "{}", first.text);
    assert_eq!(mcp("alice").await["isError"], false);

    let refused = call_as(&app, "alice", &oxp).await;
    assert_eq!(refused.status, 200, "{}", refused.text);
    let error = &refused.json["result"]["error"];
    assert_eq!(refused.json["result"]["success"], false);
    assert_eq!(error["can_retry"], true);
    let wait = error["retry_after_ms"].as_u64().unwrap();
    assert!((20_000..=30_000).contains(&wait), "{wait}");
    let over_mcp = mcp("alice").await;
    assert_eq!(over_mcp["isError"], true, "{over_mcp}");
    let told: Value =
        serde_json::from_str(over_mcp["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(told["can_retry"], true, "{told}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "a refused call runs nothing"
    );

    let bob = call_as(&app, "bob", &oxp).await;
    assert_eq!(
        bob.json["result"]["success"], true,
        "another caller's allowance is its own"
    );
}
