//! Running a resolved tool on validated input until its deadline or its cancellation, with
//! panic isolation and output checking, and the log line of a call that reached its tool.

use super::{Disposition, Outcome, Rejection};
use crate::content::{ToolOutput, check_bounds};
use crate::refusal::ErrorClass;
use crate::registry::{HandlerError, RegisteredTool};
use crate::schema::{ParameterErrors, WHOLE_INPUT};
use crate::tool::{Cancellation, ToolContext, ToolError};
use futures_util::FutureExt;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a tool may take to return once its call is cancelled, before it is dropped: long
/// enough to stop cleanly and say what it did, short enough that the caller hears soon.
pub const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// How a tool run failed, before it becomes the [`ToolError`] the caller sees.
enum Failure {
    Tool(ToolError),
    Panic(String),
    InvalidOutput(String),
    Timeout,
    Cancelled,
}

impl Failure {
    fn class(&self) -> ErrorClass {
        match self {
            Self::Tool(e) => e.class.unwrap_or(ErrorClass::ToolError),
            Self::Panic(_) => ErrorClass::Internal,
            Self::InvalidOutput(_) => ErrorClass::InvalidOutput,
            Self::Timeout => ErrorClass::Timeout,
            Self::Cancelled => ErrorClass::Cancelled,
        }
    }

    fn into_tool_error(self, tool: &RegisteredTool, ran: Duration) -> ToolError {
        match self {
            Failure::Tool(e) => e,
            // The panic text may hold anything the tool had (a path, a query, a secret): it goes
            // to the call's log line only, never to a caller or the idempotency store.
            Failure::Panic(_) => ToolError::new("The tool failed unexpectedly").developer_message(
                format!("tool {} panicked; the panic is in the server log", tool.id),
            ),
            // `why` names paths, keywords and sizes, never a value of the output.
            Failure::InvalidOutput(why) => ToolError::new("The tool returned an invalid result")
                .developer_message(format!("the output of {} is not valid: {why}", tool.id)),
            Failure::Timeout => ToolError::new("The tool did not finish in time")
                .developer_message(format!(
                    "{} was stopped at the call's deadline after running {} ms",
                    tool.id,
                    ran.as_millis()
                ))
                .retryable(),
            Failure::Cancelled => ToolError::new("The call was cancelled before the tool finished")
                .developer_message(format!(
                    "{} was cancelled and did not return within {} ms",
                    tool.id,
                    CANCEL_GRACE.as_millis()
                )),
        }
    }
}

/// What a tool run ended in, as it is logged (a panic or invalid output with its detail).
#[derive(Debug)]
pub struct Logged {
    /// The failure's class; `None` on success.
    pub class: Option<ErrorClass>,
    detail: Option<String>,
}

/// Why a run was stopped from outside.
enum Stop {
    Deadline,
    Cancelled,
}

/// Completes at the deadline, or a grace period after the cancellation fired.
async fn stop(deadline: Option<Instant>, cancellation: &Cancellation) -> Stop {
    let at_deadline = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at.into()).await,
            None => std::future::pending().await,
        }
    };
    let after_grace = async {
        cancellation.cancelled().await;
        tokio::time::sleep(CANCEL_GRACE).await;
    };
    tokio::select! {
        () = at_deadline => Stop::Deadline,
        () = after_grace => Stop::Cancelled,
    }
}

/// Runs `tool` on validated `input` until `deadline`.
///
/// `Err` only when a typed handler could not read input the schema accepted (the schema is
/// looser than the input type): that is an input error, reported like a validation failure.
pub(super) async fn execute(
    tool: Arc<RegisteredTool>,
    input: Value,
    ctx: ToolContext,
    deadline: Option<Instant>,
) -> Result<Outcome, Rejection> {
    let call_id = ctx.call_id.clone();
    let cancellation = ctx.cancellation.clone();
    let run = AssertUnwindSafe((tool.handler)(input, ctx)).catch_unwind();
    let start = Instant::now();
    let raw = tokio::select! {
        biased;
        done = run => Ok(done),
        stopped = stop(deadline, &cancellation) => Err(stopped),
    };
    let duration = start.elapsed();
    let result = match raw {
        Err(Stop::Deadline) => {
            // Tasks the tool spawned with a clone of the signal stop too.
            cancellation.cancel();
            Err(Failure::Timeout)
        }
        Err(Stop::Cancelled) => Err(Failure::Cancelled),
        Ok(Err(panic)) => Err(Failure::Panic(panic_text(panic.as_ref()))),
        Ok(Ok(Err(HandlerError::InvalidInput(why)))) => {
            let errors: ParameterErrors = [(WHOLE_INPUT.to_owned(), why)].into();
            return Err(Rejection::InvalidInput(errors));
        }
        Ok(Ok(Err(HandlerError::Tool(e)))) => Err(Failure::Tool(e)),
        Ok(Ok(Ok(output))) => checked(&tool, output).map_err(Failure::InvalidOutput),
    };
    let logged = match &result {
        Ok(_) => Logged {
            class: None,
            detail: None,
        },
        Err(failure) => Logged {
            class: Some(failure.class()),
            detail: match failure {
                Failure::Panic(text) => Some(text.clone()),
                Failure::InvalidOutput(why) => Some(why.clone()),
                _ => None,
            },
        },
    };
    let result = result.map_err(|f| f.into_tool_error(&tool, duration));
    Ok(Outcome {
        call_id,
        tool,
        result,
        duration,
        disposition: Disposition::Ran(logged),
    })
}

/// The output as answered: its value checked against the output schema (a tool that declares
/// no output answers null whatever it returned), its content within bounds.
fn checked(tool: &RegisteredTool, output: ToolOutput<Value>) -> Result<ToolOutput<Value>, String> {
    let value = match tool.output_validator() {
        Some(Ok(v)) => v.check_output(&output.value).map(|()| output.value)?,
        Some(Err(e)) => return Err(e.to_string()),
        None => Value::Null,
    };
    let output = ToolOutput {
        value,
        content: output.content,
        display_as: output.display_as,
    };
    check_bounds(&output)?;
    Ok(output)
}

/// The log line of a call that reached its tool (or a stored outcome of it).
pub(super) fn log_outcome(
    protocol: &str,
    caller: Option<&str>,
    trace_id: Option<&str>,
    traceparent: Option<&str>,
    outcome: &Outcome,
) {
    let (label, detail) = match &outcome.disposition {
        Disposition::Ran(logged) => (
            logged.class.map_or("success", ErrorClass::as_str),
            logged.detail.as_deref(),
        ),
        Disposition::Replayed => ("replayed", None),
        Disposition::InProgress => ("in_progress", None),
    };
    // In whole microseconds, as OXP's `duration` is: 0.049944999999999996 reads as noise.
    let duration_ms = (outcome.duration.as_secs_f64() * 1e6).round() / 1e3;
    macro_rules! line {
        ($level:expr) => {
            tracing::event!(
                target: "oxp::call",
                $level,
                protocol,
                caller,
                call_id = outcome.call_id.as_str(),
                trace_id,
                traceparent,
                tool_id = outcome.tool.id.as_str(),
                outcome = label,
                duration_ms,
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
