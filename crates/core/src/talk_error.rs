//! Why a question or a subscription did not go through ([`TalkError`]); the tool error a call
//! ends with when one did not (`?` in a tool) is `tool_error.rs`'s conversion.

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
