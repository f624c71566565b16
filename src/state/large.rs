//! Values larger than one item of the store ([`MAX_VALUE_BYTES`]: DynamoDB's item limit is
//! 400 KB, and an outcome's content may reach 3 MiB): kept in the record itself when small,
//! else split across items of the same store (no other service), written before the record
//! names them and deleted after it is gone, so a record never names a part that is missing.

use futures_util::future::try_join_all;
use oxp_lambda_core::durable::{Item, MAX_VALUE_BYTES, StateError, StateStore};
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// The partition of the parts.
const PARTS: &str = "parts";
/// Values up to this size stay in their record.
const INLINE: usize = 32 * 1024;
/// The size of one part: well within an item, its attributes included.
const PART: usize = MAX_VALUE_BYTES - 4 * 1024;

/// A value as its record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kept {
    /// The value itself (UTF-8 text: the values kept are JSON).
    Inline(String),
    /// In `count` parts under `key`, `len` bytes in all.
    Parts { key: String, count: u32, len: usize },
}

/// Keeps `value` (UTF-8) for a record, its parts (if any) until `expires`.
pub(crate) async fn keep(
    store: &dyn StateStore,
    value: Vec<u8>,
    expires: Option<SystemTime>,
) -> Result<Kept, StateError> {
    if value.len() <= INLINE {
        return String::from_utf8(value)
            .map(Kept::Inline)
            .map_err(|_| StateError("a kept value is not text".into()));
    }
    let key = uuid::Uuid::new_v4().simple().to_string();
    let parts = value.chunks(PART).enumerate().map(|(n, part)| {
        let item = Item::new(part.to_vec(), expires);
        let name = part_key(&key, n);
        async move { store.put(PARTS, &name, item).await }
    });
    try_join_all(parts).await?;
    Ok(Kept::Parts {
        count: value.len().div_ceil(PART) as u32,
        len: value.len(),
        key,
    })
}

fn part_key(key: &str, n: usize) -> String {
    format!("{key}:{n:05}")
}

impl Kept {
    /// The value, read back whole: every part there and the length it had, else an error.
    pub(crate) async fn read(&self, store: &dyn StateStore) -> Result<Vec<u8>, StateError> {
        let (key, count, len) = match self {
            Self::Inline(text) => return Ok(text.clone().into_bytes()),
            Self::Parts { key, count, len } => (key, *count as usize, *len),
        };
        let parts = (0..count).map(|n| {
            let name = part_key(key, n);
            async move { store.get(PARTS, &name).await }
        });
        let mut value = Vec::with_capacity(len);
        for part in try_join_all(parts).await? {
            let part = part.ok_or_else(|| StateError("a kept value lost a part".into()))?;
            value.extend_from_slice(&part.value);
        }
        if value.len() != len {
            return Err(StateError("a kept value lost a part".into()));
        }
        Ok(value)
    }

    /// Deletes the parts (once the record that named them is gone).
    pub(crate) async fn forget(&self, store: &dyn StateStore) -> Result<(), StateError> {
        let Self::Parts { key, count, .. } = self else {
            return Ok(());
        };
        let parts = (0..*count as usize).map(|n| {
            let name = part_key(key, n);
            async move { store.delete(PARTS, &name).await }
        });
        try_join_all(parts).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_small_value_stays_in_its_record_and_a_large_one_is_read_back_whole_from_parts() {
        let store = crate::state::embedded::store(None).unwrap();
        let small = keep(&*store, b"{\"a\":1}".to_vec(), None).await.unwrap();
        assert_eq!(small, Kept::Inline("{\"a\":1}".into()));
        // 1 MiB and a bit: five parts.
        let big: Vec<u8> = (0..(1 << 20) + 7).map(|i| b'a' + (i % 26) as u8).collect();
        let kept = keep(&*store, big.clone(), None).await.unwrap();
        assert!(matches!(kept, Kept::Parts { count: 5, .. }), "{kept:?}");
        assert_eq!(kept.read(&*store).await.unwrap(), big);
        kept.forget(&*store).await.unwrap();
        assert!(store.list(PARTS, None, 10).await.unwrap().is_empty());
        let lost = kept.read(&*store).await.unwrap_err();
        assert_eq!(lost.0, "a kept value lost a part");
    }
}
