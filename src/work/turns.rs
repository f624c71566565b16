//! The runner's turns: how many runs one process has going at once (`OXP_WORK_RUNNING_MAX`),
//! and of those how many one caller's (`OXP_WORK_RUNNING_PER_CALLER`). A run whose caller has
//! all its turns, or that finds none free, waits in line; a freed turn goes to the first in
//! line whose caller has turns left, so one caller's hung callbacks or long tasks hold its own
//! turns, never the others'. A run waiting for its turn holds no turn, and a delivery waiting
//! to be retried is no run at all (its record is due later).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// The turns of one runner.
#[derive(Debug)]
pub(crate) struct Turns {
    at_once: usize,
    per_caller: usize,
    line: Mutex<Line>,
}

#[derive(Debug, Default)]
struct Line {
    running: usize,
    by_caller: HashMap<String, usize>,
    waiting: VecDeque<(String, oneshot::Sender<()>)>,
}

impl Line {
    fn may_run(&self, caller: &str, at_once: usize, per_caller: usize) -> bool {
        self.running < at_once && self.by_caller.get(caller).copied().unwrap_or(0) < per_caller
    }

    fn take(&mut self, caller: &str) {
        self.running += 1;
        *self.by_caller.entry(caller.to_owned()).or_default() += 1;
    }

    fn give(&mut self, caller: &str) {
        self.running -= 1;
        if let Some(held) = self.by_caller.get_mut(caller) {
            *held -= 1;
            if *held == 0 {
                self.by_caller.remove(caller);
            }
        }
    }
}

/// A turn, given back when dropped (once held).
#[derive(Debug)]
pub(crate) struct Turn {
    turns: Arc<Turns>,
    caller: String,
    held: bool,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if self.held {
            self.turns.give_back(&self.caller);
        }
    }
}

/// A place in line. Dropped before its turn came, nothing is held (the turn's sender finds no
/// one and frees it); dropped after it came and before it was taken, the turn goes back.
struct InLine {
    wait: oneshot::Receiver<()>,
    turn: Turn,
}

impl Drop for InLine {
    fn drop(&mut self) {
        self.turn.held = self.turn.held || self.wait.try_recv().is_ok();
    }
}

impl Turns {
    /// `at_once` turns, `per_caller` of them at most one caller's.
    pub(crate) fn new(at_once: usize, per_caller: usize) -> Arc<Self> {
        let at_once = at_once.max(1);
        Arc::new(Self {
            at_once,
            per_caller: per_caller.clamp(1, at_once),
            line: Mutex::default(),
        })
    }

    fn line(&self) -> std::sync::MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A turn for a run of `caller`, once one is free for it.
    pub(crate) async fn take(self: &Arc<Self>, caller: &str) -> Turn {
        let mut turn = Turn {
            turns: self.clone(),
            caller: caller.to_owned(),
            held: false,
        };
        let mut in_line = {
            let mut line = self.line();
            if line.may_run(caller, self.at_once, self.per_caller) {
                line.take(caller);
                turn.held = true;
                return turn;
            }
            let (given, wait) = oneshot::channel();
            line.waiting.push_back((caller.to_owned(), given));
            InLine { wait, turn }
        };
        // Given (taken for it), or the line dropped with the runner.
        let given = (&mut in_line.wait).await.is_ok();
        in_line.turn.held = given;
        let turn = Turn {
            turns: self.clone(),
            caller: caller.to_owned(),
            held: std::mem::take(&mut in_line.turn.held),
        };
        drop(in_line);
        turn
    }

    /// Runs going now (every caller's).
    #[cfg(test)]
    fn running(&self) -> usize {
        self.line().running
    }

    /// `caller`'s turn back: the first in line whose caller may run takes it.
    fn give_back(&self, caller: &str) {
        let mut line = self.line();
        line.give(caller);
        let mut i = 0;
        while i < line.waiting.len() {
            let next = &line.waiting[i].0;
            if !line.may_run(next, self.at_once, self.per_caller) {
                if line.running >= self.at_once {
                    return;
                }
                i += 1;
                continue;
            }
            let (next, given) = line.waiting.remove(i).expect("in line");
            line.take(&next);
            if given.send(()).is_err() {
                // It stopped waiting: the turn is free again.
                line.give(&next);
            }
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
        let a1 = turns.take("a").await;
        let _a2 = turns.take("a").await;
        let waiting = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take("a").await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "a has both its turns");
        let b = tokio::time::timeout(Duration::from_millis(50), turns.take("b")).await;
        assert!(b.is_ok(), "b runs at once");
        assert_eq!(turns.running(), 3);
        drop(a1);
        let a3 = tokio::time::timeout(Duration::from_secs(1), waiting).await;
        assert!(a3.is_ok(), "a's next takes a's freed turn");
    }

    #[tokio::test]
    async fn a_freed_turn_goes_to_the_first_in_line_whose_caller_may_run() {
        let turns = Turns::new(2, 1);
        let a = turns.take("a").await;
        let b = turns.take("b").await;
        // In line: a (at its share), then c.
        let a_next = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take("a").await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let c = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take("c").await }
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
