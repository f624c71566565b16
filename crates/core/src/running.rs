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

/// The running calls of one adapter.
#[derive(Debug, Default)]
pub struct Running {
    calls: Mutex<HashMap<Key, Cancellation>>,
}

impl Running {
    /// Registers a running call; it is forgotten when the returned guard drops.
    pub fn start(
        self: &Arc<Self>,
        subject: Option<&str>,
        scope: &str,
        id: &str,
    ) -> (Cancellation, Registered) {
        let key = (subject.map(str::to_owned), scope.to_owned(), id.to_owned());
        // A duplicate of a running invocation shares its signal and leaves its registration.
        let mut calls = self.lock();
        if let Some(running) = calls.get(&key) {
            let shared = running.clone();
            drop(calls);
            return (
                shared,
                Registered {
                    running: self.clone(),
                    key: None,
                },
            );
        }
        let cancellation = Cancellation::new();
        calls.insert(key.clone(), cancellation.clone());
        drop(calls);
        let registered = Registered {
            running: self.clone(),
            key: Some(key),
        };
        (cancellation, registered)
    }

    /// Cancels the call, if it runs here for this caller. Whether it did.
    pub fn cancel(&self, subject: Option<&str>, scope: &str, id: &str) -> bool {
        let key = (subject.map(str::to_owned), scope.to_owned(), id.to_owned());
        match self.lock().get(&key) {
            Some(cancellation) => {
                cancellation.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels every call running here (the server is shutting down). How many there were.
    pub fn cancel_all(&self) -> usize {
        let calls = self.lock();
        for cancellation in calls.values() {
            cancellation.cancel();
        }
        calls.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Cancellation>> {
        // A panic while holding the lock leaves a map that is still consistent.
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running call's registration; dropping it forgets the call.
#[derive(Debug)]
pub struct Registered {
    running: Arc<Running>,
    key: Option<Key>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.running.lock().remove(&key);
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
}
