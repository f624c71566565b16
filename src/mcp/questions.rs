//! A tool's questions as MCP 2026-07-28 carries them (the same at every turn: an
//! `input_required` round, a task waiting on `tasks/update`): the `elicitation/create` of a
//! choice or a form, the key a client answers it under, what an answer says, and a call's
//! answers by question number. A tool may ask several questions at once (`join!` of two
//! `ctx.ask`): each has its own number, so its own key and its own slot among the answers.

use oxp_lambda_core::form::{Filled, Form};
use oxp_lambda_core::talk::{Ask, Choice, TalkError};
use rmcp::ErrorData;
use rmcp::model::InputRequest;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Most questions one call may ask over its rounds.
pub(crate) const MAX_ASKS: usize = 16;

/// A call's answers by question number, as [`read_response`] keeps them; a question asked but
/// not answered yet (another was answered first) is a hole. Stored and sealed as a JSON array,
/// a hole as `null` (an answer is always an object), so a list of answers in order reads as one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Answers(Vec<Value>);

impl Answers {
    /// The answer to question `seq`, if it has one.
    pub(crate) fn get(&self, seq: u32) -> Option<&Value> {
        self.0.get(seq as usize).filter(|a| !a.is_null())
    }

    /// Question `seq` is answered with `answer`.
    pub(crate) fn set(&mut self, seq: u32, answer: Value) {
        let at = seq as usize;
        if self.0.len() <= at {
            self.0.resize(at + 1, Value::Null);
        }
        self.0[at] = answer;
    }

    /// The first question without an answer.
    pub(crate) fn first_open(&self) -> u32 {
        self.0.iter().take_while(|a| !a.is_null()).count() as u32
    }

    /// How many slots the answers take (answered or not).
    pub(crate) fn slots(&self) -> usize {
        self.0.len()
    }
}

/// The `inputRequests` key of question `seq`.
fn question_key(seq: usize) -> String {
    format!("ask_{seq}")
}

/// The `elicitation/create` of a tool's form.
fn form_request(form: &Form) -> Result<InputRequest, String> {
    let request = json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": form.message, "requestedSchema": form.schema},
    });
    serde_json::from_value(request).map_err(|e| format!("elicitation request: {e}"))
}

/// A single-select form for `ask`: one `choice` property, its labels as the enum.
fn choice_form(ask: &Ask) -> Result<InputRequest, String> {
    let request = json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": ask.prompt,
            "requestedSchema": {
                "type": "object",
                "properties": {"choice": {
                    "type": "string",
                    "title": "Choice",
                    "enum": ask.choices,
                    "default": ask.choices.get(ask.default),
                }},
                "required": ["choice"],
            },
        },
    });
    serde_json::from_value(request).map_err(|e| format!("elicitation request: {e}"))
}

/// Longest accepted `content`, serialized (it travels in every later state).
const MAX_CONTENT_BYTES: usize = 4096;

/// An `ElicitResult` as a state keeps it: its `action` and, accepted, its `content` object.
pub(crate) fn read_response(response: &Value) -> Result<Value, ErrorData> {
    let object = response
        .as_object()
        .ok_or_else(|| refused("an input response must be an object"))?;
    match object.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let content = object
                .get("content")
                .filter(|c| c.is_object())
                .ok_or_else(|| refused("an accepted response carries a content object"))?;
            if serde_json::to_vec(content).map_or(usize::MAX, |b| b.len()) > MAX_CONTENT_BYTES {
                return Err(refused("the content is too large"));
            }
            Ok(json!({"action": "accept", "content": content}))
        }
        Some(action @ ("decline" | "cancel")) => Ok(json!({"action": action})),
        _ => Err(refused(
            "an input response's action is accept, decline or cancel",
        )),
    }
}

/// A question a tool asked.
#[derive(Debug)]
pub(crate) enum Question {
    Choice(Ask),
    Form(Form),
}

impl Question {
    /// Its `inputRequests` key: a form's own, `ask_<seq>` for a choice.
    pub(crate) fn key(&self, seq: u32) -> String {
        match self {
            Self::Choice(_) => question_key(seq as usize),
            Self::Form(form) => form.key.clone(),
        }
    }
}

/// The choice an answer (as [`read_response`] keeps it) makes among `choices`: the accepted
/// `content.choice`, or the default when the user declined or dismissed the question.
pub(crate) fn choice_of(
    answer: &Value,
    choices: &[String],
    default: usize,
) -> Result<Choice, TalkError> {
    let index = match answer["action"].as_str() {
        Some("decline" | "cancel") => default,
        _ => answer["content"]["choice"]
            .as_str()
            .and_then(|l| choices.iter().position(|c| c == l))
            .ok_or(TalkError::InvalidAnswer)?,
    };
    Ok(Choice {
        index,
        label: choices[index].clone(),
    })
}

/// What an answer (as [`read_response`] keeps it) says of a form.
pub(crate) fn filled_of(answer: &Value) -> Filled {
    match answer["action"].as_str() {
        Some("decline") => Filled::Declined,
        Some("cancel") => Filled::Cancelled,
        _ => Filled::Accepted(answer["content"].as_object().cloned().unwrap_or_default()),
    }
}

/// Why a response is refused: the client's error, answered as JSON-RPC invalid params.
pub(crate) fn refused(why: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("Invalid requestState or inputResponses: {why}"),
        None,
    )
}

/// The `inputRequest` of `question`.
pub(crate) fn request_of(question: &Question) -> Result<InputRequest, String> {
    match question {
        Question::Choice(ask) => choice_form(ask),
        Question::Form(form) => form_request(form),
    }
}
