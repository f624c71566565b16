//! The embedded store's two indexes, kept by the writer in the transaction of every write: rows
//! by due time ([`DUE`], what `StateStore::due` reads: a sweep for work come due reads what is
//! due, never the whole partition) and rows by expiry ([`EXPIRING`], what the reclaim reads:
//! the oldest expired rows first, never a scan of the file). Keys are text that sorts as the
//! times do (zero-padded), so a range read is the order.

use super::{TABLE, failed, split};
use oxp_lambda_core::durable::StateError;
use redb::{ReadableTable, Table, TableDefinition, WriteTransaction};

/// Rows by due time: `partition \0 due_ms(20 digits) \0 key` -> ().
pub(super) const DUE: TableDefinition<'_, &str, ()> = TableDefinition::new("due");
/// Each row's due time (the key of its [`DUE`] entry), to take it out when the row changes.
const DUE_OF: TableDefinition<'_, &str, u64> = TableDefinition::new("due_of");
/// Rows by expiry: `expiry_secs(20 digits) \0 row` -> ().
pub(super) const EXPIRING: TableDefinition<'_, &str, ()> = TableDefinition::new("expiring");
/// What the file holds of the indexes: `version` -> 1 once [`EXPIRING`] covers every row (a
/// file of an earlier version is indexed once, when opened).
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");

/// The [`DUE`] key of `row` (`partition \0 key`) due at `due_ms`.
pub(super) fn due_key(row: &str, due_ms: u64) -> String {
    let (partition, key) = row.split_once('\0').unwrap_or((row, ""));
    format!("{partition}\0{due_ms:020}\0{key}")
}

/// The [`EXPIRING`] key of `row` expiring at `secs`.
pub(super) fn expiring_key(row: &str, secs: u64) -> String {
    format!("{secs:020}\0{row}")
}

/// The indexes, open in one write transaction.
pub(super) struct Indexes<'txn> {
    due: Table<'txn, &'static str, ()>,
    due_of: Table<'txn, &'static str, u64>,
    expiring: Table<'txn, &'static str, ()>,
}

impl<'txn> Indexes<'txn> {
    pub(super) fn open(txn: &'txn WriteTransaction) -> Result<Self, StateError> {
        Ok(Self {
            due: txn.open_table(DUE).map_err(|e| failed("index", e))?,
            due_of: txn.open_table(DUE_OF).map_err(|e| failed("index", e))?,
            expiring: txn.open_table(EXPIRING).map_err(|e| failed("index", e))?,
        })
    }

    /// `row`, which held `old` (its stored bytes), now holds `new` (stored bytes; `None`:
    /// removed), due at `due_ms`.
    pub(super) fn changed(
        &mut self,
        row: &str,
        old: Option<&[u8]>,
        new: Option<&[u8]>,
        due_ms: Option<u64>,
    ) -> Result<(), StateError> {
        let expiry = |bytes: Option<&[u8]>| bytes.and_then(split).map(|(at, _)| at);
        let (was, now) = (expiry(old).unwrap_or(0), expiry(new).unwrap_or(0));
        if was != now || new.is_none() {
            if was > 0 {
                self.expiring
                    .remove(expiring_key(row, was).as_str())
                    .map_err(|e| failed("index", e))?;
            }
            if now > 0 && new.is_some() {
                self.expiring
                    .insert(expiring_key(row, now).as_str(), ())
                    .map_err(|e| failed("index", e))?;
            }
        }
        let before = self
            .due_of
            .get(row)
            .map_err(|e| failed("index", e))?
            .map(|v| v.value());
        let after = due_ms.filter(|_| new.is_some());
        if before == after {
            return Ok(());
        }
        if let Some(at) = before {
            self.due
                .remove(due_key(row, at).as_str())
                .map_err(|e| failed("index", e))?;
            self.due_of.remove(row).map_err(|e| failed("index", e))?;
        }
        if let Some(at) = after {
            self.due
                .insert(due_key(row, at).as_str(), ())
                .map_err(|e| failed("index", e))?;
            self.due_of
                .insert(row, at)
                .map_err(|e| failed("index", e))?;
        }
        Ok(())
    }
}

impl Indexes<'_> {
    /// Takes the expiry entry `entry` out (its row is gone).
    pub(super) fn forget_expiring(&mut self, entry: &str) -> Result<(), StateError> {
        self.expiring
            .remove(entry)
            .map_err(|e| failed("index", e))?;
        Ok(())
    }
}

/// Makes the indexes cover every row of a file an earlier version wrote (once: [`META`] then
/// says so). Rows of that version have no due time: a sweep finds them by listing.
pub(super) fn cover(txn: &WriteTransaction) -> Result<(), StateError> {
    let mut meta = txn.open_table(META).map_err(|e| failed("index", e))?;
    if meta
        .get("version")
        .map_err(|e| failed("index", e))?
        .is_some()
    {
        return Ok(());
    }
    let table = txn.open_table(TABLE).map_err(|e| failed("index", e))?;
    let mut indexes = Indexes::open(txn)?;
    for row in table.iter().map_err(|e| failed("index", e))? {
        let (row, bytes) = row.map_err(|e| failed("index", e))?;
        indexes.changed(row.value(), None, Some(bytes.value()), None)?;
    }
    meta.insert("version", 1).map_err(|e| failed("index", e))?;
    Ok(())
}
