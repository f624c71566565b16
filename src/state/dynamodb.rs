//! The DynamoDB state store (`OXP_STATE_TABLE`): every execution environment of every function
//! reads and writes the same items. Items: `pk` (partition key, S: the partition), `sk` (sort
//! key, S: the key), `v` (B: the value), `expires_at` (N, Unix seconds: the table's TTL
//! attribute). DynamoDB deletes expired items lazily, so expiry is checked on every read and in
//! every conditional write too.

use crate::aws::dynamo::{self, epoch_secs as epoch, number as n};
use crate::aws::{AwsClient, SharedSdk};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use oxp_lambda_core::durable::{Item, MAX_VALUE_BYTES, StateError, StateFuture, StateStore};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The store of `table`.
pub(crate) fn store(sdk: &SharedSdk, table: String) -> Result<Arc<dyn StateStore>, String> {
    Ok(Arc::new(DynamoState::new(
        AwsClient::lazy(sdk, aws_sdk_dynamodb::Client::new),
        table,
    )))
}

/// A DynamoDB [`StateStore`].
#[derive(Debug, Clone)]
pub(crate) struct DynamoState {
    client: AwsClient<aws_sdk_dynamodb::Client>,
    table: String,
}

impl DynamoState {
    pub(crate) fn new(
        client: impl Into<AwsClient<aws_sdk_dynamodb::Client>>,
        table: String,
    ) -> Self {
        Self {
            client: client.into(),
            table,
        }
    }
}

fn failed<E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(
    e: &aws_sdk_dynamodb::error::SdkError<E>,
) -> StateError {
    StateError(format!("state table: {}", dynamo::error_code(e)))
}

fn too_large(item: &Item) -> Result<(), StateError> {
    if item.value.len() > MAX_VALUE_BYTES {
        return Err(StateError("state table: the value is too large".into()));
    }
    Ok(())
}

/// The item an attribute map holds, `None` once expired (or without a value).
fn item_of(attributes: &HashMap<String, AttributeValue>, now: SystemTime) -> Option<Item> {
    let expires = attributes
        .get("expires_at")
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map(|s| UNIX_EPOCH + Duration::from_secs(s));
    let value = attributes.get("v")?.as_b().ok()?.as_ref().to_vec();
    let item = Item { value, expires };
    (!item.expired(now)).then_some(item)
}

impl DynamoState {
    fn put_request(
        &self,
        client: &aws_sdk_dynamodb::Client,
        partition: &str,
        key: &str,
        item: Item,
    ) -> aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder {
        let mut put = client
            .put_item()
            .table_name(&self.table)
            .item("pk", AttributeValue::S(partition.into()))
            .item("sk", AttributeValue::S(key.into()))
            .item("v", AttributeValue::B(Blob::new(item.value)));
        if let Some(expires) = item.expires {
            put = put.item("expires_at", n(epoch(expires)));
        }
        put
    }
}

impl StateStore for DynamoState {
    fn get<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, Option<Item>> {
        Box::pin(async move {
            let got = self
                .client
                .get()
                .await
                .get_item()
                .table_name(&self.table)
                .key("pk", AttributeValue::S(partition.into()))
                .key("sk", AttributeValue::S(key.into()))
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| failed(&e))?;
            Ok(got.item().and_then(|i| item_of(i, SystemTime::now())))
        })
    }

    fn put_if<'a>(
        &'a self,
        partition: &'a str,
        key: &'a str,
        item: Item,
        expected: Option<&'a [u8]>,
    ) -> StateFuture<'a, bool> {
        Box::pin(async move {
            too_large(&item)?;
            let client = self.client.get().await;
            let now = n(epoch(SystemTime::now()));
            let put = self.put_request(client, partition, key, item);
            let put = match expected {
                None => put
                    .condition_expression("attribute_not_exists(pk) OR expires_at <= :now")
                    .expression_attribute_values(":now", now),
                Some(old) => put
                    .condition_expression(
                        "v = :old AND (attribute_not_exists(expires_at) OR expires_at > :now)",
                    )
                    .expression_attribute_values(":old", AttributeValue::B(Blob::new(old)))
                    .expression_attribute_values(":now", now),
            };
            match put.send().await {
                Ok(_) => Ok(true),
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
                {
                    Ok(false)
                }
                Err(e) => Err(failed(&e)),
            }
        })
    }

    fn put<'a>(&'a self, partition: &'a str, key: &'a str, item: Item) -> StateFuture<'a, ()> {
        Box::pin(async move {
            too_large(&item)?;
            let client = self.client.get().await;
            self.put_request(client, partition, key, item)
                .send()
                .await
                .map_err(|e| failed(&e))?;
            Ok(())
        })
    }

    fn delete<'a>(&'a self, partition: &'a str, key: &'a str) -> StateFuture<'a, ()> {
        Box::pin(async move {
            self.client
                .get()
                .await
                .delete_item()
                .table_name(&self.table)
                .key("pk", AttributeValue::S(partition.into()))
                .key("sk", AttributeValue::S(key.into()))
                .send()
                .await
                .map_err(|e| failed(&e))?;
            Ok(())
        })
    }

    fn list<'a>(
        &'a self,
        partition: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        Box::pin(async move {
            let client = self.client.get().await;
            let now = SystemTime::now();
            let mut items = Vec::new();
            let mut start: Option<HashMap<String, AttributeValue>> = after.map(|key| {
                HashMap::from([
                    ("pk".to_owned(), AttributeValue::S(partition.into())),
                    ("sk".to_owned(), AttributeValue::S(key.into())),
                ])
            });
            // Expired items still count against a page's `Limit`: read on until `limit` live
            // ones, or the partition's end.
            loop {
                let page = client
                    .query()
                    .table_name(&self.table)
                    .key_condition_expression("pk = :p")
                    .expression_attribute_values(":p", AttributeValue::S(partition.into()))
                    .consistent_read(true)
                    .limit(i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000))
                    .set_exclusive_start_key(start.take())
                    .send()
                    .await
                    .map_err(|e| failed(&e))?;
                for attributes in page.items() {
                    if items.len() >= limit {
                        return Ok(items);
                    }
                    let key = attributes.get("sk").and_then(|v| v.as_s().ok());
                    if let (Some(key), Some(item)) = (key, item_of(attributes, now)) {
                        items.push((key.clone(), item));
                    }
                }
                match page.last_evaluated_key() {
                    Some(last) if items.len() < limit => start = Some(last.clone()),
                    _ => return Ok(items),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    #[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
    async fn the_dynamodb_store_keeps_the_contract_on_moto() {
        let (client, table) = crate::moto::state_table().await;
        crate::state::conformance::check(&DynamoState::new(client, table)).await;
    }
}
