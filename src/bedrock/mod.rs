//! Amazon Bedrock Agents action groups defined with function details: the agent invokes the
//! function directly with `messageVersion`, `agent`, `actionGroup`, `function` (the tool's
//! listing name) and `parameters` (`{name, type, value}`, every value a string). The
//! parameters are converted by the tool's input schema ([`params`]), the tool runs through the
//! invoker, and the answer is the documented response: `response.actionGroup`, `function`,
//! `functionResponse.responseBody.TEXT.body`, with `responseState` when the call failed, the
//! session attributes passed back as they came.
//!
//! `REPROMPT` (the model reads the text and may try again) answers what the model can act on:
//! invalid input, the tool's own failures, and the retryable classes (busy, rate limited,
//! unavailable, timeout). `FAILURE` (the agent ends the turn with a dependency failure) answers
//! what only the deployment can fix: an unknown function, a missing requirement, a panic, an
//! output that breaks its schema. Every answer is a response, never a function error.

mod params;
pub(crate) mod schema;

use crate::server::{BoxFuture, CallContext, DirectHandler};
use oxp_lambda_core::invoke::{Invoker, Outcome, Target};
use oxp_lambda_core::refusal::{ErrorClass, Rejection};
use oxp_lambda_core::registry::RegisteredTool;
use oxp_lambda_core::{Content, ResourceBody, ToolError, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The session attribute naming the end user (`sessionState.sessionAttributes.user_id` of
/// InvokeAgent): the call's user id, for tools that need one or the user's own tokens.
pub(crate) const USER_ID_ATTRIBUTE: &str = "user_id";

/// The longest user id taken from the session attributes.
const MAX_USER_ID_CHARS: usize = 256;

/// The longest `sessionId` kept as the call's trace id.
const MAX_TRACE_ID: usize = 256;

/// The tools an action group can call (the latest version of each), by listing name.
pub(crate) struct BedrockAgent {
    invoker: Arc<Invoker>,
    by_name: HashMap<String, Arc<RegisteredTool>>,
}

impl BedrockAgent {
    /// Serves `invoker`'s tools.
    pub(crate) fn new(invoker: Arc<Invoker>) -> Result<Self, String> {
        let tools = invoker.registry().served(&[], "")?;
        let by_name = tools
            .into_iter()
            .map(|t| (t.listing_name.clone(), t))
            .collect();
        Ok(Self { invoker, by_name })
    }

    /// Answers one raw event.
    pub(crate) async fn invoke(&self, event: &[u8], context: CallContext) -> Value {
        let event: Event = match crate::server::object(event) {
            Some(event) => event,
            None => {
                return respond(
                    &Event::default(),
                    Some(State::Failure),
                    "Error: the event is not a Bedrock Agents action group event".into(),
                );
            }
        };
        let Some(tool) = self.by_name.get(&event.function) else {
            // Refused by the invoker as every protocol's call of an unknown tool is (its line,
            // its caller's rate): a caller over its rate is told so.
            let target = Target::Unserved(event.function.clone());
            let call = context.call("bedrock-agent", target, Value::Null);
            if let Err(e) = self.invoker.invoke(call).await
                && e.class() != ErrorClass::NotFound
            {
                let (state, body) = refused(&e);
                return respond(&event, state, body);
            }
            let shown = crate::server::shown(&event.function);
            return respond(
                &event,
                Some(State::Failure),
                format!("Error: unknown function {shown}"),
            );
        };
        let input = match params::to_input(&event.parameters, &tool.input_schema) {
            Ok(input) => input,
            Err(why) => return respond(&event, Some(State::Reprompt), format!("Error: {why}")),
        };
        let mut call = context.call("bedrock-agent", Target::Tool(tool.clone()), input);
        call.trace_id = event
            .session_id
            .as_deref()
            .map(|id| id.chars().take(MAX_TRACE_ID).collect());
        // The end user, as the application calling InvokeAgent names it in the session's
        // attributes (set by that application with its AWS credentials, never by the model).
        call.user_id = event
            .session_attributes
            .as_ref()
            .and_then(|a| a.get(USER_ID_ATTRIBUTE))
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty() && u.chars().count() <= MAX_USER_ID_CHARS)
            .map(str::to_owned);
        let (state, body) = match self.invoker.invoke(call).await {
            Ok(outcome) => answer(outcome),
            Err(rejection) => refused(&rejection),
        };
        respond(&event, state, body)
    }
}

/// The answer to an event too large to read.
fn too_large() -> Value {
    respond(
        &Event::default(),
        Some(State::Failure),
        "Error: the event is too large".into(),
    )
}

/// The action group as the Lambda role runs it: its tools built by the first invocation (or at
/// start when the function serves the role, so a tool it cannot serve fails there).
pub(crate) struct ActionGroup {
    invoker: Arc<Invoker>,
    agent: OnceLock<Result<BedrockAgent, String>>,
}

impl ActionGroup {
    pub(crate) fn new(invoker: Arc<Invoker>) -> Self {
        Self {
            invoker,
            agent: OnceLock::new(),
        }
    }

    /// The documented failure response, for an app that does not serve the action group.
    pub(crate) fn not_served() -> Value {
        respond(
            &Event::default(),
            Some(State::Failure),
            "Error: this function does not serve a Bedrock Agents action group".into(),
        )
    }

    /// The agent's tools; `Err` says which tool cannot be served.
    pub(crate) fn agent(&self) -> Result<&BedrockAgent, &str> {
        self.agent
            .get_or_init(|| BedrockAgent::new(self.invoker.clone()))
            .as_ref()
            .map_err(String::as_str)
    }
}

impl DirectHandler for ActionGroup {
    fn handle<'a>(
        &'a self,
        event: &'a [u8],
        _client_context: Option<&'a [u8]>,
        context: CallContext,
    ) -> BoxFuture<'a, Value> {
        Box::pin(async move {
            match self.agent() {
                Ok(agent) => agent.invoke(event, context).await,
                Err(_) => respond(
                    &Event::default(),
                    Some(State::Failure),
                    "Error: the action group's tools cannot be served".into(),
                ),
            }
        })
    }

    fn too_large(&self) -> Value {
        too_large()
    }
}

/// The input event, as far as a call uses it (function details; an API-schema action group's
/// `apiPath` events are not served).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    #[serde(default)]
    action_group: String,
    #[serde(default)]
    function: String,
    #[serde(default, deserialize_with = "crate::server::objects")]
    parameters: Vec<params::Parameter>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    session_attributes: Option<Map<String, Value>>,
    #[serde(default)]
    prompt_session_attributes: Option<Map<String, Value>>,
}

/// `functionResponse.responseState`.
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
    response: FunctionResult<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_attributes: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_session_attributes: Option<&'a Map<String, Value>>,
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
    response_body: ResponseBody,
}

#[derive(Serialize)]
struct ResponseBody {
    #[serde(rename = "TEXT")]
    text: TextBody,
}

#[derive(Serialize)]
struct TextBody {
    body: String,
}

fn respond(event: &Event, state: Option<State>, body: String) -> Value {
    let response = Response {
        // The one version Bedrock Agents defines, whatever the event says.
        message_version: "1.0",
        response: FunctionResult {
            action_group: &event.action_group,
            function: &event.function,
            function_response: FunctionResponse {
                response_state: state,
                response_body: ResponseBody {
                    text: TextBody { body },
                },
            },
        },
        session_attributes: event.session_attributes.as_ref(),
        prompt_session_attributes: event.prompt_session_attributes.as_ref(),
    };
    serde_json::to_value(response).unwrap_or(Value::Null)
}

/// The state and text of a call that reached its tool.
fn answer(outcome: Outcome) -> (Option<State>, String) {
    let class = outcome.error_class();
    match outcome.result {
        Ok(output) => (None, text_of(&output)),
        Err(error) => (
            Some(state_for(class.unwrap_or(ErrorClass::ToolError))),
            error_text(&error),
        ),
    }
}

/// A refusal before the tool ran: the user message, never the developer detail.
fn refused(rejection: &Rejection) -> (Option<State>, String) {
    let mut text = format!("Error: {}", rejection.user_message());
    if let Rejection::InvalidInput(errors) = rejection {
        for (name, why) in errors.iter() {
            text.push_str(&format!("\n{name}: {why}"));
        }
    }
    (Some(state_for(rejection.class())), text)
}

fn state_for(class: ErrorClass) -> State {
    match class {
        ErrorClass::InvalidInput | ErrorClass::ToolError => State::Reprompt,
        class if class.retryable() => State::Reprompt,
        _ => State::Failure,
    }
}

/// The value as text (a string as it is, anything else as compact JSON), then each text
/// content item on its own line; other items are named, as TEXT carries text only.
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

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
