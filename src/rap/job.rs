//! An accepted invocation on its way to a worker: what the queue carries.
//!
//! Everything the acknowledgement found wrong travels with the job as a [`Rejection`], so the
//! worker reports it to the callback like any other result.

use crate::rap::wire::{ErrorBody, ReplyTo};
use oxp_lambda_core::principal::Principal;
use oxp_lambda_core::registry_error::list_limited;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One accepted invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Job {
    /// Where the result goes.
    pub(crate) reply_to: ReplyTo,
    /// The operation, when the invocation named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) operation: Option<String>,
    /// The arguments (an object, or null when the invocation was malformed).
    #[serde(default)]
    pub(crate) arguments: Value,
    /// Ancestor thread ids, root first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) thread_ancestors: Vec<String>,
    /// The end user, as the invocation named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) user_id: Option<String>,
    /// Who made the invocation (the invoker binds the user to it when configured).
    #[serde(default, skip_serializing_if = "is_anonymous")]
    pub(crate) principal: Principal,
    /// The caller's W3C trace context (its `traceparent` header, well-formed): the tool and
    /// the result's callback carry it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) traceparent: Option<String>,
    /// This server's base URL as the caller reached it (`https://host/stage`), for the URLs a
    /// call gives out (a question's `response_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base_url: Option<String>,
    /// When the invocation was acknowledged, in Unix milliseconds.
    pub(crate) received_at_ms: u64,
    /// Why the invocation cannot run, found at acknowledgement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rejected: Option<Rejection>,
    /// The runner's work it is, as read from it (not kept: the record's own id).
    #[serde(skip)]
    pub(crate) work: String,
}

impl Job {
    /// A job for `reply_to`, received now, with nothing else known yet.
    pub(crate) fn new(reply_to: ReplyTo) -> Self {
        Self {
            reply_to,
            operation: None,
            arguments: Value::Null,
            thread_ancestors: Vec::new(),
            user_id: None,
            principal: Principal::default(),
            traceparent: None,
            base_url: None,
            received_at_ms: unix_ms(SystemTime::now()),
            rejected: None,
            work: String::new(),
        }
    }
}

fn is_anonymous(principal: &Principal) -> bool {
    *principal == Principal::default()
}

/// Why a job must stay on its queue: it was neither answered nor recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kept {
    /// The same invocation is running elsewhere; a later run of this job replays its stored
    /// result (or runs it, if that run died).
    Duplicate,
    /// An earlier acceptance of the same invocation delivered this answer already.
    Delivered,
    /// The user has not authorized yet and the worker's time is up: a later delivery of the
    /// job waits on.
    AwaitingAuthorization,
    /// The tool needs the user's authorization (handled inside the worker's processing).
    Authorize(Box<oxp_lambda_core::tokens::Challenge>),
    /// The tool waits for the user's answer to its question and the worker's time is up: a
    /// later delivery of the job finds the question and waits on.
    AwaitingAnswer,
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Duplicate => f.write_str("the same invocation is still running"),
            Self::Delivered => f.write_str("the same answer was delivered already"),
            Self::AwaitingAuthorization => f.write_str("the user has not authorized yet"),
            Self::Authorize(_) => f.write_str("the user must authorize"),
            Self::AwaitingAnswer => f.write_str("the user has not answered yet"),
        }
    }
}

/// Why an acknowledged invocation will not run; reported to the callback as an error result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Rejection {
    /// A field is missing or has the wrong type.
    MalformedInvocation {
        /// Which, as the JSON parser put it.
        detail: String,
    },
    /// The operation is not in the toolset.
    UnknownOperation,
    /// The user is over `OXP_RAP_RATE_LIMIT`.
    RateLimited {
        /// When a retry may pass.
        retry_after_ms: u64,
    },
}

impl Rejection {
    /// The error result of this rejection; `operations` lists what an unknown operation
    /// could have been.
    pub(crate) fn error<'a>(
        &self,
        operation: Option<&str>,
        operations: impl ExactSizeIterator<Item = &'a str>,
    ) -> ErrorBody {
        match self {
            Self::MalformedInvocation { detail } => error(
                "malformed_invocation",
                format!("The invocation is malformed: {detail}"),
            ),
            Self::UnknownOperation => unknown_operation(operation.unwrap_or_default(), operations),
            Self::RateLimited { retry_after_ms } => ErrorBody {
                can_retry: true,
                retry_after_ms: Some(*retry_after_ms),
                ..error(
                    oxp_lambda_core::refusal::ErrorClass::RateLimited.as_str(),
                    "Too many invocations for this user; retry later".into(),
                )
            },
        }
    }
}

/// An error result that retrying will not fix.
pub(crate) fn error(kind: &str, message: String) -> ErrorBody {
    ErrorBody {
        kind: kind.into(),
        message,
        can_retry: false,
        retry_after_ms: None,
        additional_prompt_content: None,
        parameter_errors: None,
    }
}

/// The error result of an operation the toolset does not have, naming those it has (as OXP's
/// unknown tool names them: the first 20, then how many more).
pub(crate) fn unknown_operation<'a>(
    operation: &str,
    operations: impl ExactSizeIterator<Item = &'a str>,
) -> ErrorBody {
    let names = list_limited(operations);
    let message = format!("Unknown operation '{operation}'. Available operations: {names}");
    error("unknown_operation", message)
}

/// Unix milliseconds of `t`.
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

/// RFC 3339 text of Unix milliseconds, for logs and dead letters.
pub(crate) fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}
