//! An accepted invocation on its way to a worker: what the queue carries.
//!
//! Everything the acknowledgement found wrong travels with the job as a [`Rejection`], so the
//! worker reports it to the callback like any other result.

use crate::rap::wire::{ErrorBody, ReplyTo};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One accepted invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Where the result goes.
    pub reply_to: ReplyTo,
    /// The operation, when the invocation named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// The arguments (an object, or null when the invocation was malformed).
    #[serde(default)]
    pub arguments: Value,
    /// Ancestor thread ids, root first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_ancestors: Vec<String>,
    /// The end user (bound to the caller's subject when `OXP_BIND_USER_ID` is on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// When the invocation was acknowledged, in Unix milliseconds.
    pub received_at_ms: u64,
    /// Why the invocation cannot run, found at acknowledgement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<Rejection>,
}

impl Job {
    /// A job for `reply_to`, received now, with nothing else known yet.
    pub fn new(reply_to: ReplyTo) -> Self {
        Self {
            reply_to,
            operation: None,
            arguments: Value::Null,
            thread_ancestors: Vec::new(),
            user_id: None,
            received_at_ms: unix_ms(SystemTime::now()),
            rejected: None,
        }
    }
}

/// Why an acknowledged invocation will not run; reported to the callback as an error result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rejection {
    /// A field is missing or has the wrong type.
    MalformedInvocation {
        /// Which, as the JSON parser put it.
        detail: String,
    },
    /// The operation is not in the toolset.
    UnknownOperation,
    /// The `user_id` does not belong to the authenticated caller.
    Unauthorized {
        /// User-facing reason.
        message: String,
    },
    /// The user is over `OXP_RAP_RATE_LIMIT`.
    RateLimited {
        /// When a retry may pass.
        retry_after_ms: u64,
    },
}

impl Rejection {
    /// The error result of this rejection; `operations` lists what an unknown operation
    /// could have been.
    pub fn error<'a>(
        &self,
        operation: Option<&str>,
        operations: impl Iterator<Item = &'a str>,
    ) -> ErrorBody {
        match self {
            Self::MalformedInvocation { detail } => error(
                "malformed_invocation",
                format!("The invocation is malformed: {detail}"),
            ),
            Self::UnknownOperation => unknown_operation(operation.unwrap_or_default(), operations),
            Self::Unauthorized { message } => error("unauthorized", message.clone()),
            Self::RateLimited { retry_after_ms } => ErrorBody {
                can_retry: true,
                retry_after_ms: Some(*retry_after_ms),
                ..error(
                    "rate_limited",
                    "Too many invocations for this user; retry later".into(),
                )
            },
        }
    }
}

/// An error result that retrying will not fix.
pub fn error(kind: &str, message: String) -> ErrorBody {
    ErrorBody {
        kind: kind.into(),
        message,
        can_retry: false,
        retry_after_ms: None,
        additional_prompt_content: None,
        parameter_errors: None,
    }
}

/// The error result of an operation the toolset does not have, naming those it has.
pub fn unknown_operation<'a>(
    operation: &str,
    operations: impl Iterator<Item = &'a str>,
) -> ErrorBody {
    const SHOWN: usize = 20;
    let mut names: Vec<&str> = operations.take(SHOWN + 1).collect();
    let more = if names.len() > SHOWN {
        names.truncate(SHOWN);
        ", ..."
    } else {
        ""
    };
    error(
        "unknown_operation",
        format!(
            "Unknown operation '{operation}'. Available operations: {}{more}",
            names.join(", ")
        ),
    )
}

/// Unix milliseconds of `t`.
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

/// RFC 3339 text of Unix milliseconds, for logs and dead letters.
pub fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}
