//! A run watching the store for its cancellation, written by another process (RAP's
//! `/cancel_tool_call` through another execution environment, MCP's `tasks/cancel` through
//! another server): under the one wake-up policy of work that waits on the store,
//! [`POLL`](super::questions::POLL), as questions are awaited.

use oxp_lambda_core::tool::Cancellation;
use std::future::Future;

/// Fires `cancellation` once `cancelled` answers `true` (asked every
/// [`POLL`](super::questions::POLL), and `at_once` too: a run resumed after it parked may have
/// been cancelled meanwhile; one that just read its record need not ask again), until the
/// returned guard drops. A store that does not answer is asked again at the next turn.
pub(crate) fn cancel_when<F, Fut>(
    cancellation: Cancellation,
    at_once: bool,
    mut cancelled: F,
) -> Watching
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = bool> + Send + 'static,
{
    Watching(tokio::spawn(async move {
        if !at_once {
            tokio::time::sleep(super::questions::POLL).await;
        }
        loop {
            if cancelled().await {
                cancellation.cancel();
                return;
            }
            tokio::time::sleep(super::questions::POLL).await;
        }
    }))
}

/// A cancellation watch, stopped when dropped.
#[derive(Debug)]
pub(crate) struct Watching(tokio::task::JoinHandle<()>);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.abort();
    }
}
