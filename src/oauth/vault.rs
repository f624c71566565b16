//! The token vault every execution environment shares, as records of the one [`StateStore`]
//! (a DynamoDB table, `OXP_OAUTH_TABLE`): sealed records at `<vault key>` and spent nonces at
//! `nonce#<nonce>` of partition [`PARTITION`], each expiring as its record says. The store never
//! holds a token in clear, nor a user id (vault keys hash it).

use oxp_lambda_core::durable::{Item, StateError, StateStore};
use oxp_lambda_core::tokens::{Sealed, TokenError, TokenFuture, TokenStore};
use std::sync::Arc;
use std::time::SystemTime;

/// The partition of the vault's records.
pub(crate) const PARTITION: &str = "oauth";

/// The vault in DynamoDB table `table` (`OXP_OAUTH_TABLE`, the state table's schema).
pub(crate) fn in_table(
    sdk: &crate::aws::SharedSdk,
    table: String,
) -> Result<Arc<dyn TokenStore>, String> {
    let store =
        crate::state::dynamodb::store(sdk, table).map_err(|e| format!("OXP_OAUTH_TABLE: {e}"))?;
    Ok(Arc::new(StateVault::new(store)))
}

/// A [`TokenStore`] over a [`StateStore`].
#[derive(Debug, Clone)]
pub(crate) struct StateVault {
    store: Arc<dyn StateStore>,
}

impl StateVault {
    pub(crate) fn new(store: Arc<dyn StateStore>) -> Self {
        Self { store }
    }
}

fn failed(e: StateError) -> TokenError {
    TokenError(format!("token vault: {e}"))
}

impl TokenStore for StateVault {
    fn get<'a>(&'a self, key: &'a str) -> TokenFuture<'a, Result<Option<Sealed>, TokenError>> {
        Box::pin(async move {
            let item = self.store.get(PARTITION, key).await.map_err(failed)?;
            Ok(item.map(|i| Sealed {
                bytes: i.value,
                expires: i.expires,
            }))
        })
    }

    fn put<'a>(&'a self, key: &'a str, record: Sealed) -> TokenFuture<'a, Result<(), TokenError>> {
        Box::pin(async move {
            let item = Item::new(record.bytes, record.expires);
            self.store.put(PARTITION, key, item).await.map_err(failed)
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> TokenFuture<'a, Result<(), TokenError>> {
        Box::pin(async move { self.store.delete(PARTITION, key).await.map_err(failed) })
    }

    fn spend<'a>(
        &'a self,
        nonce: &'a str,
        until: SystemTime,
    ) -> TokenFuture<'a, Result<bool, TokenError>> {
        Box::pin(async move {
            // Written only where no live mark is: the first spend wins in every process.
            let mark = Item::new(b"spent".to_vec(), Some(until));
            let key = format!("nonce#{nonce}");
            self.store
                .put_if(PARTITION, &key, mark, None)
                .await
                .map_err(failed)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Keys are fresh per run: the DynamoDB table may be shared.
    async fn contract(vault: StateVault) {
        let run = uuid::Uuid::new_v4().simple().to_string();
        let key = |k: &str| format!("token#demo#{run}-{k}");
        let later = SystemTime::now() + Duration::from_secs(600);
        let record = Sealed {
            bytes: vec![1, 2, 3],
            expires: Some(later),
        };
        vault.put(&key("u"), record.clone()).await.unwrap();
        let got = vault.get(&key("u")).await.unwrap().unwrap();
        assert_eq!(got.bytes, record.bytes);
        // Kept to the second, never less.
        let expires = got.expires.unwrap();
        assert!(expires >= later && expires < later + Duration::from_secs(1));
        assert!(vault.get(&key("other")).await.unwrap().is_none());
        vault.delete(&key("u")).await.unwrap();
        assert!(vault.get(&key("u")).await.unwrap().is_none());
        let expired = Sealed {
            bytes: vec![9],
            expires: Some(SystemTime::now() - Duration::from_secs(5)),
        };
        vault.put(&key("old"), expired).await.unwrap();
        assert!(vault.get(&key("old")).await.unwrap().is_none());
        // A nonce is spent once; a mark past its time no longer counts (the flow's own, shorter
        // expiry refuses such a nonce first; here only the store's rule is checked).
        let (n1, n2) = (format!("{run}-1"), format!("{run}-2"));
        assert!(vault.spend(&n1, later).await.unwrap());
        assert!(!vault.spend(&n1, later).await.unwrap());
        let past = SystemTime::now() - Duration::from_secs(5);
        assert!(vault.spend(&n2, past).await.unwrap());
        assert!(vault.spend(&n2, later).await.unwrap());
    }

    #[cfg(feature = "embedded-state")]
    #[tokio::test]
    async fn the_vault_keeps_sealed_records_and_spends_each_nonce_once_on_the_embedded_store() {
        contract(StateVault::new(
            crate::state::embedded::store(None).unwrap(),
        ))
        .await;
    }

    #[cfg(feature = "dynamodb")]
    #[tokio::test]
    #[ignore = "needs moto: scripts/test starts it (OXP_TEST_MOTO_URL) and runs this"]
    async fn the_vault_keeps_sealed_records_and_spends_each_nonce_once_on_dynamodb() {
        let (client, table) = crate::moto::state_table().await;
        let store = crate::state::dynamodb::DynamoState::new(client, table);
        contract(StateVault::new(Arc::new(store))).await;
    }
}
