//! The writer thread of the embedded store: every write waiting when it is free applied, in
//! order, in one transaction with one flush to disk (a group commit), then each answered.

use super::index::Indexes;
use super::open::{Current, RETRY, reopening};
use super::{TABLE, decode, failed, reclaim};
use oxp_lambda_core::durable::{Decided, StateError};
use redb::{Database, ReadableTable, Table};
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
    /// Whether its flush is waited on at once.
    pub(super) waits: Waits,
}

/// Whether anybody waits on a write's flush.
pub(super) enum Waits {
    /// Its writer, at once.
    Flush,
    /// Nobody is answered on it (`StateStore::put_if_later`): it shares the next flush somebody
    /// waits on, or has one of its own after [`LATER`].
    Later,
    /// Its writer waits on the decision of its condition, told as soon as the write is applied
    /// (`StateStore::put_if_decided`); when the writer answers that a write follows, its flush
    /// then waits like a [`Waits::Later`] one, so that the write that follows (the outcome of
    /// the call an answer woke) shares it, and is made at once otherwise.
    Decided(Decided),
}

/// How long writes nobody waits on the flush of wait for a write somebody does, to share its
/// flush: a record that ends and the slot it gives back would otherwise each take a flush
/// (about a quarter of a millisecond here) that the next call's writes wait behind, and an
/// answer one before the call it wakes writes its outcome (docs/performance.md).
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
/// reclaimed between groups when `schedule` says; the database opened again when a failed
/// write stopped it (`open.rs`).
pub(super) fn write_groups(
    mut db: Current,
    mut queue: mpsc::Receiver<Pending>,
    mut schedule: reclaim::Schedule,
    clock: &tokio::runtime::Runtime,
) {
    loop {
        let next = match db.open_now() {
            Some(_) => queue.blocking_recv(),
            // Closed after a failed write: opened again within a second whether or not a
            // write comes (the readers wait for it too).
            None => match clock.block_on(async { tokio::time::timeout(RETRY, queue.recv()).await })
            {
                Ok(next) => next,
                Err(_) => {
                    db.get();
                    continue;
                }
            },
        };
        let Some(first) = next else {
            return;
        };
        let mut group = vec![first];
        take_waiting(&mut queue, &mut group);
        let committed = match db.get() {
            Some(open) => commit(open, &mut queue, &mut group, clock),
            None => Err(reopening()),
        };
        match committed {
            Ok(answers) => {
                for (pending, answer) in group.into_iter().zip(answers) {
                    let _ = pending.done.send(Ok(answer));
                }
            }
            Err(e) => {
                // Nothing of the group was committed: each writer hears so (a decision told
                // before is not durable; its writer hears that too).
                for pending in group {
                    let _ = pending.done.send(Err(e.clone()));
                }
                db.after_failure();
            }
        }
        if let Some(open) = db.open_now()
            && !schedule.after_writes(open)
        {
            db.after_failure();
        }
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
/// keeping the indexes, and commits it; while nobody waits on its flush, the writes that come
/// within [`LATER`] on `clock` join it first.
fn commit(
    db: &Database,
    queue: &mut mpsc::Receiver<Pending>,
    group: &mut Vec<Pending>,
    clock: &tokio::runtime::Runtime,
) -> Result<Vec<bool>, StateError> {
    let txn = db.begin_write().map_err(|e| failed("write", e))?;
    let mut answers = Vec::with_capacity(group.len());
    {
        let mut table = txn.open_table(TABLE).map_err(|e| failed("write", e))?;
        let mut indexes = Indexes::open(&txn)?;
        apply(&mut table, &mut indexes, group, &mut answers)?;
        let until = tokio::time::Instant::now() + LATER;
        while !group.iter().any(|p| matches!(p.waits, Waits::Flush)) && group.len() < GROUP {
            match clock.block_on(async { tokio::time::timeout_at(until, queue.recv()).await }) {
                Ok(Some(next)) => {
                    group.push(next);
                    take_waiting(queue, group);
                    apply(&mut table, &mut indexes, group, &mut answers)?;
                }
                // The queue closed (the store is dropped), or the wait is over.
                Ok(None) | Err(_) => break,
            }
        }
    }
    txn.commit().map_err(|e| failed("write", e))?;
    Ok(answers)
}

/// Applies the writes of `group` not applied yet (those past `answers`), in order, each one's
/// answer pushed onto `answers` and a decision waited on told at once.
fn apply(
    table: &mut Table<'_, &'static str, &'static [u8]>,
    indexes: &mut Indexes<'_>,
    group: &mut [Pending],
    answers: &mut Vec<bool>,
) -> Result<(), StateError> {
    let now = SystemTime::now();
    for pending in &mut group[answers.len()..] {
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
        if matches!(pending.waits, Waits::Decided(_))
            && let Waits::Decided(tell) = std::mem::replace(&mut pending.waits, Waits::Flush)
            && tell(held)
        {
            pending.waits = Waits::Later;
        }
        answers.push(held);
    }
    Ok(())
}
