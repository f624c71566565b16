//! Asking the user (published `server/user-choice.md`): the call sends a `user_choice` message
//! to its callback with a `response_url` of this server's, the runtime POSTs the selection
//! there, and the call goes on with it.
//!
//! The question is kept in the state store under an unguessable token (the last segment of the
//! response URL), bound to the call and its caller, so the answer reaches the call whichever
//! process it runs in: the waiting call wakes at once when the answer lands in its own process
//! and looks in the store every [`POLL`] otherwise (a Lambda worker, while the HTTP function
//! took the answer). A call that runs again (a redelivered job) finds the question it asked and
//! its answer rather than asking twice. Each question takes one answer: a second gets 409, an
//! unknown token or another caller 404, and nothing changes.

use crate::rap::messages::ChoiceResponse;
use crate::subscriptions::key_of;
use oxp_lambda_core::durable::{Item, StateError, StateStore};
use oxp_lambda_core::talk::{Ask, Choice, TalkError};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// How often a waiting call looks for its answer in the store.
pub(crate) const POLL: Duration = Duration::from_secs(1);

/// Questions, by token.
const QUESTIONS: &str = "rap-choice";
/// The token of a call's question, by call and question number.
const ASKED: &str = "rap-choice-of";

/// A question as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Question {
    /// The caller the answer must come from (`None` without authentication).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    caller: Option<String>,
    /// The call's id (the answer names it).
    id: String,
    choices: Vec<String>,
    default: usize,
    /// The answer, once given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    selected: Option<i64>,
}

/// The calls of this process waiting on an answer, to wake them at once.
#[derive(Debug, Default)]
pub(crate) struct Waiting(Mutex<HashMap<String, Arc<Notify>>>);

impl Waiting {
    fn register(&self, token: &str) -> Arc<Notify> {
        let mut waiting = self.0.lock().unwrap_or_else(|p| p.into_inner());
        waiting.entry(token.to_owned()).or_default().clone()
    }

    fn forget(&self, token: &str) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(token);
    }

    fn wake(&self, token: &str) {
        let waiting = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(notify) = waiting.get(token) {
            notify.notify_one();
        }
    }
}

/// The question number `seq` of a call, as asked: its token, and whether it was asked just now
/// (the `user_choice` message is then to be sent) or before.
pub(crate) struct Asked {
    pub(crate) token: String,
    pub(crate) new: bool,
}

/// Records question `seq` of the call `(caller, group_id, id)` (or finds it, asked before).
pub(crate) async fn record(
    store: &dyn StateStore,
    caller: Option<&str>,
    group_id: &str,
    id: &str,
    seq: u32,
    ask: &Ask,
    keep: Duration,
) -> Result<Asked, StateError> {
    let call = key_of(&[caller.unwrap_or_default(), group_id, id, &seq.to_string()]);
    if let Some(found) = store.get(ASKED, &call).await? {
        return Ok(Asked {
            token: String::from_utf8_lossy(&found.value).into_owned(),
            new: false,
        });
    }
    let token = uuid::Uuid::new_v4().simple().to_string();
    let question = Question {
        caller: caller.map(str::to_owned),
        id: id.to_owned(),
        choices: ask.choices.clone(),
        default: ask.default,
        selected: None,
    };
    let expires = Some(SystemTime::now() + keep);
    let bytes = serde_json::to_vec(&question).expect("questions serialize");
    store
        .put(QUESTIONS, &token, Item::new(bytes, expires))
        .await?;
    // A concurrent copy of the same call that recorded first wins: its token is the one.
    if !store
        .put_if(
            ASKED,
            &call,
            Item::new(token.clone().into_bytes(), expires),
            None,
        )
        .await?
    {
        let found = store.get(ASKED, &call).await?.ok_or_else(|| {
            StateError("a question's record vanished while it was recorded".into())
        })?;
        store.delete(QUESTIONS, &token).await?;
        return Ok(Asked {
            token: String::from_utf8_lossy(&found.value).into_owned(),
            new: false,
        });
    }
    Ok(Asked { token, new: true })
}

/// Waits for the answer to question `token` until `until` (or the cancellation).
pub(crate) async fn wait(
    store: &dyn StateStore,
    waiting: &Waiting,
    token: &str,
    until: tokio::time::Instant,
    cancelled: impl std::future::Future<Output = ()>,
) -> Result<Choice, Waited> {
    let woken = waiting.register(token);
    tokio::pin!(cancelled);
    let answer = loop {
        match store.get(QUESTIONS, token).await {
            Ok(Some(item)) => {
                let question: Question = serde_json::from_slice(&item.value).map_err(|_| {
                    Waited::Failed(TalkError::Unavailable("a question does not read".into()))
                })?;
                if let Some(selected) = question.selected {
                    break usize::try_from(selected)
                        .ok()
                        .and_then(|i| {
                            question.choices.get(i).map(|label| Choice {
                                index: i,
                                label: label.clone(),
                            })
                        })
                        .ok_or(Waited::Failed(TalkError::InvalidAnswer));
                }
            }
            Ok(None) => break Err(Waited::Failed(TalkError::TimedOut)),
            Err(e) => {
                tracing::warn!(target: "oxp::rap", error = %e, "state store unavailable while waiting for an answer")
            }
        }
        let wake = until.min(tokio::time::Instant::now() + POLL);
        tokio::select! {
            () = woken.notified() => {}
            () = tokio::time::sleep_until(wake) => {}
            () = &mut cancelled => break Err(Waited::Failed(TalkError::Cancelled)),
        }
        if tokio::time::Instant::now() >= until {
            break Err(Waited::Until);
        }
    };
    waiting.forget(token);
    answer
}

/// Why a wait ended without an answer.
#[derive(Debug)]
pub(crate) enum Waited {
    /// `until` came.
    Until,
    /// It ended for good.
    Failed(TalkError),
}

/// Why an answer was refused; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No such question, or it is another caller's (404: the difference is not told).
    Unknown,
    /// The answer names another call.
    WrongCall,
    /// The question was answered already.
    Answered,
    /// The store did not answer (retry).
    Unavailable,
}

/// Takes the answer `response` of `caller` to question `token`, once, and wakes the call if
/// it waits in this process.
pub(crate) async fn answer(
    store: &dyn StateStore,
    waiting: &Waiting,
    token: &str,
    caller: Option<&str>,
    response: &ChoiceResponse,
) -> Result<(), Refused> {
    let unavailable = |e: StateError| {
        tracing::warn!(target: "oxp::rap", error = %e, "state store unavailable for an answer");
        Refused::Unavailable
    };
    let item = store
        .get(QUESTIONS, token)
        .await
        .map_err(unavailable)?
        .ok_or(Refused::Unknown)?;
    let mut question: Question =
        serde_json::from_slice(&item.value).map_err(|_| Refused::Unknown)?;
    if question.caller.as_deref() != caller {
        return Err(Refused::Unknown);
    }
    if question.id != response.id {
        return Err(Refused::WrongCall);
    }
    if question.selected.is_some() {
        return Err(Refused::Answered);
    }
    question.selected = Some(response.selected);
    let bytes = serde_json::to_vec(&question).expect("questions serialize");
    let swapped = store
        .put_if(
            QUESTIONS,
            token,
            Item::new(bytes, item.expires),
            Some(&item.value),
        )
        .await
        .map_err(unavailable)?;
    if !swapped {
        // Another answer landed between the read and the write.
        return Err(Refused::Answered);
    }
    waiting.wake(token);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Arc<dyn StateStore> {
        crate::state::embedded::store(None).unwrap()
    }

    fn ask() -> Ask {
        Ask::new("Go?", ["Yes", "No"]).default(1)
    }

    #[tokio::test]
    async fn a_question_takes_one_answer_from_its_caller_for_its_call() {
        let (store, waiting) = (store(), Waiting::default());
        let asked = record(
            &*store,
            Some("alice"),
            "g",
            "call-1",
            0,
            &ask(),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        assert!(asked.new);
        let response = |id: &str, selected| ChoiceResponse {
            id: id.into(),
            selected,
        };
        let token = asked.token.as_str();
        assert_eq!(
            answer(
                &*store,
                &waiting,
                "no-such-token",
                Some("alice"),
                &response("call-1", 0)
            )
            .await,
            Err(Refused::Unknown)
        );
        assert_eq!(
            answer(
                &*store,
                &waiting,
                token,
                Some("mallory"),
                &response("call-1", 0)
            )
            .await,
            Err(Refused::Unknown),
            "another caller's answer is refused as unknown"
        );
        assert_eq!(
            answer(
                &*store,
                &waiting,
                token,
                Some("alice"),
                &response("call-2", 0)
            )
            .await,
            Err(Refused::WrongCall)
        );
        answer(
            &*store,
            &waiting,
            token,
            Some("alice"),
            &response("call-1", 0),
        )
        .await
        .unwrap();
        assert_eq!(
            answer(
                &*store,
                &waiting,
                token,
                Some("alice"),
                &response("call-1", 1)
            )
            .await,
            Err(Refused::Answered),
            "a second answer changes nothing"
        );
        let until = tokio::time::Instant::now() + Duration::from_secs(5);
        let choice = wait(&*store, &waiting, token, until, std::future::pending())
            .await
            .unwrap();
        assert_eq!((choice.index, choice.label.as_str()), (0, "Yes"));
    }

    #[tokio::test]
    async fn the_same_call_asking_again_finds_its_question_and_a_waiting_call_wakes_at_once() {
        let (store, waiting) = (Arc::new(store()), Arc::new(Waiting::default()));
        let keep = Duration::from_secs(60);
        let first = record(&**store, None, "g", "c", 0, &ask(), keep)
            .await
            .unwrap();
        let again = record(&**store, None, "g", "c", 0, &ask(), keep)
            .await
            .unwrap();
        assert!(!again.new);
        assert_eq!(first.token, again.token);
        let next = record(&**store, None, "g", "c", 1, &ask(), keep)
            .await
            .unwrap();
        assert_ne!(
            next.token, first.token,
            "the call's second question is another"
        );
        let (s, w, t) = (store.clone(), waiting.clone(), first.token.clone());
        let waiter = tokio::spawn(async move {
            let until = tokio::time::Instant::now() + Duration::from_secs(30);
            wait(&**s, &w, &t, until, std::future::pending()).await
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = std::time::Instant::now();
        let response = ChoiceResponse {
            id: "c".into(),
            selected: 5,
        };
        answer(&**store, &waiting, &first.token, None, &response)
            .await
            .unwrap();
        let waited = waiter.await.unwrap();
        assert!(started.elapsed() < POLL, "woken, not polled");
        assert!(
            matches!(waited, Err(Waited::Failed(TalkError::InvalidAnswer))),
            "5 is no choice"
        );
    }
}
