//! Asking the user (published `server/user-choice.md`): the call sends a `user_choice` message
//! to its callback with a `response_url` of this server's, the runtime POSTs the selection
//! there, and the call goes on with it.
//!
//! The question is one of the one question service's ([`crate::work::questions`]): asked once
//! per call and question number (a redelivered job finds the question it asked and its
//! answer), under an unguessable token (the last segment of the response URL), bound to the
//! call's caller, answered once through any process, awaited under the service's wake-up
//! policy. What RAP adds: the answer must name the question's call, and it is an index among
//! the choices the tool offered.

use crate::rap::messages::ChoiceResponse;
use crate::subscriptions::key_of;
use crate::work::questions::{Asked, Questions, Refused, Waited, Waiting};
use oxp_lambda_core::durable::StateError;
use oxp_lambda_core::talk::{Ask, Choice, TalkError};
use serde_json::{Value, json};
use std::time::Duration;

/// Records question `seq` of the call `(caller, group_id, id)` (or finds it, asked before),
/// run as work `work` (its answer wakes it).
pub(crate) async fn record(
    questions: &Questions,
    (caller, group_id, id): (Option<&str>, &str, &str),
    seq: u32,
    keep: Duration,
    work: Option<&str>,
) -> Result<Asked, StateError> {
    let call = key_of(&[caller.unwrap_or_default(), group_id, id, &seq.to_string()]);
    questions
        .ask(&call, caller, json!({"id": id}), keep, work)
        .await
}

/// Why a wait ended without a choice.
#[derive(Debug)]
pub(crate) enum Ended {
    /// `until` came.
    Until,
    /// It ended for good.
    Failed(TalkError),
}

/// Waits for the answer to the question `waiting` for (asked with `ask`) until `until` (or the
/// cancellation).
pub(crate) async fn wait(
    waiting: Waiting<'_>,
    ask: &Ask,
    until: tokio::time::Instant,
    cancelled: impl std::future::Future<Output = ()>,
) -> Result<Choice, Ended> {
    let selected = match waiting.wait(until, None, cancelled).await {
        Ok(selected) => selected,
        Err(Waited::Until) => return Err(Ended::Until),
        Err(Waited::Gone) => return Err(Ended::Failed(TalkError::TimedOut)),
        Err(Waited::Cancelled) => return Err(Ended::Failed(TalkError::Cancelled)),
        Err(Waited::Unavailable(e)) => return Err(Ended::Failed(TalkError::Unavailable(e.0))),
    };
    selected
        .as_i64()
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|index| {
            ask.choices.get(index).map(|label| Choice {
                index,
                label: label.clone(),
            })
        })
        .ok_or(Ended::Failed(TalkError::InvalidAnswer))
}

/// Takes the answer `response` of `caller` to question `token`, once (a
/// [`Refused::Mismatch`]: it names another call).
pub(crate) async fn answer(
    questions: &Questions,
    token: &str,
    caller: Option<&str>,
    response: &ChoiceResponse,
) -> Result<(), Refused> {
    let names_the_call = |asked: &Value| asked["id"].as_str() == Some(response.id.as_str());
    questions
        .answer(token, caller, names_the_call, json!(response.selected))
        .await
}

#[cfg(all(test, feature = "embedded-state"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_must_name_the_questions_call_and_an_index_among_its_choices() {
        let questions = Questions::new(crate::state::embedded::store(None).unwrap());
        let ask = Ask::new("Go?", ["Yes", "No"]).default(1);
        let keep = Duration::from_secs(60);
        let asked = record(&questions, (Some("alice"), "g", "call-1"), 0, keep, None)
            .await
            .unwrap();
        let response = |id: &str, selected| ChoiceResponse {
            id: id.into(),
            selected,
        };
        let token = asked.token.as_str();
        let other = answer(&questions, token, Some("alice"), &response("call-2", 0)).await;
        assert_eq!(other, Err(Refused::Mismatch));
        answer(&questions, token, Some("alice"), &response("call-1", 5))
            .await
            .unwrap();
        let until = tokio::time::Instant::now() + Duration::from_secs(5);
        let waited = wait(
            questions.expect(&asked.token, asked.written),
            &ask,
            until,
            std::future::pending(),
        )
        .await;
        assert!(
            matches!(waited, Err(Ended::Failed(TalkError::InvalidAnswer))),
            "5 is no choice"
        );
        let next = record(&questions, (Some("alice"), "g", "call-1"), 1, keep, None)
            .await
            .unwrap();
        answer(
            &questions,
            &next.token,
            Some("alice"),
            &response("call-1", 0),
        )
        .await
        .unwrap();
        let choice = wait(
            questions.expect(&next.token, next.written),
            &ask,
            until,
            std::future::pending(),
        )
        .await
        .unwrap();
        assert_eq!((choice.index, choice.label.as_str()), (0, "Yes"));
    }
}
