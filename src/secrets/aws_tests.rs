//! The Secrets Manager source against moto's emulator on loopback (started by the test
//! command): naming, JSON keys, caching, single-flight misses, errors and time bounds.

use super::{AwsSecretsManager, secrets_manager_config};
use crate::moto::{RequestCounter, create_secret, moto_url, sdk_config, unique_prefix};
use crate::secrets::SecretsConfig;
use oxp_lambda_core::secrets::{ClientSecrets, SecretErrorKind, Secrets};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A Secrets Manager client configured as the server configures its own, plus a request counter.
async fn secrets_client(
    endpoint: &str,
    timeout: Duration,
) -> (aws_sdk_secretsmanager::Client, RequestCounter) {
    let sdk = sdk_config(endpoint).await;
    let counter = RequestCounter::default();
    let config = secrets_manager_config(&sdk, timeout)
        .interceptor(counter.clone())
        .build();
    (aws_sdk_secretsmanager::Client::from_conf(config), counter)
}

const TIMEOUT: Duration = Duration::from_secs(3);

fn secrets_config(prefix: &str, map: &[(&str, &str)]) -> SecretsConfig {
    SecretsConfig {
        prefix: Some(prefix.to_owned()),
        map: map
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
        ..SecretsConfig::default()
    }
}

async fn store(
    prefix: &str,
    map: &[(&str, &str)],
    ttl: Duration,
) -> (Secrets, aws_sdk_secretsmanager::Client, RequestCounter) {
    let (client, counter) = secrets_client(&moto_url(), TIMEOUT).await;
    let source = AwsSecretsManager::new(client.clone(), &secrets_config(prefix, map));
    let secrets = Secrets::new(Some(Arc::new(source)), ttl, ClientSecrets::Unheld);
    (secrets, client, counter)
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_plain_secret_is_read_by_prefix_and_id() {
    let prefix = unique_prefix();
    let (secrets, client, _) = store(&prefix, &[], Duration::from_secs(60)).await;
    create_secret(&client, &format!("{prefix}TWILIO_API_KEY"), "plain-value").await;
    assert_eq!(
        secrets.get("TWILIO_API_KEY").await.unwrap().expose(),
        "plain-value"
    );
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn one_key_of_a_json_secret_is_read_through_the_map() {
    let prefix = unique_prefix();
    let name = format!("{prefix}bundle");
    let target = format!("{name}#api_key");
    let (secrets, client, _) = store(
        &prefix,
        &[("TWILIO_API_KEY", &target)],
        Duration::from_secs(60),
    )
    .await;
    create_secret(&client, &name, r#"{"api_key": "from-json", "other": "x"}"#).await;
    assert_eq!(
        secrets.get("TWILIO_API_KEY").await.unwrap().expose(),
        "from-json"
    );
    // A JSON secret without the key is an error naming the id.
    let (secrets, _, _) = store(
        &prefix,
        &[("MISSING", &format!("{name}#nope"))],
        Duration::from_secs(60),
    )
    .await;
    let err = secrets.get("MISSING").await.unwrap_err();
    assert_eq!(err.kind, SecretErrorKind::Invalid);
    assert!(!err.developer_message().contains("from-json"));
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn an_updated_secret_is_visible_after_the_ttl_and_not_before() {
    let prefix = unique_prefix();
    let ttl = Duration::from_millis(1500);
    let (secrets, client, counter) = store(&prefix, &[], ttl).await;
    let name = format!("{prefix}ROTATING");
    create_secret(&client, &name, "v1").await;
    let before = counter.get();
    let start = Instant::now();
    assert_eq!(secrets.get("ROTATING").await.unwrap().expose(), "v1");
    client
        .put_secret_value()
        .secret_id(&name)
        .secret_string("v2")
        .send()
        .await
        .unwrap();
    assert_eq!(
        secrets.get("ROTATING").await.unwrap().expose(),
        "v1",
        "cached until the TTL"
    );
    assert!(start.elapsed() < ttl, "the check ran inside the TTL");
    tokio::time::sleep(ttl + Duration::from_millis(300)).await;
    assert_eq!(secrets.get("ROTATING").await.unwrap().expose(), "v2");
    // create + put were made on `client` too: count only the store's own fetches.
    assert_eq!(
        counter.get() - before,
        1 + 1 + 1,
        "fetch, put, fetch after expiry"
    );
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn many_concurrent_misses_make_one_api_call_and_a_warm_call_none() {
    let prefix = unique_prefix();
    let (setup, _) = secrets_client(&moto_url(), TIMEOUT).await;
    create_secret(&setup, &format!("{prefix}HOT"), "hot-value").await;
    let (secrets, _, counter) = store(&prefix, &[], Duration::from_secs(60)).await;
    let gets = (0..50).map(|_| secrets.get("HOT"));
    let values = futures_util::future::join_all(gets).await;
    assert!(
        values
            .iter()
            .all(|v| v.as_ref().unwrap().expose() == "hot-value")
    );
    assert_eq!(
        counter.get(),
        1,
        "one GetSecretValue for 50 concurrent misses"
    );
    secrets.get("HOT").await.unwrap();
    assert_eq!(counter.get(), 1, "a warm read makes no AWS call");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn the_secrets_of_one_call_are_fetched_concurrently() {
    let prefix = unique_prefix();
    let (setup, _) = secrets_client(&moto_url(), TIMEOUT).await;
    for id in ["A", "B", "C"] {
        create_secret(&setup, &format!("{prefix}{id}"), &format!("value-{id}")).await;
    }
    let (secrets, _, counter) = store(&prefix, &[], Duration::from_secs(60)).await;
    let required = ["A".to_string(), "B".to_string(), "C".to_string()];
    let got = secrets.resolve(&required, vec![]).await.unwrap();
    assert_eq!(got.len(), 3);
    assert_eq!(got["B"].expose(), "value-B");
    assert_eq!(counter.get(), 3);
    secrets.resolve(&required, vec![]).await.unwrap();
    assert_eq!(counter.get(), 3, "a warm call makes no AWS call");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_missing_secret_is_not_found_naming_its_id() {
    let (secrets, _, _) = store(&unique_prefix(), &[], Duration::from_secs(60)).await;
    let err = secrets.get("NOPE").await.unwrap_err();
    assert_eq!(err.kind, SecretErrorKind::NotFound);
    assert!(err.developer_message().contains("'NOPE'"));
}

#[tokio::test]
async fn an_unreachable_endpoint_fails_within_the_timeout() {
    // A port with nothing listening: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (client, _) = secrets_client(
        &format!("http://127.0.0.1:{port}"),
        Duration::from_millis(800),
    )
    .await;
    let source = AwsSecretsManager::new(client, &secrets_config("oxp/", &[]));
    let secrets = Secrets::new(
        Some(Arc::new(source)),
        Duration::from_secs(60),
        ClientSecrets::Unheld,
    );
    let start = Instant::now();
    let err = secrets.get("ANY").await.unwrap_err();
    assert_eq!(err.kind, SecretErrorKind::Unreachable, "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "bounded: {:?}",
        start.elapsed()
    );
}
