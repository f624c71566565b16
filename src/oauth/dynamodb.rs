//! The token vault every Lambda execution environment shares: a DynamoDB table (`OXP_OAUTH_TABLE`)
//! of sealed records. Items: `pk` (partition key, S: `token#<provider>#<hash of the user>` or
//! `nonce#<nonce>`), `v` (B, the sealed record; the table never holds a token in clear), and
//! `expires_at` (N, epoch seconds, the table's TTL attribute). DynamoDB deletes expired items
//! lazily, so reads and the nonce's conditional write check expiry themselves.

use crate::aws::AwsClient;
use crate::aws::dynamo::{self, epoch_secs as epoch, number as n};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use oxp_lambda_core::tokens::{Sealed, TokenError, TokenFuture, TokenStore};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The vault in DynamoDB table `table` (`OXP_OAUTH_TABLE`).
pub(crate) fn vault(
    sdk: &crate::aws::SharedSdk,
    table: String,
) -> Result<std::sync::Arc<dyn TokenStore>, String> {
    Ok(std::sync::Arc::new(DynamoVault::new(
        AwsClient::lazy(sdk, aws_sdk_dynamodb::Client::new),
        table,
    )))
}

/// A DynamoDB [`TokenStore`].
#[derive(Debug, Clone)]
pub(crate) struct DynamoVault {
    client: AwsClient<aws_sdk_dynamodb::Client>,
    table: String,
}

impl DynamoVault {
    /// A vault over `table`.
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

fn failed<E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(
    e: &aws_sdk_dynamodb::error::SdkError<E>,
) -> TokenError {
    TokenError(format!("token vault: {}", dynamo::error_code(e)))
}

impl TokenStore for DynamoVault {
    fn get<'a>(&'a self, key: &'a str) -> TokenFuture<'a, Result<Option<Sealed>, TokenError>> {
        Box::pin(async move {
            let got = self
                .client
                .get()
                .await
                .get_item()
                .table_name(&self.table)
                .key("pk", AttributeValue::S(key.into()))
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| failed(&e))?;
            let Some(item) = got.item() else {
                return Ok(None);
            };
            let expires = item
                .get("expires_at")
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .map(|s| UNIX_EPOCH + Duration::from_secs(s));
            if expires.is_some_and(|e| e <= SystemTime::now()) {
                return Ok(None);
            }
            let bytes = item
                .get("v")
                .and_then(|v| v.as_b().ok())
                .map(|b| b.as_ref().to_vec())
                .ok_or_else(|| TokenError("token vault: an item has no sealed value".into()))?;
            Ok(Some(Sealed { bytes, expires }))
        })
    }

    fn put<'a>(&'a self, key: &'a str, record: Sealed) -> TokenFuture<'a, Result<(), TokenError>> {
        Box::pin(async move {
            let mut put = self
                .client
                .get()
                .await
                .put_item()
                .table_name(&self.table)
                .item("pk", AttributeValue::S(key.into()))
                .item("v", AttributeValue::B(Blob::new(record.bytes)));
            if let Some(expires) = record.expires {
                put = put.item("expires_at", n(epoch(expires)));
            }
            put.send().await.map_err(|e| failed(&e))?;
            Ok(())
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> TokenFuture<'a, Result<(), TokenError>> {
        Box::pin(async move {
            self.client
                .get()
                .await
                .delete_item()
                .table_name(&self.table)
                .key("pk", AttributeValue::S(key.into()))
                .send()
                .await
                .map_err(|e| failed(&e))?;
            Ok(())
        })
    }

    fn spend<'a>(
        &'a self,
        nonce: &'a str,
        until: SystemTime,
    ) -> TokenFuture<'a, Result<bool, TokenError>> {
        Box::pin(async move {
            let result = self
                .client
                .get()
                .await
                .put_item()
                .table_name(&self.table)
                .item("pk", AttributeValue::S(format!("nonce#{nonce}")))
                .item("expires_at", n(epoch(until)))
                .condition_expression("attribute_not_exists(pk) OR expires_at < :now")
                .expression_attribute_values(":now", n(epoch(SystemTime::now())))
                .send()
                .await;
            match result {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    #[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
    async fn the_vault_keeps_sealed_records_and_spends_each_nonce_once_on_dynamodb() {
        let (client, table) = crate::moto::table_keyed_by("pk").await;
        let vault = DynamoVault::new(client.clone(), table.clone());
        let later = SystemTime::now() + Duration::from_secs(600);
        let record = Sealed {
            bytes: vec![1, 2, 3],
            expires: Some(later),
        };
        vault.put("token#demo#u", record.clone()).await.unwrap();
        let got = vault.get("token#demo#u").await.unwrap().unwrap();
        assert_eq!(got.bytes, record.bytes);
        assert_eq!(epoch(got.expires.unwrap()), epoch(later));
        assert!(vault.get("token#demo#other").await.unwrap().is_none());
        vault.delete("token#demo#u").await.unwrap();
        assert!(vault.get("token#demo#u").await.unwrap().is_none());
        let expired = Sealed {
            bytes: vec![9],
            expires: Some(SystemTime::now() - Duration::from_secs(5)),
        };
        vault.put("token#demo#old", expired).await.unwrap();
        assert!(vault.get("token#demo#old").await.unwrap().is_none());
        assert!(vault.spend("n1", later).await.unwrap());
        assert!(!vault.spend("n1", later).await.unwrap());
        // A nonce whose spend has expired may not be reused either way: the flow's own expiry
        // (shorter) refuses it first; here only the store's rule is checked.
        assert!(
            vault
                .spend("n2", SystemTime::now() - Duration::from_secs(5))
                .await
                .unwrap()
        );
        assert!(vault.spend("n2", later).await.unwrap());
    }
}
