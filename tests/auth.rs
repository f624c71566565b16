//! Bearer authentication of the server (`OXP_AUTH=jwt`) with an HS256 key: a token accepted or
//! refused alike on every endpoint and protocol, the user it names, and no token or secret in a
//! log or a body. Keys from a JWKS are in `auth_jwks.rs`, what fails at start in
//! `auth_start.rs`, the API Gateway authorizer mode in `auth_gateway.rs`, the rig in
//! `common/auth.rs`.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use base64::Engine;
use common::auth::*;
use common::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oxp_lambda::config::{AuthConfig, JwtConfig, JwtKeys};
use serde_json::{Value, json};

#[tokio::test]
async fn a_valid_hs256_token_is_accepted_on_every_endpoint() {
    let app = hs_app(false);
    let token = sign(
        Algorithm::HS256,
        None,
        &claims("alice"),
        &EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap(),
    );
    let reply = list_with(&app, Some(&format!("Bearer {token}"))).await;
    assert_eq!(reply.status, 200);
    let reply = call_with(
        &app,
        &token,
        json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}}),
    )
    .await;
    assert_eq!(reply.json["result"]["value"], 3);
}

#[tokio::test]
async fn a_token_that_fails_is_an_invalid_token_on_every_protocol_and_no_token_is_not() {
    // RFC 6750 3.1 (OAuth 2.1 5.3, which MCP's authorization names): the challenge says
    // `invalid_token` when a bearer token was sent and failed, and no error without one.
    let app = hs_app(false);
    let routes = [
        (
            "/tools/call",
            json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}}),
        ),
        (
            "/mcp",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ),
        (
            "/invoke",
            json!({"operation": "Calculator_Add", "arguments": {"a": 1, "b": 2},
            "id": "call_1", "callback_url": "https://runtime.example/cb", "group_id": "t"}),
        ),
    ];
    for (path, body) in routes {
        for (authorization, says_invalid) in [(None, false), (Some("Bearer not.a.token"), true)] {
            let reply = post_with(&app, path, authorization, &body).await;
            assert_eq!(reply.status, 401, "{path}: {}", reply.text);
            let challenge = reply.headers["www-authenticate"].to_str().unwrap();
            assert!(challenge.starts_with("Bearer"), "{path}: {challenge}");
            assert_eq!(
                challenge.contains("error=\"invalid_token\""),
                says_invalid,
                "{path} with {authorization:?}: {challenge}"
            );
        }
    }
}

/// A `tools/call` of `name` over MCP, with `authorization` if any.
async fn mcp_call(app: &App, authorization: Option<&str>, name: &str) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": {}}});
    post_with(app, "/mcp", authorization, &body).await
}

/// `body` POSTed as JSON to `path` (taking an MCP answer too), with `authorization` if any.
async fn post_with(app: &App, path: &str, authorization: Option<&str>, body: &Value) -> Reply {
    let mut request = Request::post(path)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    send(app, request.body(Body::from(body.to_string())).unwrap()).await
}

#[tokio::test]
async fn mcp_requires_a_bearer_token_and_its_subject_is_the_user() {
    for bind_user_id in [true, false] {
        let app = hs_app(bind_user_id);
        let reply = mcp_call(&app, None, "Auth_WhoAmI").await;
        assert_eq!(reply.status, 401, "{}", reply.text);
        assert_eq!(
            reply.headers["www-authenticate"],
            "Bearer resource_metadata=\"http://localhost/.well-known/oauth-protected-resource/mcp\"",
            "the MCP authorization spec's challenge (tests/mcp_authorization.rs)"
        );
        assert_eq!(reply.json["jsonrpc"], "2.0");
        let reply = mcp_call(&app, Some("Bearer not.a.token"), "Auth_WhoAmI").await;
        assert_eq!(reply.status, 401);
        assert!(!reply.text.contains("not.a.token"));
        assert_eq!(
            reply.headers["www-authenticate"],
            "Bearer error=\"invalid_token\", resource_metadata=\"http://localhost/.well-known/oauth-protected-resource/mcp\"",
            "RFC 6750 3.1: a token that failed is an invalid_token (MCP's authorization names OAuth 2.1 5.3)"
        );

        let token = sign(
            Algorithm::HS256,
            None,
            &claims("alice"),
            &EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap(),
        );
        let reply = mcp_call(&app, Some(&format!("Bearer {token}")), "Auth_WhoAmI").await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let result = &reply.json["result"];
        assert_eq!(result["isError"], false, "{result}");
        let output: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(output["user_id"], "alice");
    }
}

#[tokio::test]
async fn health_needs_no_authentication() {
    let app = hs_app(false);
    assert_eq!(get(&app, "/health").await.status, 200);
}

#[tokio::test]
async fn missing_malformed_and_invalid_tokens_are_rejected_without_saying_why() {
    let app = hs_app(false);
    let key = EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap();
    let wrong_key =
        EncodingKey::from_secret(b"another-key-of-sufficient-length-0123456789").unwrap();
    let mut cases: Vec<(&str, String)> = vec![
        ("missing header", String::new()),
        (
            "expired",
            sign(
                Algorithm::HS256,
                None,
                &json!({"sub": "a", "exp": now() - 60, "iss": "https://issuer.test/", "aud": "oxp-tools"}),
                &key,
            ),
        ),
        (
            "not yet valid",
            sign(
                Algorithm::HS256,
                None,
                &json!({"sub": "a", "exp": now() + 600, "nbf": now() + 300, "iss": "https://issuer.test/", "aud": "oxp-tools"}),
                &key,
            ),
        ),
        (
            "no exp",
            sign(
                Algorithm::HS256,
                None,
                &json!({"sub": "a", "iss": "https://issuer.test/", "aud": "oxp-tools"}),
                &key,
            ),
        ),
        (
            "wrong issuer",
            sign(
                Algorithm::HS256,
                None,
                &json!({"sub": "a", "exp": now() + 60, "iss": "https://evil.test/", "aud": "oxp-tools"}),
                &key,
            ),
        ),
        (
            "wrong audience",
            sign(
                Algorithm::HS256,
                None,
                &json!({"sub": "a", "exp": now() + 60, "iss": "https://issuer.test/", "aud": "other"}),
                &key,
            ),
        ),
        (
            // jsonwebtoken checks `iss` and `aud` only when present: both are required here.
            "no issuer",
            sign(
                Algorithm::HS256,
                None,
                &json!({"sub": "a", "exp": now() + 60, "aud": "oxp-tools"}),
                &key,
            ),
        ),
        (
            "no audience",
            sign(
                Algorithm::HS256,
                None,
                &json!({"sub": "a", "exp": now() + 60, "iss": "https://issuer.test/"}),
                &key,
            ),
        ),
        (
            "wrong signature",
            sign(Algorithm::HS256, None, &claims("a"), &wrong_key),
        ),
        (
            "another HMAC algorithm",
            sign(Algorithm::HS512, None, &claims("a"), &key),
        ),
        (
            // RFC 7519: `aud` is a string or an array of strings; a number is no audience,
            // not one to skip the comparison for.
            "an audience that is no string",
            sign(
                Algorithm::HS256,
                None,
                &json!({"sub": "a", "exp": now() + 60, "iss": "https://issuer.test/", "aud": 1234}),
                &key,
            ),
        ),
        (
            "an issuer that is no string",
            sign(
                Algorithm::HS256,
                None,
                &json!({"sub": "a", "exp": now() + 60, "iss": 1234, "aud": "oxp-tools"}),
                &key,
            ),
        ),
        (
            // RFC 7515 4.1.11: a `crit` extension the recipient does not understand makes the
            // JWS invalid.
            "a critical header extension this server does not know",
            {
                let mut header = Header::new(Algorithm::HS256);
                header.crit = Some(vec!["x-unknown".into()]);
                header.extras.insert("x-unknown", 1);
                jsonwebtoken::encode(&header, &claims("a"), &key).unwrap()
            },
        ),
        ("malformed", "not.a.jwt".into()),
        ("garbage", "%%%".into()),
    ];
    // alg: none, with an empty signature
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    cases.push((
        "alg none",
        format!(
            "{}.{}.",
            b64(&json!({"alg": "none", "typ": "JWT"})),
            b64(&claims("a"))
        ),
    ));
    for (what, token) in &cases {
        let header = (!token.is_empty()).then(|| format!("Bearer {token}"));
        let reply = list_with(&app, header.as_deref()).await;
        assert_eq!(reply.status, 401, "a token with {what} was accepted");
        assert_rejected(&reply, token);
    }
    // Other schemes are not bearer tokens.
    let reply = list_with(&app, Some("Basic YWxpY2U6c2VjcmV0")).await;
    assert_refused(&reply, "YWxpY2U6c2VjcmV0", "Bearer");
}

#[tokio::test]
async fn cognito_access_tokens_are_checked_by_client_id_and_token_use() {
    let config = JwtConfig {
        audience: None,
        client_id: Some("app-client-1".into()),
        token_use: Some("access".into()),
        ..jwt_config(
            JwtKeys::Hs256 {
                secret_id: "JWT_KEY".into(),
            },
            false,
        )
    };
    let app = app(AuthConfig::Jwt(config));
    let key = EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap();
    let token = |extra: Value| {
        let mut claims = json!({"sub": "a", "exp": now() + 60, "iss": "https://issuer.test/"});
        claims
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        sign(Algorithm::HS256, None, &claims, &key)
    };
    let good = token(json!({"client_id": "app-client-1", "token_use": "access"}));
    assert_eq!(
        list_with(&app, Some(&format!("Bearer {good}")))
            .await
            .status,
        200
    );
    for bad in [
        token(json!({"client_id": "other-client", "token_use": "access"})),
        token(json!({"client_id": "app-client-1", "token_use": "id"})),
        token(json!({"token_use": "access"})),
    ] {
        assert_rejected(&list_with(&app, Some(&format!("Bearer {bad}"))).await, &bad);
    }
}

#[tokio::test]
async fn expiry_allows_a_small_leeway() {
    let app = hs_app(false);
    let key = EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap();
    let just_expired =
        json!({"sub": "a", "exp": now() - 2, "iss": "https://issuer.test/", "aud": "oxp-tools"});
    assert_eq!(
        list_with(
            &app,
            Some(&format!(
                "Bearer {}",
                sign(Algorithm::HS256, None, &just_expired, &key)
            ))
        )
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn user_id_is_bound_to_the_token_subject_when_configured() {
    let app = hs_app(true);
    let token = sign(
        Algorithm::HS256,
        None,
        &claims("alice"),
        &EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap(),
    );
    let reply = call_with(&app, &token, json!({"request": {"tool_id": "Auth.WhoAmI"}})).await;
    assert_eq!(
        reply.json["result"]["value"]["user_id"], "alice",
        "defaults to sub"
    );
    let reply = call_with(
        &app,
        &token,
        json!({"request": {"tool_id": "Auth.WhoAmI", "context": {"user_id": "alice"}}}),
    )
    .await;
    assert_eq!(reply.status, 200);
    let reply = call_with(
        &app,
        &token,
        json!({"request": {"tool_id": "Auth.WhoAmI", "context": {"user_id": "mallory"}}}),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json["message"],
        "The user ID does not match the authenticated caller"
    );
    // Without binding, the caller names the user.
    let free = hs_app(false);
    let reply = call_with(
        &free,
        &token,
        json!({"request": {"tool_id": "Auth.WhoAmI", "context": {"user_id": "bob"}}}),
    )
    .await;
    assert_eq!(reply.json["result"]["value"]["user_id"], "bob");
}

#[tokio::test]
async fn secrets_and_tokens_never_reach_logs_or_bodies() {
    let captured = Captured::global();

    let app = hs_app(false);
    let good = sign(
        Algorithm::HS256,
        None,
        &claims("alice"),
        &EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap(),
    );
    let bad = sign(
        Algorithm::HS256,
        None,
        &claims("alice"),
        &EncodingKey::from_secret(b"wrong-key-wrong-key-wrong-key-0123").unwrap(),
    );
    let mut bodies = String::new();
    bodies += &list_with(&app, Some(&format!("Bearer {bad}"))).await.text;
    for body in [
        json!({"request": {"tool_id": "SMS.Send", "input": {"to": "+1", "message": "m"}, "context": {"secrets": [{"id": "TWILIO_API_KEY", "value": "CLIENT-SECRET-VALUE"}], "authorization": [{"id": "google", "token": "OAUTH-TOKEN-VALUE"}]}}}),
        json!({"request": {"tool_id": "SMS.Send", "input": {"to": 1}, "context": {"secrets": [{"id": "TWILIO_API_KEY", "value": "CLIENT-SECRET-VALUE"}]}}}),
        json!({"request": {"tool_id": "Nope.Tool", "context": {"secrets": [{"id": "X", "value": "CLIENT-SECRET-VALUE"}]}}}),
    ] {
        bodies += &call_with(&app, &good, body).await.text;
    }
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("oxp::call") && logs.contains("unauthenticated"),
        "logs were captured: {logs}"
    );
    for needle in [
        good.as_str(),
        bad.as_str(),
        HS_KEY,
        "CLIENT-SECRET-VALUE",
        "OAUTH-TOKEN-VALUE",
    ] {
        assert!(!logs.contains(needle), "log leaks {needle}: {logs}");
        assert!(!bodies.contains(needle), "body leaks {needle}: {bodies}");
    }
}
