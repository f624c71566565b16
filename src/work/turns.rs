//! The runner's turns: how many runs one process has going at once (`OXP_WORK_RUNNING_MAX`),
//! and of those how many one caller's (`OXP_WORK_RUNNING_PER_CALLER`). A run waits first for a
//! turn of its caller's, then for one of the process's, each in line (tokio's fair semaphores):
//! a caller holding all its turns waits behind itself, never in front of the others, so one
//! caller's hung callbacks or long tasks hold its own turns only. A delivery waiting to be
//! retried is no run at all (its record is due later). The anonymous caller (every call where
//! callers do not authenticate) has no share, as the invoker's calls without a subject have
//! none: its runs take the process's turns alone, or a local server without authentication
//! would run 8 of its jobs at once where it may run 64.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The turns of one runner.
#[derive(Debug)]
pub(crate) struct Turns {
    all: Arc<Semaphore>,
    per_caller: usize,
    /// Each caller's turns; a caller with none taken and no one in its line is forgotten.
    callers: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A turn, given back when dropped.
#[derive(Debug)]
pub(crate) struct Turn {
    _all: OwnedSemaphorePermit,
    _own: Option<OwnedSemaphorePermit>,
}

impl Turns {
    /// `at_once` turns, `per_caller` of them at most one caller's.
    pub(crate) fn new(at_once: usize, per_caller: usize) -> Arc<Self> {
        let at_once = at_once.max(1);
        Arc::new(Self {
            all: Arc::new(Semaphore::new(at_once)),
            per_caller: per_caller.clamp(1, at_once),
            callers: Mutex::default(),
        })
    }

    /// A turn for a run of `caller` (`None`: the anonymous one, which has no share), once one
    /// is free for it.
    pub(crate) async fn take(&self, caller: Option<&str>) -> Turn {
        let Some(caller) = caller else {
            let all = self.all.clone().acquire_owned().await;
            return Turn {
                _all: all.expect("turns are never closed"),
                _own: None,
            };
        };
        let own = {
            let mut callers = self.callers.lock().unwrap_or_else(|p| p.into_inner());
            // The idle callers (no turn taken, no one waiting: only the map holds them) go.
            if callers.len() > 1024 {
                callers.retain(|_, s| Arc::strong_count(s) > 1);
            }
            let own = callers.entry(caller.to_owned());
            own.or_insert_with(|| Arc::new(Semaphore::new(self.per_caller)))
                .clone()
        };
        // Never closed: acquiring only waits.
        let own = own.acquire_owned().await.expect("turns are never closed");
        let all = self.all.clone().acquire_owned().await;
        Turn {
            _all: all.expect("turns are never closed"),
            _own: Some(own),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_caller_holding_its_turns_waits_while_another_runs_at_once() {
        let turns = Turns::new(4, 2);
        let a1 = turns.take(Some("a")).await;
        let _a2 = turns.take(Some("a")).await;
        let waiting = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take(Some("a")).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "a has both its turns");
        let b = tokio::time::timeout(Duration::from_millis(50), turns.take(Some("b"))).await;
        assert!(b.is_ok(), "b runs at once");
        assert_eq!(turns.all.available_permits(), 1);
        drop(a1);
        let a3 = tokio::time::timeout(Duration::from_secs(1), waiting).await;
        assert!(a3.is_ok(), "a's next takes a's freed turn");
    }

    #[tokio::test]
    async fn the_anonymous_callers_runs_take_every_turn_of_the_process_and_no_share() {
        let turns = Turns::new(4, 1);
        let mut held = Vec::new();
        for _ in 0..4 {
            let turn = tokio::time::timeout(Duration::from_millis(50), turns.take(None)).await;
            held.push(turn.expect("a turn of the process's, whatever a caller's share"));
        }
        let fifth = tokio::time::timeout(Duration::from_millis(30), turns.take(None)).await;
        assert!(fifth.is_err(), "the process's turns still bound it");
        drop(held.pop());
        let b = tokio::time::timeout(Duration::from_millis(50), turns.take(Some("b"))).await;
        assert!(b.is_ok(), "a freed turn goes to the next caller");
    }

    #[tokio::test]
    async fn a_freed_turn_goes_to_the_first_in_line_whose_caller_may_run() {
        let turns = Turns::new(2, 1);
        let a = turns.take(Some("a")).await;
        let b = turns.take(Some("b")).await;
        // In line: a (at its share), then c.
        let a_next = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take(Some("a")).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let c = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take(Some("c")).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(b);
        let c = tokio::time::timeout(Duration::from_secs(1), c).await;
        assert!(c.is_ok(), "c passes a, which holds its one turn");
        assert!(!a_next.is_finished());
        drop(a);
        assert!(
            tokio::time::timeout(Duration::from_secs(1), a_next)
                .await
                .is_ok()
        );
    }
}
