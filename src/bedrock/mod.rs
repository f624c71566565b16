//! Amazon Bedrock Agents action groups, defined with function details or with an API schema:
//! the agent invokes the function directly with `messageVersion`, `agent`, `actionGroup`, and
//! either `function` (the tool's listing name) and `parameters`, or `apiPath` (`/` and the
//! listing name), `httpMethod`, `parameters` and `requestBody.content.<type>.properties`; each
//! parameter or property is `{name, type, value}`, every value a string. They are converted by
//! the tool's input schema ([`params`]), the tool runs through the invoker, and the answer is
//! the documented response of the group's kind ([`response`]): the text in the body, with
//! `responseState` when the call failed (and, for an API schema, an HTTP status), the session
//! attributes passed back as they came.
//!
//! `REPROMPT` (the model reads the text and may try again) answers what the model can act on:
//! invalid input, the tool's own failures, and the retryable classes (busy, rate limited,
//! unavailable, timeout). `FAILURE` (the agent ends the turn with a dependency failure) answers
//! what only the deployment can fix: an unknown function, a missing requirement, a panic, an
//! output that breaks its schema. Every answer is a response, never a function error.

pub(crate) mod openapi;
mod params;
mod response;
pub(crate) mod schema;

use crate::server::{BoxFuture, CallContext, DirectHandler, Object};
use oxp_lambda_core::invoke::{Invoker, Target};
use oxp_lambda_core::refusal::ErrorClass;
use oxp_lambda_core::registry::RegisteredTool;
use response::{Ending, respond};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
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
        match crate::server::object::<Event>(event) {
            Some(event) => {
                let ending = self.call(&event, context).await;
                respond(&event, ending)
            }
            None => respond(
                &Event::default(),
                Ending::failure(
                    ErrorClass::InvalidInput,
                    "Error: the event is not a Bedrock Agents action group event".into(),
                ),
            ),
        }
    }

    /// Runs the tool `event` names.
    async fn call(&self, event: &Event, context: CallContext) -> Ending {
        let Some(tool) = self.by_name.get(event.tool_name()) else {
            // Refused by the invoker as every protocol's call of an unknown tool is (its line,
            // its caller's rate): a caller over its rate is told so.
            let target = Target::Unserved(event.tool_name().to_owned());
            let call = context.call("bedrock-agent", target, Value::Null);
            if let Err(e) = self.invoker.invoke(call).await
                && e.class() != ErrorClass::NotFound
            {
                return Ending::refused(&e);
            }
            let (what, shown) = match &event.api_path {
                Some(path) => ("API path", crate::server::shown(path)),
                None => ("function", crate::server::shown(&event.function)),
            };
            return Ending::failed(
                ErrorClass::NotFound,
                format!("Error: unknown {what} {shown}"),
            );
        };
        let input = match params::to_input(event.inputs(), &tool.input_schema) {
            Ok(input) => input,
            Err(why) => return Ending::failed(ErrorClass::InvalidInput, format!("Error: {why}")),
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
        match self.invoker.invoke(call).await {
            Ok(outcome) => Ending::of(outcome),
            Err(rejection) => Ending::refused(&rejection),
        }
    }
}

/// The answer to an event too large to read.
fn too_large() -> Value {
    respond(
        &Event::default(),
        Ending::failure(
            ErrorClass::InvalidInput,
            "Error: the event is too large".into(),
        ),
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
            Ending::failure(
                ErrorClass::NotFound,
                "Error: this function does not serve a Bedrock Agents action group".into(),
            ),
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
                    Ending::failure(
                        ErrorClass::Internal,
                        "Error: the action group's tools cannot be served".into(),
                    ),
                ),
            }
        })
    }

    fn too_large(&self) -> Value {
        too_large()
    }
}

/// The input event, as far as a call uses it: `function` for a group defined with function
/// details, `apiPath` (and `httpMethod`, `requestBody`) for one defined with an API schema.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    #[serde(default)]
    action_group: String,
    #[serde(default)]
    function: String,
    #[serde(default)]
    api_path: Option<String>,
    #[serde(default)]
    http_method: Option<String>,
    #[serde(default, deserialize_with = "crate::server::objects")]
    parameters: Vec<params::Parameter>,
    #[serde(default, deserialize_with = "crate::server::optional_object")]
    request_body: Option<RequestBody>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    session_attributes: Option<Map<String, Value>>,
    #[serde(default)]
    prompt_session_attributes: Option<Map<String, Value>>,
}

/// An API-schema event's `requestBody`: its properties by content type.
#[derive(Debug, Default, Deserialize)]
struct RequestBody {
    #[serde(default)]
    content: BTreeMap<String, Object<Properties>>,
}

#[derive(Debug, Default, Deserialize)]
struct Properties {
    #[serde(default, deserialize_with = "crate::server::objects")]
    properties: Vec<params::Parameter>,
}

impl Event {
    /// The listing name of the tool it calls: the function, or the API path without its `/`.
    fn tool_name(&self) -> &str {
        match &self.api_path {
            Some(path) => path.strip_prefix('/').unwrap_or(path),
            None => &self.function,
        }
    }

    /// Its parameters, then the request body's properties (a name in both: the body's).
    fn inputs(&self) -> impl Iterator<Item = &params::Parameter> {
        let body = self.request_body.iter().flat_map(|b| b.content.values());
        self.parameters
            .iter()
            .chain(body.flat_map(|c| c.0.properties.iter()))
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
