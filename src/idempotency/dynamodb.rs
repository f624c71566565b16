//! The DynamoDB idempotency store: shared by every execution environment, with conditional
//! writes and a TTL attribute.

use crate::aws::AwsClient;
use crate::aws::dynamo::{self, number as n};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use oxp_lambda_core::idempotency::{
    Claim, IdempotencyStore, StoreError, StoreFuture, StoredOutcome,
};
use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, SystemTime};

/// The DynamoDB store of table `table` (`OXP_IDEMPOTENCY_TABLE`).
pub(crate) fn store(
    sdk: &crate::aws::SharedSdk,
    table: String,
) -> Result<std::sync::Arc<dyn IdempotencyStore>, String> {
    Ok(std::sync::Arc::new(DynamoStore::new(
        AwsClient::lazy(sdk, aws_sdk_dynamodb::Client::new),
        table,
    )))
}

/// DynamoDB store. Items: `call_id` (partition key, S), `status` (`IN_PROGRESS` or
/// `COMPLETED`), `fingerprint`, `outcome` (JSON), and `expires_at` (epoch seconds, the table's
/// TTL attribute). Claims are conditional writes that succeed only on a missing or expired item;
/// since DynamoDB deletes expired items lazily, expiry is also checked in the condition.
#[derive(Debug, Clone)]
pub(crate) struct DynamoStore {
    client: AwsClient<aws_sdk_dynamodb::Client>,
    table: String,
}

impl DynamoStore {
    /// A store over `table`.
    pub(crate) fn new(
        client: impl Into<AwsClient<aws_sdk_dynamodb::Client>>,
        table: impl Into<String>,
    ) -> Self {
        Self {
            client: client.into(),
            table: table.into(),
        }
    }
}

/// Unix seconds `after` from now.
fn epoch_secs(after: Duration) -> u64 {
    dynamo::epoch_secs(SystemTime::now() + after)
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn store_error<E: fmt::Debug + aws_sdk_dynamodb::error::ProvideErrorMetadata>(
    e: &aws_sdk_dynamodb::error::SdkError<E>,
) -> StoreError {
    StoreError(dynamo::error_code(e).to_owned())
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
                .get()
                .await
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
                                .get()
                                .await
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
                .get()
                .await
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
                .get()
                .await
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
#[path = "dynamodb_tests.rs"]
mod moto_tests;
