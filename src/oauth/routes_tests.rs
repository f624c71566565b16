//! The callback refuses what it did not seal, what expired and what another browser started,
//! all before anything is stored or exchanged (the provider here is an unreachable address:
//! reaching it would fail the test with a 502, not a 400); nothing is spent before a code
//! exchange succeeds, one link starts a bounded number of flows, and a provider that does not
//! answer is a page to try again that names nothing of what failed.

use super::super::config::{ClientAuth, OAuthConfig, ProviderConfig};
use super::super::memory::MemoryVault;
use super::*;
use axum::body::Body;
use http::Request;
use oxp_lambda_core::secrets::{ClientSecrets, Secrets};
use tower::ServiceExt;

fn broker() -> (Arc<Broker>, Arc<MemoryVault>) {
    broker_with(|_| {})
}

fn broker_with(edit: impl FnOnce(&mut ProviderConfig)) -> (Arc<Broker>, Arc<MemoryVault>) {
    let mut provider = ProviderConfig {
        id: "demo".into(),
        issuer: None,
        authorize_url: Some("https://idp.invalid/authorize".into()),
        token_url: Some("https://127.0.0.1:9/token".into()),
        userinfo_url: None,
        client_id: "c".into(),
        client_secret_id: "OAUTH_DEMO_CLIENT_SECRET".into(),
        scopes: vec![],
        client_auth: ClientAuth::Basic,
        extra_params: vec![],
        identity: vec![],
    };
    edit(&mut provider);
    let config = OAuthConfig {
        providers: vec![provider],
        ..OAuthConfig::default()
    };
    let vault = Arc::new(MemoryVault::default());
    let secrets = Secrets::new(None, Duration::from_secs(60), ClientSecrets::Unheld);
    let broker = Broker::new(
        &config,
        "https://tools.example".into(),
        vault.clone(),
        secrets,
        false,
    );
    (Arc::new(broker), vault)
}

async fn sealed_state(broker: &Broker, provider: &str, expiry: SystemTime, nonce: &str) -> String {
    let state = FlowState {
        link: Link {
            p: "demo".into(),
            u: "alice".into(),
            s: vec![],
            e: unix(expiry),
            n: "a-link".into(),
        },
        n: nonce.into(),
        v: "verifier".into(),
    };
    let plain = serde_json::to_vec(&state).unwrap();
    broker
        .keys()
        .await
        .unwrap()
        .seal_text(&format!("state:{provider}"), &plain)
}

async fn callback(broker: &Arc<Broker>, state: &str, cookie: &str) -> StatusCode {
    let request = Request::get(format!("/oauth/demo/callback?code=abc&state={state}"))
        .header("cookie", format!("oxp_oauth_demo={cookie}"))
        .body(Body::empty())
        .unwrap();
    router(broker.clone(), |r| r)
        .oneshot(request)
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn a_forged_altered_expired_or_foreign_state_is_refused_with_nothing_stored() {
    let (broker, vault) = broker();
    let later = SystemTime::now() + Duration::from_secs(600);
    let earlier = SystemTime::now() - Duration::from_secs(1);
    let expired = sealed_state(&broker, "demo", earlier, "n1").await;
    assert_eq!(
        callback(&broker, &expired, "n1").await,
        StatusCode::BAD_REQUEST
    );
    let for_another_provider = sealed_state(&broker, "other", later, "n2").await;
    assert_eq!(
        callback(&broker, &for_another_provider, "n2").await,
        StatusCode::BAD_REQUEST
    );
    let forged = seal::Keys::random().seal_text("state:demo", b"{}");
    assert_eq!(
        callback(&broker, &forged, "n3").await,
        StatusCode::BAD_REQUEST
    );
    let valid = sealed_state(&broker, "demo", later, "n4").await;
    // One character in the middle changed (every one there carries data bits, unlike the
    // last, whose low bits may be padding): always another state.
    let middle = valid.len() / 2;
    let other = if &valid[middle..=middle] == "A" {
        "B"
    } else {
        "A"
    };
    let altered = format!("{}{other}{}", &valid[..middle], &valid[middle + 1..]);
    assert_ne!(altered, valid);
    assert_eq!(
        callback(&broker, &altered, "n4").await,
        StatusCode::BAD_REQUEST
    );
    // Another browser (without the flow's cookie) cannot finish it.
    assert_eq!(
        callback(&broker, &valid, "someone-else").await,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(vault.sizes(), (0, 0), "nothing stored, no nonce spent");
}

#[tokio::test]
async fn nothing_is_spent_before_a_code_exchange_succeeds() {
    let (broker, vault) = broker();
    let valid = sealed_state(
        &broker,
        "demo",
        SystemTime::now() + Duration::from_secs(600),
        "n",
    )
    .await;
    // The exchange fails (no client secret here): the user may try again with the same link.
    for _ in 0..2 {
        assert_eq!(
            callback(&broker, &valid, "n").await,
            StatusCode::BAD_GATEWAY
        );
    }
    // A denial at the provider, however often: a page, and no mark in the vault.
    for _ in 0..1000 {
        let request = Request::get(format!(
            "/oauth/demo/callback?error=access_denied&state={valid}"
        ))
        .header("cookie", "oxp_oauth_demo=n")
        .body(Body::empty())
        .unwrap();
        let status = router(broker.clone(), |r| r)
            .oneshot(request)
            .await
            .unwrap()
            .status();
        assert_eq!(status, StatusCode::OK);
    }
    assert_eq!(vault.sizes(), (0, 0), "nothing stored, nothing spent");
}

/// A link of alice's for the demo provider, valid ten minutes: its `t`.
async fn link_token(broker: &Broker) -> String {
    let link = Link {
        p: "demo".into(),
        u: "alice".into(),
        s: vec![],
        e: unix(SystemTime::now() + Duration::from_secs(600)),
        n: "a-link".into(),
    };
    broker
        .keys()
        .await
        .unwrap()
        .seal_text("link", &serde_json::to_vec(&link).unwrap())
}

/// Opens `/oauth/demo/start?t=<t>`: the status and the page.
async fn start(broker: &Arc<Broker>, t: &str) -> (StatusCode, String) {
    let request = Request::get(format!("/oauth/demo/start?t={t}"))
        .body(Body::empty())
        .unwrap();
    let response = router(broker.clone(), |r| r)
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn one_link_starts_at_most_ten_flows_a_minute() {
    let (broker, _) = broker();
    let t = link_token(&broker).await;
    for _ in 0..10 {
        assert_eq!(start(&broker, &t).await.0, StatusCode::FOUND);
    }
    assert_eq!(start(&broker, &t).await.0, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn a_provider_that_does_not_answer_is_a_page_to_try_again_and_the_link_stays_good() {
    // Discovery is needed (an issuer, no configured URLs) and nothing listens at the issuer.
    let (broker, vault) = broker_with(|p| {
        p.issuer = Some("https://127.0.0.1:9".into());
        p.authorize_url = None;
        p.token_url = None;
    });
    let t = link_token(&broker).await;
    for _ in 0..2 {
        let (status, page) = start(&broker, &t).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{page}");
        assert!(page.contains("Try again in a moment"), "{page}");
        assert!(
            !page.contains("127.0.0.1") && !page.contains("openid-configuration"),
            "what failed is the log's, not the page's: {page}"
        );
    }
    assert_eq!(vault.sizes(), (0, 0), "nothing stored, nothing spent");
}

#[tokio::test]
async fn an_expired_link_starts_no_flow() {
    let (broker, _) = broker();
    let link = Link {
        p: "demo".into(),
        u: "alice".into(),
        s: vec![],
        e: unix(SystemTime::now() - Duration::from_secs(1)),
        n: "a-link".into(),
    };
    let t = broker
        .keys()
        .await
        .unwrap()
        .seal_text("link", &serde_json::to_vec(&link).unwrap());
    assert_eq!(start(&broker, &t).await.0, StatusCode::BAD_REQUEST);
}
