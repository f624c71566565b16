//! The two response shapes of an action group's Lambda function, one per way the group is
//! defined: function details (`response.function`, `functionResponse.responseBody.TEXT.body`)
//! and an API schema (`response.apiPath`, `httpMethod`, `httpStatusCode`,
//! `responseBody["application/json"].body`), each with `responseState` when the call failed
//! and the session attributes passed back as they came. How a call ended is one [`Ending`],
//! whichever shape carries it.

use super::Event;
use oxp_lambda_core::invoke::Outcome;
use oxp_lambda_core::refusal::{ErrorClass, Rejection};
use oxp_lambda_core::{Content, ResourceBody, ToolError, ToolOutput};
use serde::Serialize;
use serde_json::{Map, Value};

/// How one event ended: the text the model reads and, for a failure, its class.
pub(super) struct Ending {
    class: Option<ErrorClass>,
    state: Option<State>,
    text: String,
}

impl Ending {
    /// A failure of `class`, in the state that class is answered with.
    pub(super) fn failed(class: ErrorClass, text: String) -> Self {
        Self {
            class: Some(class),
            state: Some(state_for(class)),
            text,
        }
    }

    /// A failure only the deployment can fix (`FAILURE`), whatever its class.
    pub(super) fn failure(class: ErrorClass, text: String) -> Self {
        Self {
            class: Some(class),
            state: Some(State::Failure),
            text,
        }
    }

    /// A call that reached its tool.
    pub(super) fn of(outcome: Outcome) -> Self {
        let class = outcome.error_class();
        match outcome.result {
            Ok(output) => Self {
                class: None,
                state: None,
                text: text_of(&output),
            },
            Err(error) => Self::failed(class.unwrap_or(ErrorClass::ToolError), error_text(&error)),
        }
    }

    /// A refusal before the tool ran: the user message, never the developer detail.
    pub(super) fn refused(rejection: &Rejection) -> Self {
        let mut text = format!("Error: {}", rejection.user_message());
        if let Rejection::InvalidInput(errors) = rejection {
            for (name, why) in errors.iter() {
                text.push_str(&format!("\n{name}: {why}"));
            }
        }
        Self::failed(rejection.class(), text)
    }
}

/// `responseState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
enum State {
    Failure,
    Reprompt,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    message_version: &'static str,
    response: Answer<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_attributes: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_session_attributes: Option<&'a Map<String, Value>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Answer<'a> {
    Function(FunctionResult<'a>),
    Api(ApiResult<'a>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionResult<'a> {
    action_group: &'a str,
    function: &'a str,
    function_response: FunctionResponse,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    response_state: Option<State>,
    response_body: TextBody,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ApiResult<'a> {
    action_group: &'a str,
    api_path: &'a str,
    http_method: &'a str,
    http_status_code: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_state: Option<State>,
    response_body: JsonBody,
}

#[derive(Serialize)]
struct TextBody {
    #[serde(rename = "TEXT")]
    text: Body,
}

#[derive(Serialize)]
struct JsonBody {
    #[serde(rename = "application/json")]
    json: Body,
}

#[derive(Serialize)]
struct Body {
    body: String,
}

/// The response to `event`, in the shape of the way its action group is defined.
pub(super) fn respond(event: &Event, ending: Ending) -> Value {
    let Ending { class, state, text } = ending;
    let body = Body { body: text };
    let response = match &event.api_path {
        Some(api_path) => Answer::Api(ApiResult {
            action_group: &event.action_group,
            api_path,
            http_method: event.http_method.as_deref().unwrap_or_default(),
            http_status_code: class.map_or(200, status_for),
            response_state: state,
            response_body: JsonBody { json: body },
        }),
        None => Answer::Function(FunctionResult {
            action_group: &event.action_group,
            function: &event.function,
            function_response: FunctionResponse {
                response_state: state,
                response_body: TextBody { text: body },
            },
        }),
    };
    let response = Response {
        // The one version Bedrock Agents defines, whatever the event says.
        message_version: "1.0",
        response,
        session_attributes: event.session_attributes.as_ref(),
        prompt_session_attributes: event.prompt_session_attributes.as_ref(),
    };
    serde_json::to_value(response).unwrap_or(Value::Null)
}

/// `REPROMPT` for what the model can act on (invalid input, the tool's own failure, a retryable
/// class); `FAILURE` for what only the deployment can fix.
fn state_for(class: ErrorClass) -> State {
    match class {
        ErrorClass::InvalidInput | ErrorClass::ToolError => State::Reprompt,
        class if class.retryable() => State::Reprompt,
        _ => State::Failure,
    }
}

/// An API-schema response's `httpStatusCode` for a failure of `class`, as an HTTP API would
/// answer it (the agent acts on `responseState`; the model reads the body).
fn status_for(class: ErrorClass) -> u16 {
    match class {
        ErrorClass::InvalidInput => 400,
        ErrorClass::Unauthorized => 403,
        ErrorClass::NotFound => 404,
        ErrorClass::Conflict => 409,
        ErrorClass::RateLimited => 429,
        ErrorClass::Unsupported => 501,
        ErrorClass::Busy | ErrorClass::Unavailable => 503,
        ErrorClass::Timeout => 504,
        _ => 500,
    }
}

/// The value as text (a string as it is, anything else as compact JSON), then each text
/// content item on its own line; other items are named, as the body carries text only.
fn text_of(output: &ToolOutput<Value>) -> String {
    let mut lines = Vec::new();
    match &output.value {
        Value::Null => {}
        Value::String(s) => lines.push(s.clone()),
        value => lines.push(value.to_string()),
    }
    for item in &output.content {
        lines.push(match item {
            Content::Text { text } => text.clone(),
            Content::Resource {
                body: ResourceBody::Text(text),
                ..
            } => text.clone(),
            Content::Image { media_type, .. } => format!("[image: {media_type}]"),
            Content::Audio { media_type, .. } => format!("[audio: {media_type}]"),
            Content::Resource { uri, .. } | Content::Link { uri, .. } => {
                format!("[resource: {uri}]")
            }
        });
    }
    lines.join("\n")
}

/// `Error: <message>`, with the retry guidance and the extra prompt content the tool gave.
fn error_text(error: &ToolError) -> String {
    let mut text = format!("Error: {}", error.message);
    if error.can_retry {
        text.push_str(" (you may retry");
        if let Some(ms) = error.retry_after_ms {
            text.push_str(&format!(" after {ms} ms"));
        }
        text.push(')');
    }
    if let Some(extra) = &error.additional_prompt_content {
        text.push('\n');
        text.push_str(extra);
    }
    text
}
