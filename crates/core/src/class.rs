//! The classes of calls that did not end in a normal result: the one vocabulary the invoker,
//! every protocol adapter and the log line share. It imports nothing, so every part of the core
//! (a tool's error, a talk-back failure, a refusal) can name a class.

/// The class of a call that did not end in a normal result, as every protocol and the log line
/// name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The tool (or that version of it) does not exist.
    NotFound,
    /// The request or the input is malformed or invalid.
    InvalidInput,
    /// A requirement of the tool (a secret, a token, a user id) was not supplied.
    MissingRequirement,
    /// The caller may not make this call (for example for that user).
    Unauthorized,
    /// The call id was used before for another call.
    Conflict,
    /// No execution slot came free in time.
    Busy,
    /// The caller is over its rate limit.
    RateLimited,
    /// A dependency of the server (a secret store, the idempotency store) did not answer.
    Unavailable,
    /// The tool itself reported a failure.
    ToolError,
    /// The tool did not finish before the call's deadline.
    Timeout,
    /// The call was cancelled before the tool finished.
    Cancelled,
    /// The tool panicked, or its output could not be serialized.
    Internal,
    /// The tool's output does not fit its output schema or the result bounds.
    InvalidOutput,
    /// The tool asked for something the protocol the call came over cannot carry (asking the
    /// user over OXP 1.0, a subscription over a protocol without callbacks).
    Unsupported,
    /// Not a failure: the run ended to wait for an answer, and the call goes on (a question a
    /// 2026-07-28 MCP client answers in its next request, a run parked at a Lambda worker's
    /// deadline). Logged as such, never counted in the `errors` metric.
    Waiting,
}

impl ErrorClass {
    /// The snake_case name, as logs and RAP error kinds carry it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::InvalidInput => "invalid_input",
            Self::MissingRequirement => "missing_requirement",
            Self::Unauthorized => "unauthorized",
            Self::Conflict => "conflict",
            Self::Busy => "busy",
            Self::RateLimited => "rate_limited",
            Self::Unavailable => "unavailable",
            Self::ToolError => "tool_error",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::Internal => "internal",
            Self::InvalidOutput => "invalid_output",
            Self::Unsupported => "unsupported",
            Self::Waiting => "waiting",
        }
    }

    /// Whether the same call may succeed if made again later, unchanged.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            Self::Busy | Self::RateLimited | Self::Unavailable | Self::Timeout
        )
    }
}
