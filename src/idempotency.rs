//! Idempotent calls by `call_id` (the spec calls it "a unique identifier and idempotency key").
//!
//! The first call with a given key claims it (an in-progress record that expires with the
//! call's own time limit, so a crashed invocation does not block the key for long), runs the tool
//! and stores the outcome for `OXP_IDEMPOTENCY_TTL_SECS`. A repeat with the same tool, input and
//! user gets the stored outcome without running the tool; a repeat with anything else is refused;
//! a repeat while the first still runs is told to retry later. Retryable failures are not stored.
//!
//! One small [`IdempotencyStore`] trait, two implementations: [`MemoryStore`] (bounded, with
//! expiry; the local default) and [`DynamoStore`] (conditional writes and a TTL attribute).

use crate::tool::ToolError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A boxed future borrowing the store.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The outcome of a call as stored: protocol-neutral, replayed as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredOutcome {
    /// The output on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The failure, when the tool failed (never a retryable one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StoredError>,
    /// Duration of the original run, in milliseconds.
    pub duration_ms: f64,
}

/// A stored [`ToolError`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredError {
    /// User-facing message.
    pub message: String,
    /// Developer message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_message: Option<String>,
    /// Extra prompt content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_prompt_content: Option<String>,
}

impl StoredOutcome {
    /// Captures a tool result for storage.
    pub fn new(result: &Result<Value, ToolError>, duration: Duration) -> Self {
        let (value, error) = match result {
            Ok(v) => (Some(v.clone()), None),
            Err(e) => (
                None,
                Some(StoredError {
                    message: e.message.clone(),
                    developer_message: e.developer_message.clone(),
                    additional_prompt_content: e.additional_prompt_content.clone(),
                }),
            ),
        };
        Self {
            value,
            error,
            duration_ms: duration.as_secs_f64() * 1e3,
        }
    }

    /// The stored result.
    pub fn result(&self) -> Result<Value, ToolError> {
        match &self.error {
            None => Ok(self.value.clone().unwrap_or(Value::Null)),
            Some(e) => Err(ToolError {
                message: e.message.clone(),
                developer_message: e.developer_message.clone(),
                can_retry: false,
                additional_prompt_content: e.additional_prompt_content.clone(),
                retry_after_ms: None,
            }),
        }
    }
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The key was free (or expired): this call owns it and runs the tool.
    Acquired,
    /// A call with the same fingerprint finished: here is its outcome.
    Completed(StoredOutcome),
    /// A call with the same fingerprint is still running.
    InProgress,
    /// The key was used for a different tool, input or user.
    Conflict,
}

/// The store could not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "idempotency store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// Where claims and outcomes live.
pub trait IdempotencyStore: Send + Sync + fmt::Debug {
    /// Claims `key` for a call with `fingerprint`, holding it in progress for at most `hold`.
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        hold: Duration,
    ) -> StoreFuture<'a, Claim>;
    /// Stores the outcome of the call that claimed `key`, kept for `keep`.
    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        outcome: &'a StoredOutcome,
        keep: Duration,
    ) -> StoreFuture<'a, ()>;
    /// Frees `key` without storing anything (the call failed in a retryable way).
    fn release<'a>(&'a self, key: &'a str, fingerprint: &'a str) -> StoreFuture<'a, ()>;
}

/// The fingerprint of a call: the resolved tool id, the user and the input (JSON objects
/// serialize with sorted keys, so equal inputs give equal fingerprints).
pub fn fingerprint(tool_id: &str, user_id: Option<&str>, input: &Value) -> String {
    let mut hash = Sha256::new();
    hash.update(tool_id.as_bytes());
    hash.update([0]);
    hash.update(user_id.unwrap_or("").as_bytes());
    hash.update([0]);
    hash.update(serde_json::to_vec(input).unwrap_or_default());
    let digest = hash.finalize();
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, Clone)]
enum Record {
    InProgress {
        fingerprint: String,
        until: Instant,
    },
    Completed {
        fingerprint: String,
        outcome: StoredOutcome,
        until: Instant,
    },
}

impl Record {
    fn until(&self) -> Instant {
        match self {
            Record::InProgress { until, .. } | Record::Completed { until, .. } => *until,
        }
    }
}

/// In-memory store: at most `capacity` keys; expired records are dropped first, then the
/// records closest to expiry.
#[derive(Debug)]
pub struct MemoryStore {
    records: std::sync::Mutex<HashMap<String, Record>>,
    capacity: usize,
}

impl MemoryStore {
    /// A store holding at most `capacity` keys.
    pub fn new(capacity: usize) -> Self {
        Self {
            records: std::sync::Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    fn claim_now(&self, key: &str, fingerprint: &str, hold: Duration) -> Claim {
        let now = Instant::now();
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        match records.get(key) {
            Some(r) if r.until() > now => {
                return match r {
                    Record::InProgress { fingerprint: f, .. } if f == fingerprint => {
                        Claim::InProgress
                    }
                    Record::Completed {
                        fingerprint: f,
                        outcome,
                        ..
                    } if f == fingerprint => Claim::Completed(outcome.clone()),
                    _ => Claim::Conflict,
                };
            }
            _ => {}
        }
        if records.len() >= self.capacity && !records.contains_key(key) {
            records.retain(|_, r| r.until() > now);
            while records.len() >= self.capacity {
                let Some(oldest) = records
                    .iter()
                    .min_by_key(|(_, r)| r.until())
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                records.remove(&oldest);
            }
        }
        records.insert(
            key.to_owned(),
            Record::InProgress {
                fingerprint: fingerprint.to_owned(),
                until: now + hold,
            },
        );
        Claim::Acquired
    }
}

impl IdempotencyStore for MemoryStore {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        hold: Duration,
    ) -> StoreFuture<'a, Claim> {
        Box::pin(std::future::ready(Ok(self.claim_now(
            key,
            fingerprint,
            hold,
        ))))
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        outcome: &'a StoredOutcome,
        keep: Duration,
    ) -> StoreFuture<'a, ()> {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.insert(
            key.to_owned(),
            Record::Completed {
                fingerprint: fingerprint.to_owned(),
                outcome: outcome.clone(),
                until: Instant::now() + keep,
            },
        );
        Box::pin(std::future::ready(Ok(())))
    }

    fn release<'a>(&'a self, key: &'a str, fingerprint: &'a str) -> StoreFuture<'a, ()> {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(records.get(key), Some(Record::InProgress { fingerprint: f, .. }) if f == fingerprint)
        {
            records.remove(key);
        }
        Box::pin(std::future::ready(Ok(())))
    }
}

/// DynamoDB store. Items: `call_id` (partition key, S), `status` (`IN_PROGRESS` or
/// `COMPLETED`), `fingerprint`, `outcome` (JSON), and `expires_at` (epoch seconds, the table's
/// TTL attribute). Claims are conditional writes that succeed only on a missing or expired item;
/// since DynamoDB deletes expired items lazily, expiry is also checked in the condition.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoStore {
    /// A store over `table`.
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

fn epoch_secs(after: Duration) -> u64 {
    (SystemTime::now() + after)
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn store_error<E: fmt::Debug + aws_sdk_dynamodb::error::ProvideErrorMetadata>(
    e: &aws_sdk_dynamodb::error::SdkError<E>,
) -> StoreError {
    use aws_sdk_dynamodb::error::ProvideErrorMetadata as _;
    StoreError(e.code().unwrap_or("unreachable or timed out").to_owned())
}

/// `Ok` also when the write's condition failed: the key was completed or taken over after this
/// call's claim expired, so there is nothing of this call's left to change.
fn unless_taken<O, E>(
    result: Result<O, aws_sdk_dynamodb::error::SdkError<E>>,
    condition_failed: impl Fn(&E) -> bool,
) -> Result<(), StoreError>
where
    E: fmt::Debug + aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.as_service_error().is_some_and(&condition_failed) => Ok(()),
        Err(e) => Err(store_error(&e)),
    }
}

impl DynamoStore {
    fn decide(
        item: &HashMap<String, AttributeValue>,
        fingerprint: &str,
    ) -> Result<Claim, StoreError> {
        let text = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).map(String::as_str);
        if text("fingerprint") != Some(fingerprint) {
            return Ok(Claim::Conflict);
        }
        match text("status") {
            Some("COMPLETED") => {
                let outcome = text("outcome")
                    .ok_or_else(|| StoreError("completed item without outcome".into()))?;
                serde_json::from_str(outcome)
                    .map(Claim::Completed)
                    .map_err(|e| StoreError(format!("unreadable outcome: {e}")))
            }
            _ => Ok(Claim::InProgress),
        }
    }
}

impl IdempotencyStore for DynamoStore {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        hold: Duration,
    ) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            let result = self
                .client
                .put_item()
                .table_name(&self.table)
                .item("call_id", s(key))
                .item("status", s("IN_PROGRESS"))
                .item("fingerprint", s(fingerprint))
                .item("expires_at", n(epoch_secs(hold)))
                .condition_expression("attribute_not_exists(call_id) OR expires_at < :now")
                .expression_attribute_values(":now", n(epoch_secs(Duration::ZERO)))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            match result {
                Ok(_) => Ok(Claim::Acquired),
                Err(e) => {
                    use aws_sdk_dynamodb::operation::put_item::PutItemError;
                    let Some(PutItemError::ConditionalCheckFailedException(failed)) =
                        e.as_service_error()
                    else {
                        return Err(store_error(&e));
                    };
                    match failed.item() {
                        Some(item) => Self::decide(item, fingerprint),
                        // Older emulators do not return the item: read it.
                        None => {
                            let got = self
                                .client
                                .get_item()
                                .table_name(&self.table)
                                .key("call_id", s(key))
                                .consistent_read(true)
                                .send()
                                .await
                                .map_err(|e| store_error(&e))?;
                            match got.item() {
                                Some(item) => Self::decide(item, fingerprint),
                                None => Err(StoreError("claim lost a race; retry".into())),
                            }
                        }
                    }
                }
            }
        })
    }

    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        outcome: &'a StoredOutcome,
        keep: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let outcome = serde_json::to_string(outcome).map_err(|e| StoreError(e.to_string()))?;
            let result = self
                .client
                .put_item()
                .table_name(&self.table)
                .item("call_id", s(key))
                .item("status", s("COMPLETED"))
                .item("fingerprint", s(fingerprint))
                .item("outcome", s(outcome))
                .item("expires_at", n(epoch_secs(keep)))
                // Never overwrite a key another call took over after this claim expired.
                .condition_expression("attribute_not_exists(call_id) OR fingerprint = :f")
                .expression_attribute_values(":f", s(fingerprint))
                .send()
                .await;
            unless_taken(result, |e| e.is_conditional_check_failed_exception())
        })
    }

    fn release<'a>(&'a self, key: &'a str, fingerprint: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let result = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key("call_id", s(key))
                .condition_expression("#s = :p AND fingerprint = :f")
                .expression_attribute_names("#s", "status")
                .expression_attribute_values(":p", s("IN_PROGRESS"))
                .expression_attribute_values(":f", s(fingerprint))
                .send()
                .await;
            unless_taken(result, |e| e.is_conditional_check_failed_exception())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome() -> StoredOutcome {
        StoredOutcome::new(&Ok(json!(15)), Duration::from_millis(2))
    }

    #[tokio::test]
    async fn a_key_is_claimed_once_then_replayed_or_refused() {
        let store = MemoryStore::new(10);
        let hold = Duration::from_secs(5);
        assert_eq!(store.claim("k", "f1", hold).await.unwrap(), Claim::Acquired);
        assert_eq!(
            store.claim("k", "f1", hold).await.unwrap(),
            Claim::InProgress
        );
        assert_eq!(store.claim("k", "f2", hold).await.unwrap(), Claim::Conflict);
        store
            .complete("k", "f1", &outcome(), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(
            store.claim("k", "f1", hold).await.unwrap(),
            Claim::Completed(outcome())
        );
        assert_eq!(store.claim("k", "f2", hold).await.unwrap(), Claim::Conflict);
    }

    #[tokio::test]
    async fn records_expire_and_released_keys_are_free() {
        let store = MemoryStore::new(10);
        assert_eq!(
            store
                .claim("k", "f", Duration::from_millis(20))
                .await
                .unwrap(),
            Claim::Acquired
        );
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(
            store.claim("k", "f", Duration::from_secs(5)).await.unwrap(),
            Claim::Acquired,
            "an expired claim is free"
        );
        store.release("k", "f").await.unwrap();
        assert_eq!(
            store
                .claim("k", "other", Duration::from_secs(5))
                .await
                .unwrap(),
            Claim::Acquired
        );
    }

    #[tokio::test]
    async fn the_memory_store_is_bounded() {
        let store = MemoryStore::new(3);
        for i in 0..10 {
            store
                .claim(&format!("k{i}"), "f", Duration::from_secs(60))
                .await
                .unwrap();
        }
        assert_eq!(store.records.lock().unwrap().len(), 3);
    }

    #[test]
    fn fingerprints_depend_on_tool_user_and_input_not_key_order() {
        let a = fingerprint("T@1.0.0", None, &json!({"a": 1, "b": 2}));
        let b = fingerprint(
            "T@1.0.0",
            None,
            &serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap(),
        );
        assert_eq!(a, b);
        assert_ne!(a, fingerprint("T@1.0.1", None, &json!({"a": 1, "b": 2})));
        assert_ne!(
            a,
            fingerprint("T@1.0.0", Some("u"), &json!({"a": 1, "b": 2}))
        );
        assert_ne!(a, fingerprint("T@1.0.0", None, &json!({"a": 1, "b": 3})));
    }

    #[test]
    fn outcomes_round_trip_without_retry_fields() {
        let err = ToolError::new("no").developer_message("d");
        let stored = StoredOutcome::new(&Err(err.clone()), Duration::from_millis(1));
        assert_eq!(stored.result().unwrap_err(), err);
        assert_eq!(outcome().result().unwrap(), json!(15));
    }
}
