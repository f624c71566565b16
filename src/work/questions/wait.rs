//! Waiting for an answer: a call of this process waiting on its question is handed the answer
//! taken here and woken at once; one given through another process it reads within [`POLL`].

use super::{POLL, QUESTIONS, Questions, Record, Waited};
use oxp_lambda_core::durable::{Item, StateError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// A call of this process waiting on its question's answer.
#[derive(Debug, Default)]
pub(super) struct Waiter {
    woken: Notify,
    /// The answer, when it was taken in this process: handed over, not read back from the
    /// store.
    answer: Mutex<Option<Value>>,
}

impl Questions {
    /// Waits for the answer to question `token` until `until`, or until `cancelled`; a question
    /// [taken](Self::take) for `hold` is held on while it waits.
    pub(crate) async fn wait(
        &self,
        token: &str,
        until: tokio::time::Instant,
        hold: Option<Duration>,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Value, Waited> {
        let waiter = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            waiting.entry(token.to_owned()).or_default().clone()
        };
        let waited = self.watch(token, until, hold, &waiter, cancelled).await;
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(token);
        // An answer handed over at the last moment (it wakes nothing else: see `answer`).
        let handed = waiter
            .answer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match (waited, handed) {
            (Err(Waited::Until), Some(answer)) => Ok(answer),
            (waited, _) => waited,
        }
    }

    async fn watch(
        &self,
        token: &str,
        until: tokio::time::Instant,
        hold: Option<Duration>,
        waiter: &Waiter,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Value, Waited> {
        tokio::pin!(cancelled);
        let mut held = tokio::time::Instant::now();
        loop {
            if let Some(answer) = waiter
                .answer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
            {
                return Ok(answer);
            }
            match self.store.get(QUESTIONS, token).await {
                Ok(Some(item)) => {
                    let record: Record = serde_json::from_slice(&item.value)
                        .map_err(|_| Waited::Unavailable(StateError("unreadable".into())))?;
                    if let Some(answer) = record.answer {
                        return Ok(answer);
                    }
                    if let Some(hold) = hold
                        && held.elapsed() >= hold / 3
                    {
                        // Still waiting: the question stays this call's (unless the answer
                        // came first, which the next read finds).
                        let renewed = Item::new(item.value.clone(), Some(SystemTime::now() + hold));
                        let _ = self
                            .store
                            .put_if(QUESTIONS, token, renewed, Some(&item.value))
                            .await;
                        held = tokio::time::Instant::now();
                    }
                }
                Ok(None) => return Err(Waited::Gone),
                Err(e) => {
                    tracing::warn!(target: "oxp::questions", error = %e, "state store unavailable while waiting for an answer");
                }
            }
            let wake = until.min(tokio::time::Instant::now() + POLL);
            tokio::select! {
                () = waiter.woken.notified() => {}
                () = tokio::time::sleep_until(wake) => {}
                () = &mut cancelled => return Err(Waited::Cancelled),
            }
            if tokio::time::Instant::now() >= until {
                return Err(Waited::Until);
            }
        }
    }
}

/// Hands `answer` to the call of this process waiting on question `token`, if one is, and wakes
/// it; whether one was.
pub(super) fn hand_to(
    waiting: &Mutex<HashMap<String, Arc<Waiter>>>,
    token: &str,
    answer: Value,
) -> bool {
    let waiting = waiting.lock().unwrap_or_else(|p| p.into_inner());
    let Some(waiter) = waiting.get(token) else {
        return false;
    };
    *waiter.answer.lock().unwrap_or_else(|p| p.into_inner()) = Some(answer);
    waiter.woken.notify_one();
    true
}
