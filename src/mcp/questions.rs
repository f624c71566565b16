//! A tool's questions as MCP carries them (the same at every turn: an `input_required` round, a
//! task waiting on `tasks/update`, a request on a handshake call's stream): the
//! `elicitation/create` of a choice or a form, the `sampling/createMessage` of a request to the
//! client's model, `roots/list`; the key a client answers each under, what an answer says, and
//! a call's answers by question number. A tool may ask several at once (`join!` of two
//! `ctx.ask`): each has its own number, so its own key and its own slot among the answers.
//! What a client declared it takes is `declared.rs`.

use super::declared::Needs;
use oxp_lambda_core::form::{Filled, Form};
use oxp_lambda_core::sample::Sample;
use oxp_lambda_core::sample::{Root, Sampled};
use oxp_lambda_core::talk::{self, Ask, Choice, TalkError, TalkFuture};
use rmcp::ErrorData;
use rmcp::model::InputRequest;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Most questions one call may ask over its rounds.
pub(crate) const MAX_ASKS: usize = 16;

/// Question `seq` may be asked (a call asks at most [`MAX_ASKS`]), whatever carries it.
pub(crate) fn may_ask(seq: u32) -> Result<(), TalkError> {
    match seq as usize {
        n if n < MAX_ASKS => Ok(()),
        _ => Err(TalkError::Invalid(format!(
            "a call asks at most {MAX_ASKS} questions"
        ))),
    }
}

/// Two questions asked at once share `key`, which names one: the second is the tool's mistake.
pub(crate) fn shared_key(key: &str) -> TalkError {
    TalkError::Invalid(format!("two questions asked at once share the key `{key}`"))
}

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
/// Longest accepted answer of the client's model or list of roots, serialized.
const MAX_ANSWER_BYTES: usize = 32 * 1024;

/// A response as a state keeps it: an `ElicitResult`'s `action` and, accepted, its `content`
/// object; a `CreateMessageResult` (its content blocks always a list); a `ListRootsResult`.
pub(crate) fn read_response(response: &Value) -> Result<Value, ErrorData> {
    let object = response
        .as_object()
        .ok_or_else(|| refused("an input response must be an object"))?;
    if !object.contains_key("action") {
        let kept = if object.contains_key("roots") {
            super::sampling::read_roots(object).map_err(refused)?
        } else {
            super::sampling::read_sampled(object).map_err(refused)?
        };
        if serde_json::to_vec(&kept).map_or(usize::MAX, |b| b.len()) > MAX_ANSWER_BYTES {
            return Err(refused("the answer is too large"));
        }
        return Ok(kept);
    }
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
    Sample(Sample),
    Roots,
}

impl Question {
    /// Its `inputRequests` key: a form's own, `ask_<seq>` for a choice, `sample_<seq>` and
    /// `roots_<seq>` for the others.
    pub(crate) fn key(&self, seq: u32) -> String {
        match self {
            Self::Choice(_) => question_key(seq as usize),
            Self::Form(form) => form.key.clone(),
            Self::Sample(_) => format!("sample_{seq}"),
            Self::Roots => format!("roots_{seq}"),
        }
    }

    /// The client capability it needs, as `requiredCapabilities` names it.
    pub(crate) fn needs(&self) -> Needs {
        match self {
            Self::Choice(_) | Self::Form(_) => Needs::Form,
            Self::Sample(_) => Needs::Sampling,
            Self::Roots => Needs::Roots,
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
    let request = match question {
        Question::Choice(ask) => return choice_form(ask),
        Question::Form(form) => return form_request(form),
        Question::Sample(sample) => json!({
            "method": "sampling/createMessage",
            "params": super::sampling::sample_params(sample),
        }),
        Question::Roots => json!({"method": "roots/list", "params": {}}),
    };
    serde_json::from_value(request).map_err(|e| format!("input request: {e}"))
}

/// How a tool's question reaches its MCP client and its answer comes back: an `input_required`
/// round ([`super::exchange`]), a request on the call's stream ([`super::elicit`]) or a task's
/// status (`super::task`). A carrier encodes and carries; [`Carried`] is the one talk-back
/// channel over any of them.
pub(crate) trait Carrier: Send + Sync + std::fmt::Debug {
    /// The answer to the call's question `seq`.
    fn carry(&self, seq: u32, question: Question) -> TalkFuture<'_, Result<Value, TalkError>>;

    /// The tool lets its client go ([`talk::Talk::detach`]): only a round whose call may go on
    /// as a task does more than go on.
    fn detach(&self) -> TalkFuture<'_, Result<(), TalkError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A carrier as a call's talk-back channel: each kind of question put to it, and its answer
/// read back as the tool asked it.
#[derive(Debug)]
pub(crate) struct Carried<C>(pub(crate) C);

impl<C> std::ops::Deref for Carried<C> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.0
    }
}

impl<C: Carrier> talk::Talk for Carried<C> {
    fn protocol(&self) -> &'static str {
        "mcp"
    }

    fn ask(&self, ask: Ask, seq: u32) -> TalkFuture<'_, Result<Choice, TalkError>> {
        Box::pin(async move {
            let (default, choices) = (ask.default, ask.choices.clone());
            let answer = self.0.carry(seq, Question::Choice(ask)).await?;
            choice_of(&answer, &choices, default)
        })
    }

    fn fill(&self, form: Form, seq: u32) -> TalkFuture<'_, Result<Filled, TalkError>> {
        Box::pin(async move { Ok(filled_of(&self.0.carry(seq, Question::Form(form)).await?)) })
    }

    fn sample(&self, sample: Sample, seq: u32) -> TalkFuture<'_, Result<Sampled, TalkError>> {
        Box::pin(async move {
            super::sampling::sampled_of(&self.0.carry(seq, Question::Sample(sample)).await?)
        })
    }

    fn roots(&self, seq: u32) -> TalkFuture<'_, Result<Vec<Root>, TalkError>> {
        Box::pin(
            async move { super::sampling::roots_of(&self.0.carry(seq, Question::Roots).await?) },
        )
    }

    fn detach(&self) -> TalkFuture<'_, Result<(), TalkError>> {
        self.0.detach()
    }
}
