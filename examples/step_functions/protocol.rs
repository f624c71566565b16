//! A protocol written outside `oxp-lambda`, from its public API only: AWS Step Functions tasks.
//! A state machine calls a tool either over HTTP (`POST /sfn/{tool}`, the input as the body,
//! e.g. from an HTTP task) or by invoking the function directly (`OXP_LAMBDA_ROLE=sfn`, a
//! `Task` state with `arn:aws:states:::lambda:invoke` and the payload `{"tool", "input"}`).
//! Either way the answer is Step Functions' own shape: `{"output": ...}` on success,
//! `{"error", "cause"}` otherwise (the names a `Catch` or `Retry` matches on).
//!
//! Everything about it is here: its settings (`OXP_SFN_TOOLS`, read from the same variables as
//! the server's), its routes, its Lambda role, its schema export (`schema --sfn`). Calls go
//! through the same invoker as every built-in protocol (validation, requirements, the one
//! deadline, the log line), and each request's caller, deadline and trace come from the
//! [`CallContext`] extractor.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use oxp_lambda::config::{Config, ConfigError, Env};
use oxp_lambda::invoke::{Rejection, Target};
use oxp_lambda::protocol::{
    Assembly, BoxFuture, CallContext, Contribution, DirectHandler, LambdaRole, Protocol, Refused,
};
use oxp_lambda::{Invoker, Registry};
use serde_json::{Value, json};
use std::sync::Arc;

/// The protocol: a value the app takes (`App::builder(registry).protocol(StepFunctions)`).
#[derive(Debug, Clone, Copy, Default)]
pub struct StepFunctions;

/// Its settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// `OXP_SFN_TOOLS`: the tools a state machine may call (`Name`, `Name@x.y.z`), comma-
    /// separated; empty (the default) allows every tool.
    pub tools: Vec<String>,
}

impl Protocol for StepFunctions {
    type Settings = Settings;

    fn name(&self) -> &'static str {
        "sfn"
    }

    fn settings(&self, env: &Env<'_>, _server: &Config) -> Result<Settings, ConfigError> {
        let tools = env.list("OXP_SFN_TOOLS");
        if tools.iter().any(|t| t.contains(char::is_whitespace)) {
            return Err(ConfigError::new(
                "OXP_SFN_TOOLS",
                "must be comma-separated tool ids",
            ));
        }
        Ok(Settings { tools })
    }

    fn build(&self, settings: Settings, assembly: &Assembly<'_>) -> Result<Contribution, String> {
        // Every allowed tool must exist: a typo fails at start, not at the first execution.
        for id in &settings.tools {
            assembly
                .invoker()
                .registry()
                .resolve(id)
                .map_err(|e| format!("OXP_SFN_TOOLS: {e}"))?;
        }
        let tasks = Arc::new(Tasks {
            invoker: assembly.invoker().clone(),
            allowed: settings.tools,
        });
        let routes = Router::new()
            .route("/sfn/{tool}", post(run))
            .with_state(tasks.clone());
        // JSON bodies only, so no web page can post here; then the configured authentication.
        let routes = assembly.json_only(routes, || {
            failure(
                415,
                "InvalidInput",
                "the body must be JSON (Content-Type: application/json)",
            )
        });
        let routes = assembly.authenticate(routes, |_, refused| match refused {
            Refused::Unauthenticated => failure(401, "Unauthenticated", "send valid credentials"),
            // A valid token without a scope the server requires of every call.
            _ => failure(403, "Forbidden", "the token lacks a required scope"),
        });
        Ok(Contribution::routes(routes).lambda_role(LambdaRole::direct("sfn", tasks)))
    }

    fn schema(&self, settings: &Settings, registry: &Registry) -> Option<Result<Value, String>> {
        // What a state machine author needs: each callable tool and its input schema.
        let tools = registry
            .tools()
            .iter()
            .filter(|t| {
                settings.tools.is_empty()
                    || settings
                        .tools
                        .iter()
                        .any(|id| registry.resolve(id).is_ok_and(|r| r.id == t.id))
            })
            .map(|t| json!({"tool": t.id, "description": t.description, "input": t.input_schema}))
            .collect();
        Some(Ok(Value::Array(tools)))
    }
}

/// The state both entry points share.
struct Tasks {
    invoker: Arc<Invoker>,
    allowed: Vec<String>,
}

impl Tasks {
    /// Runs `tool` on `input` in `context`: Step Functions' answer.
    async fn execute(&self, tool: &str, input: Value, context: CallContext) -> (u16, Value) {
        let allowed = self.allowed.is_empty() || self.allowed.iter().any(|id| {
            let registry = self.invoker.registry();
            matches!((registry.resolve(id), registry.resolve(tool)), (Ok(a), Ok(b)) if a.id == b.id)
        });
        if !allowed {
            return (
                403,
                json!({"error": "ToolNotAllowed", "cause": "this tool is not in OXP_SFN_TOOLS"}),
            );
        }
        let call = context.call("sfn", Target::Id(tool.to_owned()), input);
        match self.invoker.invoke(call).await {
            Ok(outcome) => match outcome.result {
                Ok(output) => (200, json!({"output": output.value})),
                Err(error) => {
                    let name = if error.can_retry {
                        "ToolRetryable"
                    } else {
                        "ToolFailed"
                    };
                    (200, json!({"error": name, "cause": error.message}))
                }
            },
            Err(rejection) => {
                let name = match &rejection {
                    Rejection::Resolve(_) => "ToolNotFound",
                    Rejection::InvalidInput(_) => "InvalidInput",
                    _ if rejection.class().retryable() => "ToolRetryable",
                    _ => "ToolRefused",
                };
                (
                    400,
                    json!({"error": name, "cause": rejection.user_message()}),
                )
            }
        }
    }
}

/// `POST /sfn/{tool}`: the input as the body.
async fn run(
    State(tasks): State<Arc<Tasks>>,
    Path(tool): Path<String>,
    context: CallContext,
    body: axum::body::Bytes,
) -> Response {
    let Ok(input) = serde_json::from_slice::<Value>(&body) else {
        return failure(
            400,
            "InvalidInput",
            "the body must be the tool's input as JSON",
        );
    };
    let (status, answer) = tasks.execute(&tool, input, context).await;
    json_response(status, &answer)
}

fn failure(status: u16, error: &str, cause: &str) -> Response {
    json_response(status, &json!({"error": error, "cause": cause}))
}

fn json_response(status: u16, body: &Value) -> Response {
    let status = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_REQUEST);
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The direct invocation of `OXP_LAMBDA_ROLE=sfn`: `{"tool": "...", "input": {...}}`.
impl DirectHandler for Tasks {
    fn handle<'a>(
        &'a self,
        event: &'a [u8],
        _client_context: Option<&'a [u8]>,
        context: CallContext,
    ) -> BoxFuture<'a, Value> {
        Box::pin(async move {
            let event: Value = serde_json::from_slice(event).unwrap_or(Value::Null);
            let Some(tool) = event.get("tool").and_then(Value::as_str) else {
                return json!({"error": "InvalidInput", "cause": "the payload must be {\"tool\", \"input\"}"});
            };
            let input = event.get("input").cloned().unwrap_or_else(|| json!({}));
            self.execute(tool, input, context).await.1
        })
    }

    fn too_large(&self) -> Value {
        json!({"error": "InvalidInput", "cause": "the payload is too large"})
    }
}
