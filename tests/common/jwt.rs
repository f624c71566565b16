//! Callers authenticated with HS256 JWTs: the server holds the key as secret `JWT_KEY`
//! (`AppBuilder::secret(JWT_KEY_ID, HS_KEY)`), and `bearer(sub)` is a caller's header.

use oxp_lambda::config::{AuthConfig, JwtKeys};
use serde_json::json;

/// The signing key.
pub const HS_KEY: &str = "a-test-signing-key-of-at-least-32-bytes!";
/// The secret id the server holds it under.
pub const JWT_KEY_ID: &str = "JWT_KEY";

/// `OXP_AUTH=jwt` with that key, issuer `https://issuer.test/` and audience `oxp-tools`;
/// `bind_user_id`: `OXP_BIND_USER_ID`.
pub fn hs256_auth(bind_user_id: bool) -> AuthConfig {
    let keys = JwtKeys::Hs256 {
        secret_id: JWT_KEY_ID.into(),
    };
    AuthConfig::Jwt(super::auth::jwt_config(keys, bind_user_id))
}

/// `Authorization` for caller `sub`, valid for ten minutes.
pub fn bearer(sub: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let claims = json!({"sub": sub, "exp": exp, "iss": "https://issuer.test/", "aud": "oxp-tools"});
    oxp_lambda::__private::install_jwt_crypto();
    let token = jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap(),
    )
    .unwrap();
    format!("Bearer {token}")
}

/// The example tools behind `OXP_AUTH=jwt` with that key: callers are `bearer(sub)`.
pub fn example_app() -> super::App {
    let mut config = super::test_config();
    config.auth = hs256_auth(false);
    super::build(
        oxp_lambda::App::builder(super::example_tools::registry().unwrap())
            .config(config)
            .secret(JWT_KEY_ID, HS_KEY),
    )
}
