//! Running a resolved tool on validated input: the time limit, panic isolation, output
//! checking, and the log line of a call that reached its tool.

use super::{Disposition, Outcome, Rejection};
use crate::core::registry::{HandlerError, RegisteredTool};
use crate::core::schema::{ParameterErrors, WHOLE_INPUT};
use crate::core::tool::{ToolContext, ToolError};
use futures_util::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The time limit of a call: its timeout and the transport deadline, whichever is first.
pub(super) fn limit(timeout: Option<Duration>, deadline: Option<Instant>) -> Option<Duration> {
    let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    match (timeout, remaining) {
        (Some(t), Some(r)) => Some(t.min(r)),
        (t, r) => t.or(r),
    }
}

/// How a tool run failed, before it becomes the [`ToolError`] the caller sees.
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
            // The panic text may hold anything the tool had (a path, a query, a secret): it goes
            // to the call's log line only, never to a caller or the idempotency store.
            Failure::Panic(_) => ToolError::new("The tool failed unexpectedly").developer_message(
                format!("tool {} panicked; the panic is in the server log", tool.id),
            ),
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

/// What a tool run ended in, as it is logged (a panic or invalid output with its detail).
#[derive(Debug)]
pub(crate) struct Logged {
    label: &'static str,
    detail: Option<String>,
}

/// Runs `tool` on validated `input` within `limit`.
///
/// `Err` only when a typed handler could not read input the schema accepted (the schema is
/// looser than the input type): that is an input error, reported like a validation failure.
pub(super) async fn execute(
    tool: Arc<RegisteredTool>,
    input: Value,
    ctx: ToolContext,
    limit: Option<Duration>,
) -> Result<Outcome, Rejection> {
    let call_id = ctx.call_id.clone();
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
            let errors: ParameterErrors = [(WHOLE_INPUT.to_owned(), why)].into();
            return Err(Rejection::InvalidInput(errors));
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
    let logged = match &result {
        Ok(_) => Logged {
            label: "success",
            detail: None,
        },
        Err(Failure::Tool(_)) => Logged {
            label: "tool_error",
            detail: None,
        },
        Err(Failure::Panic(text)) => Logged {
            label: "panic",
            detail: Some(text.clone()),
        },
        Err(Failure::InvalidOutput(why)) => Logged {
            label: "invalid_output",
            detail: Some(why.clone()),
        },
        Err(Failure::Timeout(_)) => Logged {
            label: "timeout",
            detail: None,
        },
    };
    let result = result.map_err(|f| f.into_tool_error(&tool));
    Ok(Outcome {
        call_id,
        tool,
        result,
        duration,
        disposition: Disposition::Ran(logged),
    })
}

/// The log line of a call that reached its tool (or a stored outcome of it).
pub(super) fn log_outcome(protocol: &str, trace_id: Option<&str>, outcome: &Outcome) {
    let (label, detail) = match &outcome.disposition {
        Disposition::Ran(logged) => (logged.label, logged.detail.as_deref()),
        Disposition::Replayed => ("replayed", None),
        Disposition::InProgress => ("in_progress", None),
    };
    macro_rules! line {
        ($level:expr) => {
            tracing::event!(
                target: "oxp::call",
                $level,
                protocol,
                call_id = %outcome.call_id,
                trace_id,
                tool_id = %outcome.tool.id,
                outcome = label,
                duration_ms = outcome.duration.as_secs_f64() * 1e3,
                detail,
            )
        };
    }
    if detail.is_some() {
        line!(tracing::Level::ERROR);
    } else {
        line!(tracing::Level::INFO);
    }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}
