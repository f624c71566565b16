//! Why a question or a subscription did not go through ([`TalkError`]), and the tool error a
//! call ends with when one did not (`?` in a tool): its message, whether to retry, its class.

use crate::class::ErrorClass;
use crate::tool::ToolError;
use std::fmt;

/// What [`TalkError::NotCarried`] names when the tool asked the user.
pub const ASKING_THE_USER: &str = "asking the user";
/// What [`TalkError::NotCarried`] names when the tool asked the client's model.
pub const ASKING_THE_CLIENTS_MODEL: &str = "asking the client's model";
/// What [`TalkError::NotCarried`] names when the tool read the client's roots.
pub const READING_THE_CLIENTS_ROOTS: &str = "reading the client's roots";

/// Why a question or a subscription did not go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TalkError {
    /// The protocol the call came over cannot carry it: `what` the tool asked for, over
    /// `protocol`.
    NotCarried {
        /// What the tool asked for (`"asking the user"`, `"a subscription"`).
        what: &'static str,
        /// The protocol's name.
        protocol: &'static str,
    },
    /// The tool's request is malformed (no choices, a default out of range, ...).
    Invalid(String),
    /// The user's answer is not one of the choices (or not the answer asked for).
    InvalidAnswer,
    /// The answer to a form does not fit the form's schema: each field and what the schema asks
    /// of it (never the value sent).
    UnfitAnswer(crate::schema::ParameterErrors),
    /// The client declined to answer (its model or its roots).
    Declined,
    /// No answer came in time.
    TimedOut,
    /// The call was cancelled while it waited.
    Cancelled,
    /// The state the exchange needs could not be read or written; it may work later.
    Unavailable(String),
    /// The server is not set up for it (no durable state, no URL to be answered at): trying
    /// again does not help until its operator sets it up; the detail names the setting.
    NotSetUp(String),
    /// The caller holds as many of `what` (`"subscriptions"`) as it may: one of them ending
    /// makes room, asking again at once does not.
    Full {
        /// What the caller holds its whole share of.
        what: &'static str,
    },
    /// The call is still waiting and its executor's time is up: the queue hands the call
    /// over again later (a Lambda worker's deadline); never seen by a local call.
    Parked,
}

impl fmt::Display for TalkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotCarried { what, protocol } => {
                write!(f, "{protocol} cannot carry {what}")
            }
            Self::Invalid(why) => write!(f, "invalid request: {why}"),
            Self::InvalidAnswer => f.write_str("the answer is not one of the choices"),
            Self::UnfitAnswer(fields) => {
                f.write_str("the answer does not fit the form:")?;
                for (field, asked) in fields {
                    write!(f, " {field}: {asked};")?;
                }
                Ok(())
            }
            Self::Declined => f.write_str("the client declined to answer"),
            Self::TimedOut => f.write_str("no answer in time"),
            Self::Cancelled => f.write_str("the call was cancelled"),
            Self::Unavailable(why) => write!(f, "unavailable: {why}"),
            Self::NotSetUp(why) => write!(f, "not set up: {why}"),
            Self::Full { what } => write!(f, "the caller holds as many {what} as it may"),
            Self::Parked => f.write_str("parked until the queue hands the call over again"),
        }
    }
}

impl From<TalkError> for ToolError {
    /// The tool error a call ends with when its question or subscription failed; `?` in a
    /// tool does this.
    fn from(e: TalkError) -> Self {
        let developer = e.to_string();
        let error = match &e {
            TalkError::NotCarried { what, protocol } => {
                // What the client offers (its model, its roots) only an MCP client that
                // declares it can give; a question for the user RAP carries too.
                let over = if matches!(*what, ASKING_THE_CLIENTS_MODEL | READING_THE_CLIENTS_ROOTS)
                {
                    "from an MCP client that offers it"
                } else {
                    "over a protocol that can (RAP)"
                };
                ToolError::new(format!(
                    "This tool needs {what}, which the {protocol} protocol cannot carry; call it {over}"
                ))
            }
            TalkError::Declined => {
                ToolError::new("The client declined to answer the tool's request")
            }
            TalkError::Invalid(_) => ToolError::new("The tool asked something it cannot ask"),
            TalkError::InvalidAnswer => ToolError::new(
                "User choice flow failed: the selection is not one of the choices. Please try again.",
            ),
            TalkError::UnfitAnswer(_) => ToolError::new(
                "The answer to the tool's form is not what the form asks for. Please try again.",
            ),
            TalkError::TimedOut => ToolError::new("The user did not answer in time"),
            TalkError::Cancelled => {
                ToolError::new("The call was cancelled while it waited for the user")
            }
            TalkError::Unavailable(_) => {
                ToolError::new("The tool server could not keep the exchange; try again").retryable()
            }
            TalkError::NotSetUp(_) => {
                ToolError::new("The tool server is not set up for what the tool asked")
            }
            TalkError::Parked => ToolError::new("The call is waiting for the user").retryable(),
            TalkError::Full { what } => {
                ToolError::new(format!("You hold as many {what} as you may"))
                    .additional_prompt_content(format!(
                        "Cancel a call that holds one of your {what}, then call this tool again."
                    ))
            }
        };
        let mut error = error.developer_message(developer);
        error.class = match e {
            TalkError::NotCarried { .. } | TalkError::NotSetUp(_) => Some(ErrorClass::Unsupported),
            TalkError::Unavailable(_) => Some(ErrorClass::Unavailable),
            TalkError::Full { .. } => Some(ErrorClass::RateLimited),
            TalkError::Cancelled => Some(ErrorClass::Cancelled),
            TalkError::TimedOut => Some(ErrorClass::Timeout),
            _ => None,
        };
        error
    }
}
