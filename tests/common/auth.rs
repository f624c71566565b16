//! The rig of the authentication tests (`tests/auth*.rs`): keys generated here, tokens signed
//! with them, an app with each `OXP_AUTH` mode, and what every refusal must look like.

use super::*;

use aws_lc_rs::encoding::AsDer;
use axum::body::Body;
use axum::http::Request;
use base64::Engine;
use futures_util::FutureExt;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oxp_lambda::config::{AuthConfig, JwtConfig, JwtKeys};
use oxp_lambda::{Config, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};

pub const HS_KEY: &str = "hs256-signing-key-that-is-long-enough-0123456789";

pub fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

pub fn pem(label: &str, der: &[u8]) -> String {
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

pub fn ec_key() -> EncodingKey {
    let pair = aws_lc_rs::signature::EcdsaKeyPair::generate(
        &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
    )
    .unwrap();
    EncodingKey::from_ec_pem(pem("PRIVATE KEY", pair.to_pkcs8v1().unwrap().as_ref()).as_bytes())
        .unwrap()
}

pub fn rsa_key() -> EncodingKey {
    let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let der = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der<'_>>::as_der(&pair).unwrap();
    EncodingKey::from_rsa_pem(pem("PRIVATE KEY", der.as_ref()).as_bytes()).unwrap()
}

pub fn public_jwk(key: &EncodingKey, alg: Algorithm, kid: &str) -> Jwk {
    // The JWK helpers and `encode` below are the server's provider's (src/auth/jwt_crypto.rs).
    oxp_lambda::__private::install_jwt_crypto();
    let mut jwk = Jwk::from_encoding_key(key, alg).unwrap();
    jwk.common.key_id = Some(kid.into());
    jwk
}

pub fn sign(alg: Algorithm, kid: Option<&str>, claims: &Value, key: &EncodingKey) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    oxp_lambda::__private::install_jwt_crypto();
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

pub fn claims(sub: &str) -> Value {
    json!({"sub": sub, "exp": now() + 300, "iss": "https://issuer.test/", "aud": "oxp-tools"})
}

pub fn jwt_config(keys: JwtKeys, bind_user_id: bool) -> JwtConfig {
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
pub fn whoami() -> Tool {
    Tool::builder("Auth.WhoAmI", "1.0.0").handler(
        |_: oxp_lambda::NoInput, ctx: ToolContext| async move {
            Ok::<_, ToolError>(json!({"user_id": ctx.user_id}))
        },
    )
}

/// Why `builder` does not start.
pub fn start_error(builder: oxp_lambda::AppBuilder) -> String {
    builder
        .build()
        .now_or_never()
        .unwrap()
        .unwrap_err()
        .to_string()
}

/// The app with `auth`, holding the HS256 signing key as server secret `JWT_KEY`.
pub fn app_builder(auth: AuthConfig) -> oxp_lambda::AppBuilder {
    let registry = Registry::builder()
        .tool(whoami())
        .tools(super::example_tools::tools())
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

pub fn app(auth: AuthConfig) -> App {
    build(app_builder(auth))
}

pub fn hs_app(bind_user_id: bool) -> App {
    let config = jwt_config(
        JwtKeys::Hs256 {
            secret_id: "JWT_KEY".into(),
        },
        bind_user_id,
    );
    app(AuthConfig::Jwt(config))
}

pub async fn list_with(app: &App, authorization: Option<&str>) -> Reply {
    let mut request = Request::get("/tools");
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    send(app, request.body(Body::empty()).unwrap()).await
}

/// `POST /tools/call` of `body` with the bearer `token`.
pub async fn call_with(app: &App, token: &str, body: impl std::borrow::Borrow<Value>) -> Reply {
    let request = Request::post("/tools/call")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(body.borrow().to_string()))
        .unwrap();
    send(app, request).await
}

/// Every authentication failure looks the same: 401 (the published OXP 1.0 OpenAPI; the
/// specification pages say 400), one message, and the bearer challenge, which says
/// `error="invalid_token"` when a bearer `token` was sent (RFC 6750 3.1) and nothing more.
pub fn assert_rejected(reply: &Reply, token: &str) {
    let challenge = match token {
        "" => "Bearer",
        _ => "Bearer error=\"invalid_token\"",
    };
    assert_refused(reply, token, challenge);
}

/// [`assert_rejected`] with the `challenge` expected.
pub fn assert_refused(reply: &Reply, token: &str, challenge: &str) {
    assert_eq!(reply.status, 401, "{}", reply.text);
    assert_eq!(reply.headers["www-authenticate"], challenge);
    assert_eq!(reply.json["message"], "Authentication failed");
    assert_eq!(
        reply.json["developer_message"],
        "this server requires valid credentials (Authorization: Bearer <token>)"
    );
    assert!(token.is_empty() || !reply.text.contains(token));
}
