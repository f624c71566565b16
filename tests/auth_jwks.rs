//! Keys from a JWKS served by a test server on loopback: RS256 and ES256, the cache, refetches
//! and their bound, what a JWKS that fails or misbehaves leaves in use, algorithm confusion.

use crate::common;

use common::auth::*;
use common::*;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey};
use oxp_lambda::config::{AuthConfig, JwtKeys};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
