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
    /// Nobody is answered on it (`StateStore::put_if_later`): it shares the next flush somebody
    /// waits on, or has one of its own after [`LATER`].
    pub(super) later: bool,
}

/// How long writes nobody waits on wait for a write somebody does, to share its flush: a record
/// that ends and the slot it gives back would otherwise each take a flush (about a quarter of a
/// millisecond here) that the next call's writes wait behind (docs/performance.md).
pub(super) const LATER: std::time::Duration = std::time::Duration::from_millis(25);

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
/// reclaimed between groups when `schedule` says. A group of writes nobody waits on (`later`)
/// waits up to [`LATER`] on `clock` for one somebody does, to share its flush.
pub(super) fn write_groups(
    db: &Database,
    mut queue: mpsc::Receiver<Pending>,
    mut schedule: reclaim::Schedule,
    clock: &tokio::runtime::Runtime,
) {
    while let Some(first) = queue.blocking_recv() {
        let mut group = vec![first];
        take_waiting(&mut queue, &mut group);
        let until = tokio::time::Instant::now() + LATER;
        while group.iter().all(|p| p.later) && group.len() < GROUP {
            match clock.block_on(async { tokio::time::timeout_at(until, queue.recv()).await }) {
                Ok(Some(next)) => {
                    group.push(next);
                    take_waiting(&mut queue, &mut group);
                }
                // The queue closed (the store is dropped), or the wait is over.
                Ok(None) | Err(_) => break,
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

/// Adds the writes waiting in `queue` to `group`, up to [`GROUP`].
fn take_waiting(queue: &mut mpsc::Receiver<Pending>, group: &mut Vec<Pending>) {
    while group.len() < GROUP {
        match queue.try_recv() {
            Ok(next) => group.push(next),
            Err(_) => break,
        }
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
