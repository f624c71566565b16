//! `POST /user_choice_response/{token}`: the runtime's answer to a call's question, with the
//! body `{"id", "selected"}` (published `server/user-choice.md`). The token in the path is the
//! question's, unguessable, given out in the `user_choice` message; the request passes the same
//! authentication as `/invoke`, and the answer must come from the caller that invoked.
//!
//! | case | answer | what changes |
//! |---|---|---|
//! | taken | 200 `{"status": "ok"}` | the call goes on with it (an index out of range ends the call with an error `tool_result`) |
//! | unknown token, or another caller's question | 404 | nothing |
//! | a body that is not `{"id": string, "selected": integer}`, or another call's id | 400 | nothing |
//! | answered before | 409 | nothing: no second result |
//! | the store did not answer | 503 | nothing |

use crate::rap::Rap;
use crate::rap::choice;
use crate::rap::messages::ChoiceResponse;
use crate::rap::refusal::error_response;
use crate::rap::wire::MAX_ID_CHARS;
use crate::server::{CallContext, json_response};
use crate::work::questions::Refused;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::Response;
use http::StatusCode;
use std::sync::Arc;

pub(crate) async fn user_choice_response(
    State(rap): State<Arc<Rap>>,
    Path(token): Path<String>,
    context: CallContext,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let refused = |status: StatusCode, kind: &str, message: &str| {
        tracing::info!(target: "oxp::rap::audit", outcome = kind, "user_choice_response refused");
        error_response(status, kind, message)
    };
    let response = body
        .ok()
        .and_then(|b| crate::server::object::<ChoiceResponse>(&b))
        .filter(|r| !r.id.is_empty() && r.id.chars().count() <= MAX_ID_CHARS);
    let Some(response) = response else {
        return refused(
            StatusCode::BAD_REQUEST,
            "malformed_answer",
            "The body must be {\"id\": string, \"selected\": integer}",
        );
    };
    let Some(questions) = &rap.talk.questions else {
        return refused(StatusCode::NOT_FOUND, "unknown_choice", "No such question");
    };
    let token: String = token.chars().take(64).collect();
    let caller = context.principal.subject.as_deref();
    match choice::answer(questions, &token, caller, &response).await {
        Ok(()) => {
            tracing::info!(target: "oxp::rap::audit", id = response.id.as_str(), selected = response.selected, outcome = "answered", "user_choice_response");
            json_response(StatusCode::OK, Bytes::from_static(br#"{"status":"ok"}"#))
        }
        Err(Refused::Unknown) => {
            refused(StatusCode::NOT_FOUND, "unknown_choice", "No such question")
        }
        Err(Refused::Mismatch) => refused(
            StatusCode::BAD_REQUEST,
            "malformed_answer",
            "The answer names another call than the question's",
        ),
        Err(Refused::Answered) => refused(
            StatusCode::CONFLICT,
            "already_answered",
            "The question was answered already",
        ),
        Err(Refused::Unavailable) => refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "The answer could not be recorded; send it again",
        ),
    }
}
