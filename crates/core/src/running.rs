//! Calls running in this process, so that a protocol's cancellation (RAP `/cancel_tool_call`,
//! MCP `notifications/cancelled`) can reach them: an adapter registers each under its caller,
//! a scope (RAP's thread) and an id while it runs, and a cancellation fires its signal. A
//! cancellation for a call that is not running here (finished, never seen, run by another
//! function) does nothing: both protocols make it advisory.

use crate::tool::Cancellation;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Caller (authenticated subject), scope, id.
type Key = (Option<String>, String, String);

/// A call's key: its caller, the scope of its id, the id.
fn key(subject: Option<&str>, scope: &str, id: &str) -> Key {
    (subject.map(str::to_owned), scope.to_owned(), id.to_owned())
}

/// The running calls of one adapter.
#[derive(Debug, Default)]
pub struct Running {
    /// Each key's calls: their registration's number and signal.
    calls: Mutex<HashMap<Key, Vec<(u64, Cancellation)>>>,
    next: std::sync::atomic::AtomicU64,
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
        let key = key(subject, scope, id);
        let shared = self
            .lock()
            .get(&key)
            .and_then(|calls| calls.first())
            .cloned();
        match shared {
            Some((_, running)) => (
                running,
                Registered {
                    running: self.clone(),
                    key: None,
                },
            ),
            None => self.start_own(subject, scope, id),
        }
    }

    /// Registers a running call with a signal of its own, whatever else runs under the same
    /// key (MCP: two requests of one caller may carry the same JSON-RPC id; closing one must
    /// not stop the other); a cancellation naming the key reaches each.
    pub fn start_own(
        self: &Arc<Self>,
        subject: Option<&str>,
        scope: &str,
        id: &str,
    ) -> (Cancellation, Registered) {
        let key = key(subject, scope, id);
        let cancellation = Cancellation::new();
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock()
            .entry(key.clone())
            .or_default()
            .push((n, cancellation.clone()));
        let registered = Registered {
            running: self.clone(),
            key: Some((key, n)),
        };
        (cancellation, registered)
    }

    /// Cancels the calls running here under the key, for this caller. Whether there were any.
    pub fn cancel(&self, subject: Option<&str>, scope: &str, id: &str) -> bool {
        let key = key(subject, scope, id);
        match self.lock().get(&key) {
            Some(calls) => {
                calls.iter().for_each(|(_, c)| c.cancel());
                true
            }
            None => false,
        }
    }

    /// Cancels every call running here (the server is shutting down). How many there were.
    pub fn cancel_all(&self) -> usize {
        let calls = self.lock();
        calls.values().flatten().for_each(|(_, c)| c.cancel());
        calls.values().map(Vec::len).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Vec<(u64, Cancellation)>>> {
        // A panic while holding the lock leaves a map that is still consistent.
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running call's registration; dropping it forgets the call.
#[derive(Debug)]
pub struct Registered {
    running: Arc<Running>,
    key: Option<(Key, u64)>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let Some((key, n)) = self.key.take() else {
            return;
        };
        let mut calls = self.running.lock();
        if let Some(list) = calls.get_mut(&key) {
            list.retain(|(m, _)| *m != n);
            if list.is_empty() {
                calls.remove(&key);
            }
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
