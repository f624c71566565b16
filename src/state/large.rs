//! Values larger than one item of the store ([`MAX_VALUE_BYTES`]: DynamoDB's item limit is
//! 400 KB, and an outcome's content may reach 3 MiB): kept in the record itself when small,
//! else split across items of the same store (no other service), written before the record
//! names them and deleted after it is gone, so a record never names a part that is missing.
//! Each part counts in its caller's room ([`Room`]: a share of slots, one per part) for as
//! long as it is kept, so what one caller's results take of the store is bounded in bytes.

use crate::state::share::{Full, Share};
use futures_util::future::try_join_all;
use oxp_lambda_core::durable::{Item, MAX_VALUE_BYTES, StateError, StateStore};
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// The partition of the parts.
const PARTS: &str = "parts";
/// The prefix of the partitions of callers' rooms.
const ROOM: &str = "parts-of";
/// Values up to this size stay in their record.
const INLINE: usize = 32 * 1024;
/// The size of one part: well within an item, its attributes included.
pub(crate) const PART: usize = MAX_VALUE_BYTES - 4 * 1024;

/// A value as its record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kept {
    /// The value itself (UTF-8 text: the values kept are JSON).
    Inline(String),
    /// In `count` parts under `key`, `len` bytes in all; `room`: the slots they hold in their
    /// caller's room (a record of an earlier version names none).
    Parts {
        key: String,
        count: u32,
        len: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        room: Option<Held>,
    },
}

/// The slots a value's parts hold in its caller's room, the `n`th part's `n`th.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Held {
    caller: String,
    slots: Vec<String>,
}

/// The shares of callers' parts: `bytes` each (`OXP_WORK_MAX_BYTES_PER_CALLER`), a slot per part.
pub(crate) fn rooms(bytes: usize) -> Share {
    Share::new(ROOM, bytes.div_ceil(PART))
}

/// Where a value's parts count: its caller's room (`share`, from [`rooms`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Room<'a> {
    pub(crate) share: &'a Share,
    pub(crate) caller: &'a str,
}

/// Keeps `value` (UTF-8) for a record, its parts (if any) until `expires`, each holding a slot
/// of `room` meanwhile: [`Full::Caller`] when they do not fit in it (nothing is then kept).
pub(crate) async fn keep(
    store: &dyn StateStore,
    value: &[u8],
    expires: Option<SystemTime>,
    room: Option<Room<'_>>,
) -> Result<Kept, Full> {
    if value.len() <= INLINE {
        return std::str::from_utf8(value)
            .map(|text| Kept::Inline(text.to_owned()))
            .map_err(|_| Full::Unavailable("a kept value is not text".into()));
    }
    let key = uuid::Uuid::new_v4().simple().to_string();
    let count = value.len().div_ceil(PART);
    let held = match room {
        Some(room) => Some(take_room(store, room, &key, count, expires).await?),
        None => None,
    };
    let kept = Kept::Parts {
        key: key.clone(),
        count: count as u32,
        len: value.len(),
        room: held,
    };
    let parts = value.chunks(PART).enumerate().map(|(n, part)| {
        let item = Item::new(part.to_vec(), expires);
        let name = part_key(&key, n);
        async move { store.put(PARTS, &name, item).await }
    });
    if let Err(e) = try_join_all(parts).await {
        let _ = kept.forget(store).await;
        return Err(Full::Unavailable(e.0));
    }
    Ok(kept)
}

/// Takes a slot of `room` for each of the `count` parts under `key`, or none.
async fn take_room(
    store: &dyn StateStore,
    room: Room<'_>,
    key: &str,
    count: usize,
    until: Option<SystemTime>,
) -> Result<Held, Full> {
    let holders: Vec<String> = (0..count).map(|n| part_key(key, n)).collect();
    match room
        .share
        .take_all(store, room.caller, &holders, until)
        .await
    {
        Ok(slots) => Ok(Held {
            caller: room.caller.to_owned(),
            slots,
        }),
        Err(refused) => {
            if refused == Full::Caller {
                tracing::warn!(target: "oxp::state", parts = count, "a value not kept: no room in its caller's share (OXP_WORK_MAX_BYTES_PER_CALLER)");
            }
            Err(refused)
        }
    }
}

fn part_key(key: &str, n: usize) -> String {
    format!("{key}:{n:05}")
}

impl Kept {
    /// The value, read back whole: every part there and the length it had, else an error.
    pub(crate) async fn read(&self, store: &dyn StateStore) -> Result<Vec<u8>, StateError> {
        let (key, count, len) = match self {
            Self::Inline(text) => return Ok(text.clone().into_bytes()),
            Self::Parts {
                key, count, len, ..
            } => (key, *count as usize, *len),
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

    /// Deletes the parts (once the record that named them is gone), and gives back the slots
    /// they held in their caller's room.
    pub(crate) async fn forget(&self, store: &dyn StateStore) -> Result<(), StateError> {
        let Self::Parts {
            key, count, room, ..
        } = self
        else {
            return Ok(());
        };
        let parts = (0..*count as usize).map(|n| async move {
            let name = part_key(key, n);
            store.delete(PARTS, &name).await?;
            match room
                .as_ref()
                .and_then(|held| Some((held, held.slots.get(n)?)))
            {
                // Any share of rooms finds the slot by the caller and its number.
                Some((held, slot)) => {
                    rooms(PART)
                        .give_back(store, &held.caller, slot, &name)
                        .await
                }
                None => Ok(()),
            }
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
        let small = keep(&*store, b"{\"a\":1}", None, None).await.unwrap();
        assert_eq!(small, Kept::Inline("{\"a\":1}".into()));
        // 1 MiB and a bit: five parts.
        let big: Vec<u8> = (0..(1 << 20) + 7).map(|i| b'a' + (i % 26) as u8).collect();
        let kept = keep(&*store, &big, None, None).await.unwrap();
        assert!(matches!(kept, Kept::Parts { count: 5, .. }), "{kept:?}");
        assert_eq!(kept.read(&*store).await.unwrap(), big);
        kept.forget(&*store).await.unwrap();
        assert!(store.list(PARTS, None, 10).await.unwrap().is_empty());
        let lost = kept.read(&*store).await.unwrap_err();
        assert_eq!(lost.0, "a kept value lost a part");
    }

    /// Slots held in `caller`'s room.
    async fn held(store: &dyn StateStore, caller: &str) -> usize {
        let partition = format!("{ROOM}#{caller}");
        store.list(&partition, None, 100).await.unwrap().len()
    }

    #[tokio::test]
    async fn a_value_whose_parts_do_not_fit_in_its_callers_room_is_not_kept_and_holds_nothing() {
        let store = crate::state::embedded::store(None).unwrap();
        // Room for three parts; a value of two parts fits once.
        let share = rooms(3 * PART);
        let room = |caller| {
            Some(Room {
                share: &share,
                caller,
            })
        };
        let two = vec![b'x'; PART + 1];
        let first = keep(&*store, &two, None, room("ana")).await.unwrap();
        assert!(matches!(
            &first,
            Kept::Parts {
                count: 2,
                room: Some(_),
                ..
            }
        ));
        assert_eq!(held(&*store, "ana").await, 2);
        let refused = keep(&*store, &two, None, room("ana")).await.unwrap_err();
        assert_eq!(refused, Full::Caller);
        // Nothing of the refused value stays: its one slot taken is given back, no part written.
        assert_eq!(held(&*store, "ana").await, 2);
        assert_eq!(store.list(PARTS, None, 10).await.unwrap().len(), 2);
        // Another caller's room is its own.
        let other = keep(&*store, &two, None, room("bo")).await.unwrap();
        assert_eq!(other.read(&*store).await.unwrap(), two);
        // A small value takes no part, so no room.
        let small = keep(&*store, b"{}", None, room("ana")).await.unwrap();
        assert_eq!(small, Kept::Inline("{}".into()));
        // Forgetting the first gives its slots back: the next fits.
        first.forget(&*store).await.unwrap();
        assert_eq!(held(&*store, "ana").await, 0);
        let next = keep(&*store, &two, None, room("ana")).await.unwrap();
        assert_eq!(next.read(&*store).await.unwrap(), two);
    }

    #[tokio::test]
    async fn a_record_of_an_earlier_version_naming_no_room_still_reads_and_forgets() {
        let store = crate::state::embedded::store(None).unwrap();
        let big = vec![b'y'; PART * 2];
        let kept = keep(&*store, &big, None, None).await.unwrap();
        let json = serde_json::to_value(&kept).unwrap();
        assert!(json["parts"].get("room").is_none(), "{json}");
        let earlier: Kept = serde_json::from_value(json).unwrap();
        assert_eq!(earlier.read(&*store).await.unwrap(), big);
        earlier.forget(&*store).await.unwrap();
        assert!(store.list(PARTS, None, 10).await.unwrap().is_empty());
    }
}
