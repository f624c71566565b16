//! Bearer authentication of the server (`OXP_AUTH`), with keys generated here and a JWKS served
//! by a test server on loopback; and the API Gateway authorizer mode.

use crate::common;

use aws_lc_rs::encoding::AsDer;
use axum::body::Body;
use axum::http::Request;
use base64::Engine;
use common::*;
use futures_util::FutureExt;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oxp_lambda::config::{AuthConfig, JwtConfig, JwtKeys};
use oxp_lambda::{Config, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HS_KEY: &str = "hs256-signing-key-that-is-long-enough-0123456789";

fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

fn ec_key() -> EncodingKey {
    let pair = aws_lc_rs::signature::EcdsaKeyPair::generate(
        &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
    )
    .unwrap();
    EncodingKey::from_ec_pem(pem("PRIVATE KEY", pair.to_pkcs8v1().unwrap().as_ref()).as_bytes())
        .unwrap()
}

fn rsa_key() -> EncodingKey {
    let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let der = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der<'_>>::as_der(&pair).unwrap();
    EncodingKey::from_rsa_pem(pem("PRIVATE KEY", der.as_ref()).as_bytes()).unwrap()
}

fn public_jwk(key: &EncodingKey, alg: Algorithm, kid: &str) -> Jwk {
    // The JWK helpers and `encode` below are the server's provider's (src/auth/jwt_crypto.rs).
    oxp_lambda::__private::install_jwt_crypto();
    let mut jwk = Jwk::from_encoding_key(key, alg).unwrap();
    jwk.common.key_id = Some(kid.into());
    jwk
}

fn sign(alg: Algorithm, kid: Option<&str>, claims: &Value, key: &EncodingKey) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    oxp_lambda::__private::install_jwt_crypto();
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn claims(sub: &str) -> Value {
    json!({"sub": sub, "exp": now() + 300, "iss": "https://issuer.test/", "aud": "oxp-tools"})
}

fn jwt_config(keys: JwtKeys, bind_user_id: bool) -> JwtConfig {
    JwtConfig {
        keys,
        issuer: Some("https://issuer.test/".into()),
        audience: Some("oxp-tools".into()),
        client_id: None,
        token_use: None,
        leeway_secs: 5,
        bind_user_id,
    }
}

/// A tool that reports the user id it was given.
fn whoami() -> Tool {
    Tool::builder("Auth.WhoAmI", "1.0.0").handler(
        |_: oxp_lambda::NoInput, ctx: ToolContext| async move {
            Ok::<_, ToolError>(json!({"user_id": ctx.user_id}))
        },
    )
}

/// Why `builder` does not start.
fn start_error(builder: oxp_lambda::AppBuilder) -> String {
    builder
        .build()
        .now_or_never()
        .unwrap()
        .unwrap_err()
        .to_string()
}

/// The app with `auth`, holding the HS256 signing key as server secret `JWT_KEY`.
fn app_builder(auth: AuthConfig) -> oxp_lambda::AppBuilder {
    let registry = Registry::builder()
        .tool(whoami())
        .tools(common::example_tools::tools())
        .build()
        .unwrap();
    let config = Config {
        auth,
        ..Config::default()
    };
    App::builder(registry)
        .config(config)
        .secret("JWT_KEY", HS_KEY)
}

fn app(auth: AuthConfig) -> App {
    build(app_builder(auth))
}

fn hs_app(bind_user_id: bool) -> App {
    let config = jwt_config(
        JwtKeys::Hs256 {
            secret_id: "JWT_KEY".into(),
        },
        bind_user_id,
    );
    app(AuthConfig::Jwt(config))
}

async fn list_with(app: &App, authorization: Option<&str>) -> Reply {
    let mut request = Request::get("/tools");
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    send(app, request.body(Body::empty()).unwrap()).await
}

async fn call_with(app: &App, token: &str, body: Value) -> Reply {
    let request = Request::post("/tools/call")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(body.to_string()))
        .unwrap();
    send(app, request).await
}

/// Every authentication failure looks the same: 401 (the published OXP 1.0 OpenAPI; the
/// specification pages say 400), one message, and the bearer challenge, which says
/// `error="invalid_token"` when a bearer `token` was sent (RFC 6750 3.1) and nothing more.
fn assert_rejected(reply: &Reply, token: &str) {
    let challenge = match token {
        "" => "Bearer",
        _ => "Bearer error=\"invalid_token\"",
    };
    assert_refused(reply, token, challenge);
}

/// [`assert_rejected`] with the `challenge` expected.
fn assert_refused(reply: &Reply, token: &str, challenge: &str) {
    assert_eq!(reply.status, 401, "{}", reply.text);
    assert_eq!(reply.headers["www-authenticate"], challenge);
    assert_eq!(reply.json["message"], "Authentication failed");
    assert_eq!(
        reply.json["developer_message"],
        "this server requires valid credentials (Authorization: Bearer <token>)"
    );
    assert!(token.is_empty() || !reply.text.contains(token));
}

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

#[test]
fn an_hs256_key_under_32_bytes_fails_at_start() {
    let config = jwt_config(
        JwtKeys::Hs256 {
            secret_id: "SHORT_KEY".into(),
        },
        false,
    );
    let registry = Registry::builder().tool(whoami()).build().unwrap();
    let err = start_error(
        App::builder(registry)
            .config(Config {
                auth: AuthConfig::Jwt(config),
                ..Config::default()
            })
            .secret("SHORT_KEY", ""),
    );
    assert!(
        err.contains("OXP_JWT_HS256_SECRET_ID") && err.contains("at least 32"),
        "{err}"
    );
}

#[test]
fn keys_from_a_jwks_without_an_audience_or_client_id_to_check_fail_at_start() {
    // An identity provider's keys sign the tokens of every application it serves; MCP: a token
    // MUST be issued for this server. The audience (or Cognito's client id) says which.
    let keys = || JwtKeys::Jwks {
        url: "https://issuer.test/.well-known/jwks.json".into(),
        min_refresh: Duration::from_secs(10),
        ttl: Duration::from_secs(3600),
    };
    let starts = |audience: Option<&str>, client_id: Option<&str>| {
        let config = JwtConfig {
            audience: audience.map(str::to_owned),
            client_id: client_id.map(str::to_owned),
            ..jwt_config(keys(), false)
        };
        let builder = app_builder(AuthConfig::Jwt(config));
        builder.build().now_or_never().unwrap().map(|_| ())
    };
    let err = starts(None, None).unwrap_err().to_string();
    assert!(
        err.contains("OXP_JWT_AUDIENCE") && err.contains("OXP_JWT_CLIENT_ID"),
        "{err}"
    );
    assert!(starts(Some("https://tools.example/mcp"), None).is_ok());
    assert!(starts(None, Some("app-client-1")).is_ok());
}

#[test]
fn no_tool_may_declare_the_jwt_signing_key() {
    // Also under another spelling of the id that names the same variable locally
    // (`jwt-key` is read from OXP_SECRET_JWT_KEY too).
    for declared in ["JWT_KEY", "jwt-key"] {
        steal(declared);
    }
}

fn steal(declared: &'static str) {
    let thief = Tool::builder("Thief.Steal", "1.0.0")
        .secret(declared)
        .handler(move |_: oxp_lambda::NoInput, ctx: ToolContext| async move {
            Ok::<_, ToolError>(ctx.secret(declared).map(str::to_owned))
        });
    let config = jwt_config(
        JwtKeys::Hs256 {
            secret_id: "JWT_KEY".into(),
        },
        false,
    );
    let err = start_error(
        App::builder(Registry::builder().tool(thief).build().unwrap())
            .config(Config {
                auth: AuthConfig::Jwt(config),
                ..Config::default()
            })
            .secret("JWT_KEY", HS_KEY),
    );
    assert!(
        err.contains("Thief.Steal@1.0.0") && err.contains("signing key"),
        "{err}"
    );
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

#[test]
fn an_hs256_key_the_server_does_not_hold_fails_at_start() {
    let config = jwt_config(
        JwtKeys::Hs256 {
            secret_id: "NOT_THERE".into(),
        },
        false,
    );
    let err = start_error(app_builder(AuthConfig::Jwt(config)));
    assert!(
        err.contains("OXP_JWT_HS256_SECRET_ID") && err.contains("NOT_THERE"),
        "{err}"
    );
}

// ---- JWKS -----------------------------------------------------------------------------------

struct Jwks {
    url: String,
    keys: Arc<Mutex<Vec<Jwk>>>,
    fetches: Arc<AtomicUsize>,
    /// How the server answers: the keys, or one of the [`Answer`] faults.
    answer: Arc<Mutex<Answer>>,
}

#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Keys,
    ServerError,
    /// A redirect to the same keys elsewhere.
    Redirect,
    /// The keys padded to a megabyte.
    Huge,
    /// The keys, and three this server cannot read: a post-quantum one, two malformed.
    WithUnreadable,
}

async fn jwks_server(keys: Vec<Jwk>) -> Jwks {
    use axum::response::IntoResponse;
    let keys = Arc::new(Mutex::new(keys));
    let fetches = Arc::new(AtomicUsize::new(0));
    let answer = Arc::new(Mutex::new(Answer::Keys));
    let (k, f, a) = (keys.clone(), fetches.clone(), answer.clone());
    let set = move |k: &Arc<Mutex<Vec<Jwk>>>| {
        serde_json::to_string(&JwkSet {
            keys: k.lock().unwrap().clone(),
        })
        .unwrap()
    };
    let k2 = keys.clone();
    let router = axum::Router::new()
        .route(
            "/.well-known/jwks.json",
            axum::routing::get(move || {
                let (k, f, a) = (k.clone(), f.clone(), a.clone());
                async move {
                    f.fetch_add(1, Ordering::SeqCst);
                    let json = [("content-type", "application/json")];
                    match *a.lock().unwrap() {
                        Answer::Keys => (json, set(&k)).into_response(),
                        Answer::ServerError => {
                            axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
                        }
                        Answer::Redirect => (
                            axum::http::StatusCode::FOUND,
                            [("location", "/elsewhere/jwks.json")],
                        )
                            .into_response(),
                        Answer::WithUnreadable => {
                            let mut set: Value = serde_json::from_str(&set(&k)).unwrap();
                            let keys = set["keys"].as_array_mut().unwrap();
                            keys.insert(0, json!({"kty": "AKP", "alg": "ML-DSA-65", "kid": "pq-1", "pub": "AAAA"}));
                            keys.push(json!({"kty": "RSA", "alg": "RS256", "kid": "broken", "e": "AQAB"}));
                            keys.push(json!({"kty": "EC", "kid": 7, "crv": "P-256", "key_ops": "verify"}));
                            (json, set.to_string()).into_response()
                        }
                        Answer::Huge => {
                            let body = set(&k);
                            let padded = format!("{}{}", " ".repeat(1 << 20), body);
                            (json, padded).into_response()
                        }
                    }
                }
            }),
        )
        .route(
            "/elsewhere/jwks.json",
            axum::routing::get(move || {
                let k = k2.clone();
                async move {
                    let body = serde_json::to_string(&JwkSet {
                        keys: k.lock().unwrap().clone(),
                    })
                    .unwrap();
                    ([("content-type", "application/json")], body)
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    Jwks {
        url: format!("http://{addr}/.well-known/jwks.json"),
        keys,
        fetches,
        answer,
    }
}

fn jwks_app(jwks: &Jwks, min_refresh: Duration) -> App {
    jwks_app_for(jwks, min_refresh, Duration::from_secs(3600))
}

fn jwks_app_for(jwks: &Jwks, min_refresh: Duration, ttl: Duration) -> App {
    let keys = JwtKeys::Jwks {
        url: jwks.url.clone(),
        min_refresh,
        ttl,
    };
    app(AuthConfig::Jwt(jwt_config(keys, false)))
}

#[tokio::test]
async fn while_the_jwks_cannot_be_fetched_the_last_good_keys_stand_in() {
    let key = ec_key();
    let jwks = jwks_server(vec![public_jwk(&key, Algorithm::ES256, "k1")]).await;
    let app = jwks_app_for(&jwks, Duration::ZERO, Duration::from_millis(200));
    let token = sign(Algorithm::ES256, Some("k1"), &claims("a"), &key);
    let bearer = format!("Bearer {token}");
    assert_eq!(list_with(&app, Some(&bearer)).await.status, 200);
    *jwks.answer.lock().unwrap() = Answer::ServerError;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let reply = list_with(&app, Some(&bearer)).await;
    assert_eq!(reply.status, 200, "the keys expired but the refetch failed");
    assert!(
        jwks.fetches.load(Ordering::SeqCst) >= 2,
        "a refetch was tried"
    );
}

#[tokio::test]
async fn the_jwks_fetch_follows_no_redirect_and_reads_no_huge_document() {
    let key = ec_key();
    for answer in [Answer::Redirect, Answer::Huge] {
        let jwks = jwks_server(vec![public_jwk(&key, Algorithm::ES256, "k1")]).await;
        *jwks.answer.lock().unwrap() = answer;
        let app = jwks_app(&jwks, Duration::ZERO);
        let token = sign(Algorithm::ES256, Some("k1"), &claims("a"), &key);
        assert_rejected(
            &list_with(&app, Some(&format!("Bearer {token}"))).await,
            &token,
        );
    }
}

#[tokio::test]
async fn rs256_and_es256_tokens_verify_against_the_jwks_which_is_cached() {
    let (rsa, ec) = (rsa_key(), ec_key());
    let jwks = jwks_server(vec![
        public_jwk(&rsa, Algorithm::RS256, "rsa-1"),
        public_jwk(&ec, Algorithm::ES256, "ec-1"),
    ])
    .await;
    let app = jwks_app(&jwks, Duration::from_secs(60));
    for token in [
        sign(Algorithm::RS256, Some("rsa-1"), &claims("alice"), &rsa),
        sign(Algorithm::ES256, Some("ec-1"), &claims("alice"), &ec),
    ] {
        let reply = list_with(&app, Some(&format!("Bearer {token}"))).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    assert_eq!(
        jwks.fetches.load(Ordering::SeqCst),
        1,
        "keys are fetched once and cached"
    );
}

#[tokio::test]
async fn a_jwks_key_the_server_cannot_read_leaves_the_others_in_use() {
    // An identity provider adding a post-quantum key (ML-DSA, `kty: AKP`) beside its RSA keys,
    // or publishing one malformed key, must not stop the tokens its other keys sign.
    let rsa = rsa_key();
    let jwks = jwks_server(vec![public_jwk(&rsa, Algorithm::RS256, "rsa-1")]).await;
    *jwks.answer.lock().unwrap() = Answer::WithUnreadable;
    let app = jwks_app(&jwks, Duration::from_secs(60));
    let token = sign(Algorithm::RS256, Some("rsa-1"), &claims("alice"), &rsa);
    let reply = list_with(&app, Some(&format!("Bearer {token}"))).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    // A token naming the unreadable key is refused like any other.
    let token = sign(Algorithm::RS256, Some("broken"), &claims("alice"), &rsa);
    assert_rejected(
        &list_with(&app, Some(&format!("Bearer {token}"))).await,
        &token,
    );
}

#[tokio::test]
async fn an_unknown_kid_refetches_once_and_refetches_are_rate_limited() {
    let (old, new) = (ec_key(), ec_key());
    let jwks = jwks_server(vec![public_jwk(&old, Algorithm::ES256, "old")]).await;
    // Rotation: a token signed by a key published after the first fetch.
    let rotating = jwks_app(&jwks, Duration::ZERO);
    let token = sign(Algorithm::ES256, Some("old"), &claims("a"), &old);
    assert_eq!(
        list_with(&rotating, Some(&format!("Bearer {token}")))
            .await
            .status,
        200
    );
    jwks.keys
        .lock()
        .unwrap()
        .push(public_jwk(&new, Algorithm::ES256, "new"));
    let token = sign(Algorithm::ES256, Some("new"), &claims("a"), &new);
    assert_eq!(
        list_with(&rotating, Some(&format!("Bearer {token}")))
            .await
            .status,
        200
    );
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 2);

    // Rate limit: tokens with made-up kids do not make the server hammer the JWKS endpoint.
    let limited = jwks_app(&jwks, Duration::from_secs(60));
    let token = sign(Algorithm::ES256, Some("old"), &claims("a"), &old);
    assert_eq!(
        list_with(&limited, Some(&format!("Bearer {token}")))
            .await
            .status,
        200
    );
    let before = jwks.fetches.load(Ordering::SeqCst);
    for i in 0..5 {
        let forged = sign(
            Algorithm::ES256,
            Some(&format!("made-up-{i}")),
            &claims("a"),
            &new,
        );
        assert_rejected(
            &list_with(&limited, Some(&format!("Bearer {forged}"))).await,
            &forged,
        );
    }
    assert_eq!(
        jwks.fetches.load(Ordering::SeqCst),
        before,
        "no refetch inside the minimum interval"
    );
}

#[tokio::test]
async fn algorithm_confusion_is_rejected() {
    let (rsa, ec) = (rsa_key(), ec_key());
    let rsa_jwk = public_jwk(&rsa, Algorithm::RS256, "rsa-1");
    let jwks = jwks_server(vec![
        rsa_jwk.clone(),
        public_jwk(&ec, Algorithm::ES256, "ec-1"),
    ])
    .await;
    let app = jwks_app(&jwks, Duration::from_secs(60));
    // HS256 "signed" with the public key material: the classic confusion attack.
    let public = serde_json::to_string(&rsa_jwk).unwrap();
    let hs = sign(
        Algorithm::HS256,
        Some("rsa-1"),
        &claims("a"),
        &EncodingKey::from_secret(public.as_bytes()).unwrap(),
    );
    assert_rejected(&list_with(&app, Some(&format!("Bearer {hs}"))).await, &hs);
    // An ES256 token naming the RSA key, and an RS256 token naming the EC key.
    let es_on_rsa = sign(Algorithm::ES256, Some("rsa-1"), &claims("a"), &ec);
    assert_rejected(
        &list_with(&app, Some(&format!("Bearer {es_on_rsa}"))).await,
        &es_on_rsa,
    );
    let rs_on_ec = sign(Algorithm::RS256, Some("ec-1"), &claims("a"), &rsa);
    assert_rejected(
        &list_with(&app, Some(&format!("Bearer {rs_on_ec}"))).await,
        &rs_on_ec,
    );
    // An RS384 token is not an accepted algorithm at all.
    let rs384 = sign(Algorithm::RS384, Some("rsa-1"), &claims("a"), &rsa);
    assert_rejected(
        &list_with(&app, Some(&format!("Bearer {rs384}"))).await,
        &rs384,
    );
}

// ---- API Gateway authorizer mode ------------------------------------------------------------

async fn replay_with_authorizer(authorizer: Option<Value>, body: &Value) -> (u16, Value) {
    use lambda_http::request::LambdaRequest;
    use lambda_http::{Adapter, Context, LambdaEvent, Service};
    let mut event: Value = serde_json::from_str(
        &std::fs::read_to_string("events/apigw-http-call-success-stage.json").unwrap(),
    )
    .unwrap();
    event["body"] = Value::String(body.to_string());
    if let Some(authorizer) = authorizer {
        event["requestContext"]["authorizer"] = authorizer;
    }
    let request: LambdaRequest = serde_json::from_value(event).unwrap();
    let app = app(AuthConfig::ApiGateway { bind_user_id: true });
    let response = Adapter::from(app)
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .unwrap();
    let response = serde_json::to_value(response).unwrap();
    let body = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
    (response["statusCode"].as_u64().unwrap() as u16, body)
}

#[tokio::test]
async fn apigateway_mode_trusts_the_authorizer_claims() {
    let whoami = json!({"request": {"tool_id": "Auth.WhoAmI"}});
    let jwt =
        json!({"jwt": {"claims": {"sub": "alice", "iss": "https://issuer.test/"}, "scopes": null}});
    let (status, body) = replay_with_authorizer(Some(jwt.clone()), &whoami).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["value"]["user_id"], "alice");
    let lambda_authorizer = json!({"lambda": {"sub": "bob"}});
    let (_, body) = replay_with_authorizer(Some(lambda_authorizer), &whoami).await;
    assert_eq!(body["result"]["value"]["user_id"], "bob");
    let impostor =
        json!({"request": {"tool_id": "Auth.WhoAmI", "context": {"user_id": "mallory"}}});
    let (status, _) = replay_with_authorizer(Some(jwt), &impostor).await;
    assert_eq!(status, 400);
    // A client-credentials token (no `sub`) is its client; one that names no one is refused.
    let client = json!({"jwt": {"claims": {"client_id": "svc-7"}, "scopes": null}});
    let (_, body) = replay_with_authorizer(Some(client), &whoami).await;
    assert_eq!(body["result"]["value"]["user_id"], "client:svc-7", "{body}");
    let no_one = json!({"jwt": {"claims": {"iss": "https://issuer.test/"}, "scopes": null}});
    let (status, _) = replay_with_authorizer(Some(no_one), &whoami).await;
    assert_eq!(status, 401, "claims that name no caller: not authenticated");
    let (status, body) = replay_with_authorizer(None, &whoami).await;
    assert_eq!(status, 401, "no authorizer context: not authenticated");
    assert_eq!(body["message"], "Authentication failed");
}

#[tokio::test]
async fn apigateway_mode_rejects_requests_outside_api_gateway() {
    let app = app(AuthConfig::ApiGateway {
        bind_user_id: false,
    });
    assert_rejected(&list_with(&app, None).await, "");
}

// ---- Nothing secret leaks -------------------------------------------------------------------

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
