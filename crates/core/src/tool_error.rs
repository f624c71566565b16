//! How a tool fails ([`ToolError`]): its message for the user, the detail for developers, the
//! retry guidance, and its class; any `std::error::Error` converts (`?`), and so does a
//! [`TalkError`] (a question or subscription that did not go through).

use crate::class::ErrorClass;
use crate::talk_error::{ASKING_THE_CLIENTS_MODEL, READING_THE_CLIENTS_ROOTS, TalkError};
use std::fmt;
use std::time::Duration;

/// A tool's own failure. It becomes a `success: false` result, never an HTTP error.
///
/// Any `std::error::Error` converts into one, so `?` works on the errors of the crates a tool
/// uses: the user sees a generic message and the error's text is the developer message (logs
/// only). That conversion is why `ToolError` itself does not implement `std::error::Error`,
/// as with `anyhow::Error`. Build one explicitly for a message the user should read.
///
/// ```
/// use oxp_lambda_core::ToolError;
/// use std::time::Duration;
///
/// let err = ToolError::new("Doorbell ID not found")
///     .developer_message("no doorbell 'x'")
///     .retryable()
///     .retry_after(Duration::from_millis(500))
///     .additional_prompt_content("ids: doorbell42,doorbell84");
/// assert!(err.can_retry);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// User-facing message.
    pub message: String,
    /// Detail for developers and logs (never shown to the model).
    pub developer_message: Option<String>,
    /// Whether the caller may retry.
    pub can_retry: bool,
    /// Extra content for the model's retry prompt.
    pub additional_prompt_content: Option<String>,
    /// How long to wait before retrying, in milliseconds.
    pub retry_after_ms: Option<u64>,
    /// The failure's class when it is not the tool's own ([`ErrorClass::ToolError`]): a tool
    /// that asked for something its protocol cannot carry fails as
    /// [`ErrorClass::Unsupported`] ([`TalkError`] converts so).
    pub class: Option<ErrorClass>,
    /// The provider whose token the service it is for refused ([`Self::token_refused`]).
    pub refused_token: Option<String>,
}

impl ToolError {
    /// A non-retryable error with a user-facing message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            developer_message: None,
            can_retry: false,
            additional_prompt_content: None,
            retry_after_ms: None,
            class: None,
            refused_token: None,
        }
    }

    /// The service the token of `provider` is for refused it (the user revoked the access, or
    /// it ended early): for a token the tool declared
    /// ([`ToolBuilder::authorization`](crate::ToolBuilder::authorization)), the call ends as
    /// a call without one does, asking the user to authorize again; the server forgets a token
    /// it held. A provider the tool did not declare leaves this a plain tool error.
    pub fn token_refused(provider: impl Into<String>) -> Self {
        let mut error = Self::new("The authorization was refused; it must be given again");
        error.refused_token = Some(provider.into());
        error
    }

    /// A generic user-facing message with `err` as the developer message.
    pub fn internal(err: impl fmt::Display) -> Self {
        Self::new("The tool failed").developer_message(err.to_string())
    }

    /// Sets the developer message.
    pub fn developer_message(mut self, message: impl Into<String>) -> Self {
        self.developer_message = Some(message.into());
        self
    }

    /// Marks the error as retryable.
    pub fn retryable(mut self) -> Self {
        self.can_retry = true;
        self
    }

    /// Marks the error as retryable after `delay`.
    pub fn retry_after(mut self, delay: Duration) -> Self {
        self.can_retry = true;
        self.retry_after_ms = Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Adds content the client may give the model when it retries.
    pub fn additional_prompt_content(mut self, content: impl Into<String>) -> Self {
        self.additional_prompt_content = Some(content.into());
        self
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(err: E) -> Self {
        Self::internal(err)
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
            TalkError::Parked => Some(ErrorClass::Waiting),
            _ => None,
        };
        error
    }
}
