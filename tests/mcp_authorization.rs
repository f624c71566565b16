//! MCP authorization discovery (the MCP authorization spec, RFC 9728) with authentication on:
//! the protected resource metadata without a token, the 401's `resource_metadata` challenge,
//! 403 `insufficient_scope`, and tokens for another audience refused. The same flow with a
//! real OAuth server and the MCP Python SDK's discovery is `tests/mcp_oauth.rs`.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use futures_util::FutureExt;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oxp_lambda::Registry;
use oxp_lambda::config::{AuthConfig, JwtConfig, JwtKeys};
use serde_json::{Value, json};

const KEY: &str = "an-hs256-signing-key-of-32-bytes!!";
const ISSUER: &str = "https://issuer.test/";

fn token(claims: Value) -> String {
    let mut claims = claims;
    claims["exp"] = json!(jsonwebtoken::get_current_timestamp() + 300);
    claims["iss"] = json!(ISSUER);
    claims["sub"] = json!("agent-1");
    oxp_lambda::__private::install_jwt_crypto();
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(KEY.as_bytes()).unwrap(),
    )
    .unwrap()
}

/// The example tools with JWT auth for audience `http://127.0.0.1:8080/mcp` (unless `vars` set
/// `OXP_AUTH`), and the variables `vars`.
fn app(vars: &[(&str, &str)]) -> App {
    let mut vars = vars.to_vec();
    vars.extend([
        ("OXP_MCP_AUTHORIZATION_SERVERS", ISSUER),
        ("OXP_MCP_SCOPES", "tools:call"),
    ]);
    let auth_off = vars.iter().any(|(k, _)| *k == "OXP_AUTH");
    let mut config = test_config_with(&vars);
    config.auth = AuthConfig::Jwt(JwtConfig {
        keys: JwtKeys::Hs256 {
            secret_id: "JWT_KEY".into(),
        },
        issuer: Some(ISSUER.into()),
        audience: Some("http://127.0.0.1:8080/mcp".into()),
        client_id: None,
        token_use: None,
        leeway_secs: 5,
        bind_user_id: false,
    });
    if auth_off {
        // Required scopes need authentication: without it the server refuses to start.
        config.auth = AuthConfig::None { explicit: true };
        config.required_scopes.clear();
    }
    let registry = Registry::new(common::example_tools::tools()).unwrap();
    build(App::builder(registry).config(config).secret("JWT_KEY", KEY))
}

/// A request as a client on this machine sends it (`Host: 127.0.0.1:8080`).
async fn request(app: &App, method: &str, path: &str, bearer: Option<&str>) -> Reply {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = bearer {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let body = if method == "POST" {
        Body::from(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
    } else {
        Body::empty()
    };
    send(app, request.body(body).unwrap()).await
}

fn challenge(reply: &Reply) -> String {
    reply.headers["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_401_names_the_protected_resource_metadata_and_the_scopes() {
    let reply = request(&app(&[]), "POST", "/mcp", None).await;
    assert_eq!(reply.status, 401);
    assert_eq!(
        challenge(&reply),
        "Bearer resource_metadata=\"http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp\", scope=\"tools:call\""
    );
}

#[tokio::test]
async fn the_metadata_is_served_without_a_token_at_both_well_known_paths() {
    let app = app(&[]);
    let want = json!({
        "resource": "http://127.0.0.1:8080/mcp",
        "authorization_servers": [ISSUER],
        "scopes_supported": ["tools:call"],
        "bearer_methods_supported": ["header"],
        "resource_name": "oxp-lambda",
    });
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = request(&app, "GET", path, None).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.json, want, "{path}");
    }
    let reply = request(
        &app,
        "GET",
        "/.well-known/oauth-protected-resource/other",
        None,
    )
    .await;
    assert_eq!(reply.status, 404);
}

#[tokio::test]
async fn behind_a_base_path_the_resource_and_the_challenge_keep_it() {
    let app = app(&[("OXP_BASE_PATH", "/prod")]);
    let reply = request(&app, "POST", "/prod/mcp", None).await;
    assert!(
        challenge(&reply).starts_with(
            "Bearer resource_metadata=\"http://127.0.0.1:8080/prod/.well-known/oauth-protected-resource/mcp\""
        ),
        "{}",
        challenge(&reply)
    );
    let meta = request(
        &app,
        "GET",
        "/prod/.well-known/oauth-protected-resource/mcp",
        None,
    )
    .await;
    assert_eq!(meta.json["resource"], "http://127.0.0.1:8080/prod/mcp");
    // A client that inserts the well-known segment before the path (RFC 9728 section 3.1).
    let inserted = request(
        &app,
        "GET",
        "/.well-known/oauth-protected-resource/prod/mcp",
        None,
    )
    .await;
    assert_eq!(inserted.json["resource"], "http://127.0.0.1:8080/prod/mcp");
}

#[tokio::test]
async fn a_configured_resource_url_is_the_resource_with_its_metadata_beside_it() {
    let app = app(&[(
        "OXP_MCP_RESOURCE_URL",
        "https://tools.example.com/agents/mcp",
    )]);
    let meta = request(
        &app,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        None,
    )
    .await;
    assert_eq!(
        meta.json["resource"],
        "https://tools.example.com/agents/mcp"
    );
    let reply = request(&app, "POST", "/mcp", None).await;
    assert!(challenge(&reply).contains(
        "resource_metadata=\"https://tools.example.com/agents/.well-known/oauth-protected-resource/mcp\""
    ));
}

#[tokio::test]
async fn a_token_without_the_required_scope_is_a_403_insufficient_scope() {
    let app = app(&[]);
    let aud = "http://127.0.0.1:8080/mcp";
    let narrow = token(json!({"aud": aud, "scope": "tools:list other"}));
    let reply = request(&app, "POST", "/mcp", Some(&narrow)).await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    let header = challenge(&reply);
    assert!(
        header.starts_with("Bearer error=\"insufficient_scope\", scope=\"tools:call\""),
        "{header}"
    );
    assert!(header.contains("resource_metadata=\""), "{header}");
    for granted in [json!("tools:call other"), json!(null)] {
        let claims = if granted.is_null() {
            json!({"aud": aud, "scp": ["other", "tools:call"]})
        } else {
            json!({"aud": aud, "scope": granted})
        };
        let reply = request(&app, "POST", "/mcp", Some(&token(claims))).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert!(reply.json["result"]["tools"].is_array());
    }
}

#[tokio::test]
async fn a_token_for_another_audience_is_refused() {
    let app = app(&[]);
    let other = token(json!({"aud": "https://other.example/mcp", "scope": "tools:call"}));
    let reply = request(&app, "POST", "/mcp", Some(&other)).await;
    assert_eq!(reply.status, 401);
    // RFC 6750 3.1, as OAuth 2.1 5.3 (which MCP's authorization names) has it: a token that
    // failed is an invalid_token; the challenge still names the metadata.
    assert!(
        challenge(&reply).starts_with("Bearer error=\"invalid_token\", resource_metadata="),
        "{}",
        challenge(&reply)
    );
}

#[tokio::test]
async fn without_authentication_there_is_no_metadata_to_discover() {
    let app = app(&[("OXP_AUTH", "none")]);
    let reply = request(
        &app,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        None,
    )
    .await;
    assert_eq!(reply.status, 404);
    let reply = request(&app, "POST", "/mcp", None).await;
    assert_eq!(reply.status, 200);
}

/// `path` with `body`, as the client on this machine sends it, with `bearer`.
async fn post_as(app: &App, path: &str, body: Value, bearer: &str) -> Reply {
    let request = Request::post(path)
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {bearer}"))
        .body(Body::from(body.to_string()))
        .unwrap();
    send(app, request).await
}

#[tokio::test]
async fn the_required_scope_guards_every_route_that_reaches_a_tool_not_only_mcp() {
    let app = app(&[]);
    let aud = "http://127.0.0.1:8080/mcp";
    let narrow = token(json!({"aud": aud, "scope": "tools:list"}));
    let add = json!({"a": 1, "b": 2});
    let oxp = json!({"request": {"tool_id": "Calculator.Add", "input": add}});
    let rap = json!({"operation": "Calculator_Add", "arguments": add, "id": "c1",
                     "group_id": "g1", "callback_url": "http://127.0.0.1:9/callback"});
    for (path, body) in [("/tools/call", &oxp), ("/call", &oxp), ("/invoke", &rap)] {
        let reply = post_as(&app, path, body.clone(), &narrow).await;
        assert_eq!(reply.status, 403, "{path}: {}", reply.text);
        assert!(
            challenge(&reply)
                .starts_with("Bearer error=\"insufficient_scope\", scope=\"tools:call\""),
            "{path}"
        );
    }
    // Each in its protocol's shape: OXP's error object, RAP's error kind.
    let reply = post_as(&app, "/tools/call", oxp.clone(), &narrow).await;
    assert_eq!(reply.json["$schema"], "urn:oxp:1.0", "{}", reply.text);
    let reply = post_as(&app, "/invoke", rap.clone(), &narrow).await;
    assert_eq!(
        reply.json["error"]["kind"], "insufficient_scope",
        "{}",
        reply.text
    );
    // Listing the tools too.
    let reply = request(&app, "GET", "/tools", Some(&narrow)).await;
    assert_eq!(reply.status, 403, "{}", reply.text);
    // With the scope, every route serves.
    let granted = token(json!({"aud": aud, "scope": "tools:call"}));
    let reply = post_as(&app, "/tools/call", oxp, &granted).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let reply = post_as(&app, "/invoke", rap, &granted).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[test]
fn required_scopes_without_authentication_stop_the_start() {
    let config = test_config_with(&[("OXP_AUTH", "none"), ("OXP_REQUIRED_SCOPES", "tools:call")]);
    let registry = Registry::new(common::example_tools::tools()).unwrap();
    let error = App::builder(registry)
        .config(config)
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .expect_err("required scopes need authentication");
    assert!(error.to_string().contains("OXP_REQUIRED_SCOPES"), "{error}");
}
