use super::*;

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn the_dynamodb_store_keeps_the_contract_on_moto() {
    let (client, table) = crate::moto::state_table().await;
    crate::state::conformance::check(&DynamoState::new(client, table)).await;
}

/// A log writer into a shared buffer.
#[derive(Clone, Default)]
struct Lines(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn a_table_an_earlier_template_made_is_named_once_with_the_keys_it_needs() {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let (client, _) = crate::moto::state_table().await;
    let table = format!("oxp-calls-old-{}", uuid::Uuid::new_v4().simple());
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("call_id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("call_id")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let store = DynamoState::new(client, table.clone());
    for _ in 0..3 {
        let refused = store.get("idempotency", "k").await.unwrap_err();
        // The caller's error names nothing of the deployment.
        assert_eq!(refused.0, "state table: ValidationException");
    }
    let logged = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        logged.matches("refuses this store's keys").count(),
        1,
        "{logged}"
    );
    assert!(logged.contains(&table) && logged.contains("pk"), "{logged}");
}

#[tokio::test]
#[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
async fn expired_items_a_listing_reads_are_deleted_and_one_written_again_since_is_kept() {
    let (client, table) = crate::moto::state_table().await;
    let store = DynamoState::new(client.clone(), table.clone());
    // Items that expired while stored (one written expired is deleted at once).
    let past = SystemTime::now() - Duration::from_secs(10);
    for key in ["a", "b", "c"] {
        client
            .put_item()
            .table_name(&table)
            .item("pk", AttributeValue::S("p".into()))
            .item("sk", AttributeValue::S(key.into()))
            .item("v", AttributeValue::B(Blob::new(b"old".to_vec())))
            .item("expires_at", n(epoch(past)))
            .send()
            .await
            .unwrap();
    }
    store
        .put("p", "live", Item::new(b"new".to_vec(), None))
        .await
        .unwrap();
    let stored = |key: &'static str| {
        let (client, table) = (client.clone(), table.clone());
        async move {
            client
                .get_item()
                .table_name(table)
                .key("pk", AttributeValue::S("p".into()))
                .key("sk", AttributeValue::S(key.into()))
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item()
                .is_some()
        }
    };
    assert!(stored("a").await, "DynamoDB's TTL has not deleted it yet");
    let listed = store.list("p", None, 10).await.unwrap();
    assert_eq!(listed.len(), 1, "only the live one is listed");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while stored("a").await || stored("b").await || stored("c").await {
        assert!(
            std::time::Instant::now() < deadline,
            "the expired items the listing read are deleted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // An item read expired but written again before its deletion is live: kept.
    store
        .delete_expired("p", vec!["live".into()])
        .await
        .unwrap();
    assert!(stored("live").await, "a live item is never deleted");
    assert_eq!(store.get("p", "live").await.unwrap().unwrap().value, b"new");
}
