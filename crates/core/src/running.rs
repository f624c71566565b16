//! Calls running in this process, so that a protocol's cancellation (RAP `/cancel_tool_call`,
//! MCP `notifications/cancelled`) can reach them: an adapter registers each under its caller,
//! a scope (RAP's thread) and an id while it runs, and a cancellation fires its signal. A
//! cancellation for a call that is not running here (finished, never seen, run by another
//! function) does nothing: both protocols make it advisory.

use crate::tool::Cancellation;
use hashbrown::HashTable;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Caller (authenticated subject), scope, id.
type Key = (Option<String>, String, String);

/// One registration: its key (hashed once, when registered), its number, its signal. Several
/// may share a key (MCP: two requests of one caller with one JSON-RPC id).
#[derive(Debug)]
struct Entry {
    hash: u64,
    key: Key,
    n: u64,
    signal: Cancellation,
}

/// The running calls of one adapter.
#[derive(Debug, Default)]
pub struct Running {
    /// Every registration, by its key's hash. A registration is forgotten by its hash and
    /// number, so ending a call (every call) hashes and compares no string again.
    calls: Mutex<HashTable<Entry>>,
    /// The keys' hasher: foldhash's seeded quality hasher, as the idempotency store's claims in
    /// progress hash theirs (SipHash cost each MCP call about 190 instructions). The ids are
    /// callers', and foldhash claims no resistance to a caller who learns its hashes; the table
    /// holds only calls in flight (each an open request or a running job, both bounded), and a
    /// caller can make its own entries share one key anyway (one JSON-RPC id on many requests),
    /// so colliding keys slow a lookup by that bound at most.
    hasher: foldhash::quality::RandomState,
    next: AtomicU64,
}

impl Running {
    /// Registers a running call; it is forgotten when the returned guard drops. A duplicate of
    /// a running call (RAP: the same invocation sent again) shares its signal and leaves its
    /// registration.
    pub fn start(
        self: &Arc<Self>,
        subject: Option<&str>,
        scope: &str,
        id: &str,
    ) -> (Cancellation, Registered) {
        let hash = self.hasher.hash_one((subject, scope, id));
        let shared = self
            .lock()
            .find(hash, |e| same(&e.key, subject, scope, id))
            .map(|e| e.signal.clone());
        match shared {
            Some(running) => (
                running,
                Registered {
                    running: self.clone(),
                    entry: None,
                },
            ),
            None => self.register(hash, subject, scope, id.to_owned()),
        }
    }

    /// Registers a running call with a signal of its own, whatever else runs under the same
    /// key (MCP: two requests of one caller may carry the same JSON-RPC id; closing one must
    /// not stop the other); a cancellation naming the key reaches each.
    pub fn start_own(
        self: &Arc<Self>,
        subject: Option<&str>,
        scope: &str,
        id: impl Into<String>,
    ) -> (Cancellation, Registered) {
        let id = id.into();
        let hash = self.hasher.hash_one((subject, scope, id.as_str()));
        self.register(hash, subject, scope, id)
    }

    fn register(
        self: &Arc<Self>,
        hash: u64,
        subject: Option<&str>,
        scope: &str,
        id: String,
    ) -> (Cancellation, Registered) {
        let signal = Cancellation::new();
        let n = self.next.fetch_add(1, Relaxed);
        let key = (subject.map(str::to_owned), scope.to_owned(), id);
        let entry = Entry {
            hash,
            key,
            n,
            signal: signal.clone(),
        };
        self.lock().insert_unique(hash, entry, |e| e.hash);
        let registered = Registered {
            running: self.clone(),
            entry: Some((hash, n)),
        };
        (signal, registered)
    }

    /// Cancels the calls running here under the key, for this caller. Whether there were any.
    pub fn cancel(&self, subject: Option<&str>, scope: &str, id: &str) -> bool {
        let hash = self.hasher.hash_one((subject, scope, id));
        let calls = self.lock();
        let mut found = false;
        for entry in calls.iter_hash(hash) {
            if same(&entry.key, subject, scope, id) {
                entry.signal.cancel();
                found = true;
            }
        }
        found
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashTable<Entry>> {
        // A panic while holding the lock leaves a table that is still consistent.
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether `key` is the caller's, scope's and id's.
fn same(key: &Key, subject: Option<&str>, scope: &str, id: &str) -> bool {
    key.0.as_deref() == subject && key.1 == scope && key.2 == id
}

/// A running call's registration; dropping it forgets the call.
#[derive(Debug)]
pub struct Registered {
    running: Arc<Running>,
    /// Its key's hash and its number (`None`: it shares another's).
    entry: Option<(u64, u64)>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let Some((hash, n)) = self.entry.take() else {
            return;
        };
        if let Ok(entry) = self.running.lock().find_entry(hash, |e| e.n == n) {
            entry.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_reaches_only_the_callers_own_running_call() {
        let running = Arc::new(Running::default());
        let (signal, registered) = running.start(Some("alice"), "t1", "c1");
        assert!(!running.cancel(Some("bob"), "t1", "c1"));
        assert!(!running.cancel(Some("alice"), "t2", "c1"));
        assert!(!signal.is_cancelled());
        assert!(running.cancel(Some("alice"), "t1", "c1"));
        assert!(signal.is_cancelled());
        drop(registered);
        assert!(
            !running.cancel(Some("alice"), "t1", "c1"),
            "forgotten once done"
        );
    }

    #[test]
    fn two_calls_of_one_key_with_signals_of_their_own_stop_alone_and_a_cancel_reaches_both() {
        let running = Arc::new(Running::default());
        let (first, _one) = running.start_own(Some("alice"), "", "1");
        let (second, two) = running.start_own(Some("alice"), "", "1");
        // The second's own signal (its request closed) leaves the first running.
        second.cancel();
        assert!(!first.is_cancelled());
        drop(two);
        let (third, _three) = running.start_own(Some("alice"), "", "1");
        assert!(running.cancel(Some("alice"), "", "1"));
        assert!(first.is_cancelled() && third.is_cancelled());
    }
}
