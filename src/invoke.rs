//! Running a resolved tool: input validation, execution with panic isolation and a time limit,
//! output checking, timing and the per-call log line. Protocol adapters call this and only
//! translate its results.

use crate::idempotency::{Claim, IdempotencyStore, StoreError, StoredOutcome, fingerprint};
use crate::registry::{HandlerError, RegisteredTool};
use crate::secrets::{SecretError, Secrets, SecretsRejection};
use crate::tool::{Secret, ToolContext, ToolError};
use crate::validate::{ParameterErrors, WHOLE_INPUT};
use futures_util::FutureExt;
use serde_json::Value;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a tool run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The output, or why the tool failed.
    pub result: Result<Value, ToolError>,
    /// Time spent in the tool.
    pub duration: Duration,
}

/// How an outcome is labelled in logs.
fn label(result: &Result<Value, Failure>) -> &'static str {
    match result {
        Ok(_) => "success",
        Err(Failure::Tool(_)) => "tool_error",
        Err(Failure::Panic(_)) => "panic",
        Err(Failure::InvalidOutput(_)) => "invalid_output",
        Err(Failure::Timeout(_)) => "timeout",
    }
}

enum Failure {
    Tool(ToolError),
    Panic(String),
    InvalidOutput(String),
    Timeout(Duration),
}

impl Failure {
    fn into_tool_error(self, tool: &RegisteredTool) -> ToolError {
        match self {
            Failure::Tool(e) => e,
            // The panic text is a developer detail: never in the user-facing message.
            Failure::Panic(text) => ToolError::new("The tool failed unexpectedly")
                .developer_message(format!("tool {} panicked: {text}", tool.id)),
            Failure::InvalidOutput(why) => ToolError::new("The tool returned an invalid result")
                .developer_message(format!(
                    "the output of {} does not conform to its output_schema: {why}",
                    tool.id
                )),
            Failure::Timeout(limit) => ToolError::new("The tool did not finish in time")
                .developer_message(format!(
                    "{} was cancelled after {} ms",
                    tool.id,
                    limit.as_millis()
                ))
                .retryable(),
        }
    }
}

/// Idempotency settings: where claims live and how long outcomes are kept.
#[derive(Debug, Clone)]
pub struct Idempotency {
    /// The store.
    pub store: Arc<dyn IdempotencyStore>,
    /// How long a stored outcome answers repeats (`OXP_IDEMPOTENCY_TTL_SECS`).
    pub keep: Duration,
}

/// How long a claim is held when a call has no time limit.
const UNBOUNDED_HOLD: Duration = Duration::from_secs(15 * 60);
/// Added to a call's time limit for the in-progress hold, to cover storing the outcome.
const HOLD_MARGIN: Duration = Duration::from_secs(5);
/// What a duplicate of a running call is told to wait before retrying.
pub const IN_PROGRESS_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Why a call was refused before its tool ran.
#[derive(Debug)]
pub enum Refusal {
    /// The input does not fit the tool (a typed handler could not read it).
    InvalidInput(ParameterErrors),
    /// The `call_id` was used before for another tool, input or user.
    KeyReused(String),
    /// The idempotency store could not answer.
    Store(StoreError),
}

/// The time limit of a call: the tool timeout and the transport deadline, whichever is first.
pub fn limit(timeout: Option<Duration>, deadline: Option<Instant>) -> Option<Duration> {
    let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    match (timeout, remaining) {
        (Some(t), Some(r)) => Some(t.min(r)),
        (t, r) => t.or(r),
    }
}

/// Runs `tool` as [`execute`] does, honouring `call_id` as an idempotency key when `idempotency`
/// is given, the caller supplied a key (`keyed`) and the tool has not opted out.
pub async fn call(
    tool: &RegisteredTool,
    input: Value,
    ctx: ToolContext,
    timeout: Option<Duration>,
    keyed: bool,
    idempotency: Option<&Idempotency>,
) -> Result<Outcome, Refusal> {
    let Some(idem) = idempotency.filter(|_| keyed && tool.idempotent) else {
        return execute(tool, input, ctx, timeout)
            .await
            .map_err(Refusal::InvalidInput);
    };
    let key = ctx.call_id.clone();
    let print = fingerprint(&tool.id, ctx.user_id.as_deref(), &input);
    let hold = limit(timeout, ctx.deadline).map_or(UNBOUNDED_HOLD, |l| l + HOLD_MARGIN);
    match idem
        .store
        .claim(&key, &print, hold)
        .await
        .map_err(Refusal::Store)?
    {
        Claim::Acquired => {}
        Claim::Completed(stored) => {
            tracing::info!(target: "oxp::call", call_id = %key, tool_id = %tool.id, outcome = "replayed");
            return Ok(Outcome {
                result: stored.result(),
                duration: Duration::from_secs_f64(stored.duration_ms.max(0.0) / 1e3),
            });
        }
        Claim::InProgress => {
            tracing::info!(target: "oxp::call", call_id = %key, tool_id = %tool.id, outcome = "in_progress");
            return Ok(Outcome {
                result: Err(ToolError::new(
                    "This call is still running; retry shortly to get its result",
                )
                .developer_message(format!("a call with call_id '{key}' is in progress"))
                .retry_after(IN_PROGRESS_RETRY_AFTER)),
                duration: Duration::ZERO,
            });
        }
        Claim::Conflict => return Err(Refusal::KeyReused(key)),
    }
    let outcome = match execute(tool, input, ctx, timeout).await {
        Ok(outcome) => outcome,
        Err(errors) => {
            let _ = idem.store.release(&key, &print).await;
            return Err(Refusal::InvalidInput(errors));
        }
    };
    let stored = match &outcome.result {
        Err(e) if e.can_retry => idem.store.release(&key, &print).await,
        result => {
            let record = StoredOutcome::new(result, outcome.duration);
            idem.store.complete(&key, &print, &record, idem.keep).await
        }
    };
    if let Err(e) = stored {
        // The caller still gets the answer; only a later repeat may run the tool again.
        tracing::warn!(target: "oxp::call", call_id = %key, error = %e, "outcome not stored");
    }
    Ok(outcome)
}

/// Validates `input` against the tool's input schema.
pub fn check_input(tool: &RegisteredTool, input: &Value) -> Result<(), ParameterErrors> {
    // Tool input is always an object, whatever a hand-written schema leaves open.
    if !input.is_object() {
        return Err(ParameterErrors::from([(
            WHOLE_INPUT.to_owned(),
            "Must be an object".to_owned(),
        )]));
    }
    tool.input_validator.check_input(input)
}

/// Runs `tool` on already validated `input` and logs one line for the call.
///
/// `Err` only when a typed handler could not read input the schema accepted (the schema is
/// looser than the input type): that is an input error, reported like a validation failure.
pub async fn execute(
    tool: &RegisteredTool,
    input: Value,
    ctx: ToolContext,
    timeout: Option<Duration>,
) -> Result<Outcome, ParameterErrors> {
    let call_id = ctx.call_id.clone();
    let trace_id = ctx.trace_id.clone();
    let limit = limit(timeout, ctx.deadline);
    let run = AssertUnwindSafe((tool.handler)(input, ctx)).catch_unwind();
    let start = Instant::now();
    let raw = match limit {
        Some(limit) => tokio::time::timeout(limit, run).await.map_err(|_| limit),
        None => Ok(run.await),
    };
    let duration = start.elapsed();
    let result = match raw {
        Err(limit) => Err(Failure::Timeout(limit)),
        Ok(Err(panic)) => Err(Failure::Panic(panic_text(panic.as_ref()))),
        Ok(Ok(Err(HandlerError::InvalidInput(why)))) => {
            tracing::info!(
                target: "oxp::call",
                call_id = %call_id,
                trace_id = trace_id.as_deref(),
                tool_id = %tool.id,
                outcome = "invalid_input",
                duration_ms = duration.as_secs_f64() * 1e3,
            );
            return Err(ParameterErrors::from([(WHOLE_INPUT.to_owned(), why)]));
        }
        Ok(Ok(Err(HandlerError::Tool(e)))) => Err(Failure::Tool(e)),
        Ok(Ok(Ok(value))) => match &tool.output_validator {
            Some(v) => v
                .check_output(&value)
                .map(|()| value)
                .map_err(Failure::InvalidOutput),
            // A tool that declares no output answers null whatever it returned.
            None => Ok(Value::Null),
        },
    };
    let outcome = label(&result);
    match &result {
        Err(Failure::Panic(text)) | Err(Failure::InvalidOutput(text)) => tracing::error!(
            target: "oxp::call",
            call_id = %call_id,
            trace_id = trace_id.as_deref(),
            tool_id = %tool.id,
            outcome,
            duration_ms = duration.as_secs_f64() * 1e3,
            detail = %text,
        ),
        _ => tracing::info!(
            target: "oxp::call",
            call_id = %call_id,
            trace_id = trace_id.as_deref(),
            tool_id = %tool.id,
            outcome,
            duration_ms = duration.as_secs_f64() * 1e3,
        ),
    }
    Ok(Outcome {
        result: result.map_err(|f| f.into_tool_error(tool)),
        duration,
    })
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

/// Context values a caller supplied, before they are checked against a tool's requirements.
#[derive(Debug, Default)]
pub struct Supplied {
    /// Call id (generated when absent).
    pub call_id: Option<String>,
    /// Trace id.
    pub trace_id: Option<String>,
    /// End-user id.
    pub user_id: Option<String>,
    /// Tokens by provider id.
    pub authorization: Vec<(String, Secret)>,
    /// Secrets by id.
    pub secrets: Vec<(String, Secret)>,
}

/// A requirement of the tool that the call does not meet. Names what is missing, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// No token for this authorization provider.
    Authorization(String),
    /// No user id.
    UserId,
    /// No value for this secret (`true`: the client sent one but clients may not send secrets).
    Secret(String, bool),
    /// The server holds the secret but could not load it.
    Unavailable(SecretError),
}

impl Missing {
    /// A message for the user.
    pub fn user_message(&self) -> String {
        match self {
            Self::Authorization(id) => {
                format!("This tool requires authorization with '{id}', which was not provided")
            }
            Self::UserId => "This tool requires a user ID, which was not provided".into(),
            Self::Secret(id, _) => {
                format!("This tool requires the secret '{id}', which was not provided")
            }
            Self::Unavailable(e) => e.user_message(),
        }
    }

    /// A message for developers: where the value was expected.
    pub fn developer_message(&self) -> String {
        match self {
            Self::Authorization(id) => {
                format!("context.authorization has no token with id '{id}'")
            }
            Self::UserId => "context.user_id is required by the tool definition".into(),
            Self::Secret(id, false) => {
                format!("secret '{id}' is neither held by the server nor sent in context.secrets")
            }
            Self::Secret(id, true) => format!(
                "secret '{id}' is not held by the server, and this server does not accept secrets from clients (OXP_CLIENT_SECRETS=never)"
            ),
            Self::Unavailable(e) => e.developer_message(),
        }
    }
}

/// Checks the tool's requirements against what was supplied, loads the server-held secrets it
/// needs, and builds the tool's context with exactly the tokens and secrets the tool declared.
pub async fn prepare(
    tool: &RegisteredTool,
    supplied: Supplied,
    secrets: &Secrets,
) -> Result<ToolContext, Missing> {
    let required = &tool.requirements;
    let mut authorization = HashMap::with_capacity(required.authorization.len());
    let mut offered = supplied.authorization;
    for provider in &required.authorization {
        let i = offered
            .iter()
            .position(|(id, token)| *id == provider.id && !token.expose().is_empty())
            .ok_or_else(|| Missing::Authorization(provider.id.clone()))?;
        let (id, token) = offered.swap_remove(i);
        authorization.insert(id, token);
    }
    let user_id = supplied.user_id.filter(|u| !u.is_empty());
    if required.user_id && user_id.is_none() {
        return Err(Missing::UserId);
    }
    let secrets = if required.secrets.is_empty() {
        HashMap::new()
    } else {
        secrets
            .resolve(&required.secrets, supplied.secrets)
            .await
            .map_err(|r| match r {
                SecretsRejection::Missing {
                    id,
                    refused_from_client,
                } => Missing::Secret(id, refused_from_client),
                SecretsRejection::Source(e) => Missing::Unavailable(e),
            })?
    };
    Ok(ToolContext {
        call_id: supplied
            .call_id
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
        trace_id: supplied.trace_id,
        user_id,
        authorization,
        secrets,
        deadline: None,
        group_id: None,
        thread_ancestors: Vec::new(),
    })
}
