//! The DynamoDB store against moto's emulator on loopback (started by the test command). The
//! contract every store keeps is checked through the app, in `tests/reliability.rs`.

use super::DynamoStore;
use oxp_lambda_core::idempotency::{Claim, IdempotencyStore, StoredOutcome};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_crashed_invocation_does_not_block_its_call_id_forever() {
    let (client, table) = crate::moto::calls_table().await;
    let store = DynamoStore::new(client.clone(), table.clone());
    // Claimed by an invocation that then died: the claim holds until its deadline (1 s here).
    assert_eq!(
        store.claim("k", "f", Duration::from_secs(1)).await.unwrap(),
        Claim::Acquired
    );
    assert_eq!(
        store.claim("k", "f", Duration::from_secs(1)).await.unwrap(),
        Claim::InProgress
    );
    assert_eq!(
        store
            .claim("k", "other", Duration::from_secs(1))
            .await
            .unwrap(),
        Claim::Conflict
    );
    let item = client
        .get_item()
        .table_name(&table)
        .key(
            "call_id",
            aws_sdk_dynamodb::types::AttributeValue::S("k".into()),
        )
        .send()
        .await
        .unwrap();
    let item = item.item().unwrap();
    assert_eq!(item["status"].as_s().unwrap(), "IN_PROGRESS");
    assert!(
        item["expires_at"].as_n().is_ok(),
        "the TTL attribute is set"
    );
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(
        store
            .claim("k", "f", Duration::from_secs(30))
            .await
            .unwrap(),
        Claim::Acquired,
        "expired claims are taken over"
    );
    let outcome = StoredOutcome::new(&Ok(json!(1).into()), Duration::from_millis(3));
    store
        .complete("k", "f", &outcome, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        store.claim("k", "f", Duration::from_secs(1)).await.unwrap(),
        Claim::Completed(outcome)
    );
    // Releasing a completed key leaves it alone.
    store.release("k", "f").await.unwrap();
    assert!(matches!(
        store.claim("k", "f", Duration::from_secs(1)).await.unwrap(),
        Claim::Completed(_)
    ));
}
