//! A row of the embedded store: its name (`partition \0 key`) and its bytes (the expiry in
//! Unix seconds, then the value).

use oxp_lambda_core::durable::{Item, MAX_VALUE_BYTES, StateError};
use redb::TableDefinition;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One table: `partition \0 key` -> expiry (Unix seconds, 0: none) then the value.
pub(super) const TABLE: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("state");

/// The row of `key` in `partition`.
pub(super) fn row(partition: &str, key: &str) -> Result<String, StateError> {
    if partition.is_empty() || key.is_empty() {
        return Err(StateError("state store: an empty partition or key".into()));
    }
    Ok(format!("{partition}\0{key}"))
}

/// An expiry in whole Unix seconds, rounded up: an item is never taken for expired before its
/// time (rounded down, an item kept for a second could expire at once).
pub(super) fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| {
        (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
    })
}

/// The bytes of `item`, refused past [`MAX_VALUE_BYTES`].
pub(super) fn encode(item: &Item) -> Result<Vec<u8>, StateError> {
    if item.value.len() > MAX_VALUE_BYTES {
        return Err(StateError("state store: the value is too large".into()));
    }
    let mut bytes = Vec::with_capacity(8 + item.value.len());
    bytes.extend_from_slice(&item.expires.map_or(0, secs).to_be_bytes());
    bytes.extend_from_slice(&item.value);
    Ok(bytes)
}

/// A row's expiry (Unix seconds, 0: none) and its value; `None` for a row too short.
pub(super) fn split(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (expiry, value) = bytes.split_at_checked(8)?;
    Some((u64::from_be_bytes(expiry.try_into().ok()?), value))
}

/// The item a row holds, `None` once expired.
pub(super) fn decode(bytes: &[u8], now: SystemTime) -> Option<Item> {
    let (at, value) = split(bytes)?;
    let expires = (at > 0).then(|| UNIX_EPOCH + Duration::from_secs(at));
    let item = Item::new(value.to_vec(), expires);
    (!item.expired(now)).then_some(item)
}
