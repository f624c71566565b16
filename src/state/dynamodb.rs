//! The DynamoDB state store (`OXP_STATE_TABLE`): every execution environment of every function
//! reads and writes the same items. Items: `pk` (partition key, S: the partition), `sk` (sort
//! key, S: the key), `v` (B: the value), `expires_at` (N, Unix seconds: the table's TTL
//! attribute). DynamoDB deletes expired items lazily (within days), so expiry is checked on
//! every read and in every conditional write too, and the expired items a listing reads are
//! deleted by the store itself: a partition listed again and again reads what lived lately, not
//! days of what expired. An item with a due time has it in `due` (N, Unix milliseconds) and its
//! partition in `dpk` (S): the table's sparse global secondary index [`DUE_INDEX`] (`dpk`,
//! `due`) answers [`StateStore::due`] without reading the partition. A table made before the
//! index (an earlier template) is read as a listing, with a warning naming the index.

use crate::aws::dynamo::{self, epoch_secs as epoch, expiry_secs, number as n};
use crate::aws::{AwsClient, SharedSdk};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use oxp_lambda_core::durable::{Item, MAX_VALUE_BYTES, StateError, StateFuture, StateStore};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most expired items one listing leaves to be deleted (one pass at a time per store; what
/// a pass leaves, the next listing finds).
const RECLAIM_BATCH: usize = 100;

/// The name of the table's index of items by due time (template.yaml).
pub(crate) const DUE_INDEX: &str = "due";

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
    /// Whether a pass deleting expired items runs (at most one at a time).
    reclaiming: Arc<AtomicBool>,
    /// Whether the table was found without its [`DUE_INDEX`] (said once, then listed).
    unindexed: Arc<AtomicBool>,
    /// Whether a refusal of this store's keys was logged (once).
    told_schema: Arc<AtomicBool>,
}

impl DynamoState {
    pub(crate) fn new(
        client: impl Into<AwsClient<aws_sdk_dynamodb::Client>>,
        table: String,
    ) -> Self {
        Self {
            client: client.into(),
            table,
            reclaiming: Arc::default(),
            unindexed: Arc::default(),
            told_schema: Arc::default(),
        }
    }

    /// Deletes the expired items `keys` of `partition` in the background, unless a pass runs
    /// already (then a later listing finds them again).
    fn reclaim(&self, partition: &str, keys: Vec<String>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if keys.is_empty() || self.reclaiming.swap(true, Ordering::AcqRel) {
            return;
        }
        let (this, partition) = (self.clone(), partition.to_owned());
        runtime.spawn(async move {
            if let Err(e) = this.delete_expired(&partition, keys).await {
                tracing::debug!(target: "oxp::state", error = %e, "expired items left to DynamoDB's TTL");
            }
            this.reclaiming.store(false, Ordering::Release);
        });
    }

    /// Deletes each of `keys` of `partition` that is still expired: an item written again
    /// since it was read (a live one now) is kept.
    async fn delete_expired(&self, partition: &str, keys: Vec<String>) -> Result<(), StateError> {
        let client = self.client.get().await;
        for key in keys {
            let deleted = client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key_of(partition, &key)))
                .condition_expression("expires_at <= :now")
                .expression_attribute_values(":now", n(epoch(SystemTime::now())))
                .send()
                .await;
            // Written again since (live now): kept.
            self.held(deleted)?;
        }
        Ok(())
    }
}

/// The condition of a write over the live value `:old` (compare-and-swap).
const SWAP: &str = "v = :old AND (attribute_not_exists(expires_at) OR expires_at > :now)";
/// The condition of a write where no live item is.
const ABSENT: &str = "attribute_not_exists(pk) OR expires_at <= :now";

/// The condition of a write over the live value `expected` (`None`: where no live item is),
/// and its values.
fn condition(expected: Option<&[u8]>) -> (String, HashMap<String, AttributeValue>) {
    let now = (":now".to_owned(), n(epoch(SystemTime::now())));
    match expected {
        None => (ABSENT.into(), HashMap::from([now])),
        Some(old) => (
            SWAP.into(),
            HashMap::from([now, (":old".into(), AttributeValue::B(Blob::new(old)))]),
        ),
    }
}

/// The attributes of the item at `key` of `partition`.
fn key_of(partition: &str, key: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(partition.into())),
        ("sk".to_owned(), AttributeValue::S(key.into())),
    ])
}

/// The attributes `item` is stored as at `key` of `partition`.
fn attributes(partition: &str, key: &str, item: Item) -> HashMap<String, AttributeValue> {
    let mut attributes = key_of(partition, key);
    attributes.insert("v".into(), AttributeValue::B(Blob::new(item.value)));
    if let Some(expires) = item.expires {
        attributes.insert("expires_at".into(), n(expiry_secs(expires)));
    }
    if let Some(due) = item.due {
        attributes.insert("dpk".into(), AttributeValue::S(partition.into()));
        let ms = due.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        attributes.insert("due".into(), AttributeValue::N(ms.to_string()));
    }
    attributes
}

impl DynamoState {
    /// Whether a conditional write's condition held (it was written), or why the table did not
    /// answer.
    fn held<T, E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(
        &self,
        sent: Result<T, aws_sdk_dynamodb::error::SdkError<E>>,
    ) -> Result<bool, StateError> {
        match sent {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error().and_then(|e| e.code())
                    == Some("ConditionalCheckFailedException") =>
            {
                Ok(false)
            }
            Err(e) => Err(self.failed(&e)),
        }
    }

    /// Why the table did not answer (its caller's error stays generic). A table whose key
    /// schema is not this store's (one an earlier template made, keyed by `call_id`) refuses
    /// every call: the first such refusal is logged with the table's name and the schema it
    /// needs.
    fn failed<E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(
        &self,
        e: &aws_sdk_dynamodb::error::SdkError<E>,
    ) -> StateError {
        let code = dynamo::error_code(e);
        if code == "ValidationException" && !self.told_schema.swap(true, Ordering::Relaxed) {
            tracing::error!(target: "oxp::state", table = %self.table, "the table refuses this store's keys: it needs the partition key pk and the sort key sk (both strings) and the TTL attribute expires_at; a table an earlier template made (keyed by call_id) must be replaced (CHANGELOG.md)");
        }
        StateError(format!("state table: {code}"))
    }
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
    let item = Item::new(value, expires);
    (!item.expired(now)).then_some(item)
}

impl DynamoState {
    /// [`StateStore::put_if`] of an item already expired: the item is deleted if the value
    /// there now is `expected` (`None`: there is none, or it expired: nothing to delete).
    async fn delete_if(
        &self,
        client: &aws_sdk_dynamodb::Client,
        partition: &str,
        key: &str,
        expected: Option<&[u8]>,
    ) -> Result<bool, StateError> {
        let Some(old) = expected else {
            return Ok(self.get(partition, key).await?.is_none());
        };
        let (expression, values) = condition(Some(old));
        let deleted = client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key_of(partition, key)))
            .condition_expression(expression)
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        self.held(deleted)
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
                .set_key(Some(key_of(partition, key)))
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| self.failed(&e))?;
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
            if item.expired(SystemTime::now()) {
                return self.delete_if(client, partition, key, expected).await;
            }
            let (expression, values) = condition(expected);
            let put = client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(attributes(partition, key, item)))
                .condition_expression(expression)
                .set_expression_attribute_values(Some(values));
            self.held(put.send().await)
        })
    }

    fn put<'a>(&'a self, partition: &'a str, key: &'a str, item: Item) -> StateFuture<'a, ()> {
        Box::pin(async move {
            too_large(&item)?;
            if item.expired(SystemTime::now()) {
                return self.delete(partition, key).await;
            }
            let client = self.client.get().await;
            client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(attributes(partition, key, item)))
                .send()
                .await
                .map_err(|e| self.failed(&e))?;
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
                .set_key(Some(key_of(partition, key)))
                .send()
                .await
                .map_err(|e| self.failed(&e))?;
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
            let mut start = after.map(|key| key_of(partition, key));
            let mut expired = Vec::new();
            // Expired items still count against a page's `Limit`: read on until `limit` live
            // ones, or the partition's end.
            let listed = loop {
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
                    .map_err(|e| self.failed(&e))?;
                for attributes in page.items() {
                    if items.len() >= limit {
                        break;
                    }
                    let Some(key) = attributes.get("sk").and_then(|v| v.as_s().ok()) else {
                        continue;
                    };
                    match item_of(attributes, now) {
                        Some(item) => items.push((key.clone(), item)),
                        None if expired.len() < RECLAIM_BATCH => expired.push(key.clone()),
                        None => {}
                    }
                }
                match page.last_evaluated_key() {
                    Some(last) if items.len() < limit => start = Some(last.clone()),
                    _ => break items,
                }
            };
            self.reclaim(partition, expired);
            Ok(listed)
        })
    }

    fn due<'a>(
        &'a self,
        partition: &'a str,
        until: SystemTime,
        limit: usize,
    ) -> StateFuture<'a, Vec<(String, Item)>> {
        Box::pin(async move {
            if self.unindexed.load(Ordering::Relaxed) {
                return self.list(partition, None, limit).await;
            }
            let until = until
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            let page = self
                .client
                .get()
                .await
                .query()
                .table_name(&self.table)
                .index_name(DUE_INDEX)
                .key_condition_expression("dpk = :p AND due <= :until")
                .expression_attribute_values(":p", AttributeValue::S(partition.into()))
                .expression_attribute_values(":until", AttributeValue::N(until.to_string()))
                .limit(i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000))
                .send()
                .await;
            let page = match page {
                Ok(page) => page,
                Err(e) if dynamo::error_code(&e) == "ValidationException" => {
                    if !self.unindexed.swap(true, Ordering::Relaxed) {
                        tracing::warn!(target: "oxp::state", table = %self.table, index = DUE_INDEX, "the state table has no index of due items (dpk, due): work is found by listing; add the index (template.yaml)");
                    }
                    return self.list(partition, None, limit).await;
                }
                Err(e) => return Err(self.failed(&e)),
            };
            let now = SystemTime::now();
            Ok(page
                .items()
                .iter()
                .filter_map(|attributes| {
                    let key = attributes.get("sk")?.as_s().ok()?.clone();
                    Some((key, item_of(attributes, now)?))
                })
                .collect())
        })
    }
}

#[cfg(test)]
#[path = "dynamodb_tests.rs"]
mod tests;
