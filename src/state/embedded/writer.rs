//! The writer thread of the embedded store: every write waiting when it is free applied, in
//! order, in one transaction with one flush to disk (a group commit), then each answered.

use super::index::Indexes;
use super::{TABLE, decode, failed, reclaim};
use oxp_lambda_core::durable::StateError;
use redb::{Database, ReadableTable};
use std::time::SystemTime;
use tokio::sync::{mpsc, oneshot};

/// Writes one group commit takes at most.
pub(super) const GROUP: usize = 256;

/// One write and who waits for it.
pub(super) struct Pending {
    pub(super) row: String,
    pub(super) write: Write,
    /// When the row written is due (Unix milliseconds), for the due index.
    pub(super) due_ms: Option<u64>,
    pub(super) done: oneshot::Sender<Result<bool, StateError>>,
}

/// What one write does to its row.
pub(super) enum Write {
    /// Written when the row holds `expected` (`None`: no live item); `bytes` `None`: removed
    /// then (an item written already expired).
    PutIf {
        bytes: Option<Vec<u8>>,
        expected: Option<Vec<u8>>,
    },
    Put(Vec<u8>),
    Delete,
}

impl Write {
    /// What the row holds after this write, given whether its condition held (`None`: removed,
    /// `Some(None)`: unchanged).
    fn result(&self, held: bool) -> Option<Option<&[u8]>> {
        match self {
            Self::PutIf { .. } if !held => None,
            Self::PutIf { bytes, .. } => Some(bytes.as_deref()),
            Self::Put(bytes) => Some(Some(bytes)),
            Self::Delete => Some(None),
        }
    }
}

/// The writer thread: each group of waiting writes in one transaction, one commit; expired rows
/// reclaimed between groups when `schedule` says.
pub(super) fn write_groups(
    db: &Database,
    mut queue: mpsc::Receiver<Pending>,
    mut schedule: reclaim::Schedule,
) {
    while let Some(first) = queue.blocking_recv() {
        let mut group = vec![first];
        while group.len() < GROUP {
            match queue.try_recv() {
                Ok(next) => group.push(next),
                Err(_) => break,
            }
        }
        match commit(db, &group) {
            Ok(answers) => {
                for (pending, answer) in group.into_iter().zip(answers) {
                    let _ = pending.done.send(Ok(answer));
                }
            }
            Err(e) => {
                // Nothing of the group was committed: each writer hears so.
                for pending in group {
                    let _ = pending.done.send(Err(e.clone()));
                }
            }
        }
        schedule.after_writes(db);
    }
}

/// Applies `group` in order in one transaction (a later write sees an earlier one's result),
/// keeping the indexes, and commits it.
fn commit(db: &Database, group: &[Pending]) -> Result<Vec<bool>, StateError> {
    let txn = db.begin_write().map_err(|e| failed("write", e))?;
    let mut answers = Vec::with_capacity(group.len());
    {
        let mut table = txn.open_table(TABLE).map_err(|e| failed("write", e))?;
        let mut indexes = Indexes::open(&txn)?;
        let now = SystemTime::now();
        for pending in group {
            let row = pending.row.as_str();
            let old = table
                .get(row)
                .map_err(|e| failed("write", e))?
                .map(|v| v.value().to_vec());
            let held = match &pending.write {
                Write::PutIf { expected, .. } => {
                    let live = old.as_deref().and_then(|v| decode(v, now));
                    match (&live, expected) {
                        (None, None) => true,
                        (Some(live), Some(expected)) => live.value == *expected,
                        _ => false,
                    }
                }
                Write::Put(_) | Write::Delete => true,
            };
            if let Some(new) = pending.write.result(held) {
                match new {
                    Some(bytes) => table.insert(row, bytes).map(drop),
                    None => table.remove(row).map(drop),
                }
                .map_err(|e| failed("write", e))?;
                indexes.changed(row, old.as_deref(), new, pending.due_ms)?;
            }
            answers.push(held);
        }
    }
    txn.commit().map_err(|e| failed("write", e))?;
    Ok(answers)
}
