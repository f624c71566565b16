//! The local token vault: sealed records and spent nonces in memory, bounded, lost with the
//! process.

use oxp_lambda_core::tokens::{Sealed, TokenError, TokenFuture, TokenStore};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

/// Records (and spent nonces) kept at most; past it, expired ones are swept, and a store still
/// full refuses new records rather than grow (and evicts the spent mark expiring first).
const MAX_ENTRIES: usize = 100_000;

/// An in-memory [`TokenStore`].
#[derive(Debug, Default)]
pub(crate) struct MemoryVault {
    records: Mutex<HashMap<String, Sealed>>,
    nonces: Mutex<HashMap<String, SystemTime>>,
}

#[cfg(test)]
impl MemoryVault {
    /// Records and spent nonces held.
    pub(crate) fn sizes(&self) -> (usize, usize) {
        (
            self.records.lock().expect("vault lock").len(),
            self.nonces.lock().expect("vault lock").len(),
        )
    }
}

fn full() -> TokenError {
    TokenError("the in-memory token vault is full".into())
}

impl TokenStore for MemoryVault {
    fn get<'a>(&'a self, key: &'a str) -> TokenFuture<'a, Result<Option<Sealed>, TokenError>> {
        let now = SystemTime::now();
        let found = self
            .records
            .lock()
            .expect("vault lock")
            .get(key)
            .filter(|r| r.expires.is_none_or(|e| e > now))
            .cloned();
        Box::pin(async move { Ok(found) })
    }

    fn put<'a>(&'a self, key: &'a str, record: Sealed) -> TokenFuture<'a, Result<(), TokenError>> {
        let mut records = self.records.lock().expect("vault lock");
        if records.len() >= MAX_ENTRIES && !records.contains_key(key) {
            let now = SystemTime::now();
            records.retain(|_, r| r.expires.is_none_or(|e| e > now));
        }
        let result = if records.len() >= MAX_ENTRIES && !records.contains_key(key) {
            Err(full())
        } else {
            records.insert(key.to_owned(), record);
            Ok(())
        };
        Box::pin(async move { result })
    }

    fn delete<'a>(&'a self, key: &'a str) -> TokenFuture<'a, Result<(), TokenError>> {
        self.records.lock().expect("vault lock").remove(key);
        Box::pin(async { Ok(()) })
    }

    fn spend<'a>(
        &'a self,
        nonce: &'a str,
        until: SystemTime,
    ) -> TokenFuture<'a, Result<bool, TokenError>> {
        let now = SystemTime::now();
        let mut nonces = self.nonces.lock().expect("vault lock");
        if nonces.len() >= MAX_ENTRIES {
            nonces.retain(|_, until| *until > now);
        }
        let result = match nonces.get(nonce) {
            Some(spent_until) if *spent_until > now => Ok(false),
            _ => {
                // Full of live marks: the one that expires first goes, rather than every
                // user's next flow failing. (A mark only stops a replay of a completed flow,
                // whose code the provider refuses anyway.)
                if nonces.len() >= MAX_ENTRIES
                    && let Some(first) = nonces
                        .iter()
                        .min_by_key(|(_, until)| **until)
                        .map(|(k, _)| k.clone())
                {
                    nonces.remove(&first);
                }
                nonces.insert(nonce.to_owned(), until);
                Ok(true)
            }
        };
        Box::pin(async move { result })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_nonce_is_spent_once_and_an_expired_record_is_not_found() {
        let vault = MemoryVault::default();
        let later = SystemTime::now() + Duration::from_secs(60);
        assert!(vault.spend("n", later).await.unwrap());
        assert!(!vault.spend("n", later).await.unwrap());
        let past = Sealed {
            bytes: vec![1],
            expires: Some(SystemTime::now() - Duration::from_secs(1)),
        };
        vault.put("k", past).await.unwrap();
        assert!(vault.get("k").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_vault_full_of_live_marks_evicts_the_first_to_expire_rather_than_refuse() {
        let vault = MemoryVault::default();
        let base = SystemTime::now() + Duration::from_secs(600);
        for i in 0..MAX_ENTRIES {
            let until = base + Duration::from_secs(i as u64);
            assert!(vault.spend(&format!("n{i}"), until).await.unwrap());
        }
        // Another user's flow completes: its mark is kept, the earliest one goes.
        assert!(vault.spend("next", base).await.unwrap());
        assert!(!vault.spend("next", base).await.unwrap());
        assert_eq!(vault.sizes().1, MAX_ENTRIES);
        assert!(vault.spend("n0", base).await.unwrap(), "n0 was evicted");
    }
}
