//! Why an app could not start: one error for the start, naming the part at fault.

use std::fmt;

/// Why the app could not start: the part at fault and why (configuration errors name their
/// variable, a protocol's errors name the protocol).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartError {
    /// An `OXP_*` variable has an invalid value.
    Config(crate::config::ConfigError),
    /// The durable state store could not be set up.
    State(String),
    /// The secret source could not be set up.
    Secrets(String),
    /// Authentication could not be set up.
    Auth(String),
    /// The idempotency store could not be set up.
    Idempotency(String),
    /// The users' authorization (OAuth providers, the token vault) could not be set up.
    OAuth(String),
    /// A tool's schema is not a valid JSON Schema (compiled at start unless the process is a
    /// Lambda function started for a waiting call: `RegistryBuilder::build`).
    Tools(oxp_lambda_core::RegistryError),
    /// A protocol (built in, or given to
    /// [`AppBuilder::protocol`](crate::AppBuilder::protocol)) could not be set up.
    Protocol {
        /// Its name ([`Protocol::name`](crate::protocol::Protocol::name)).
        protocol: &'static str,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "{e}"),
            Self::State(why) => write!(f, "invalid configuration: state: {why}"),
            Self::Secrets(why) => write!(f, "invalid configuration: secrets: {why}"),
            Self::Auth(why) => write!(f, "invalid configuration: authentication: {why}"),
            Self::Idempotency(why) => write!(f, "invalid configuration: idempotency: {why}"),
            Self::OAuth(why) => write!(f, "invalid configuration: OAuth: {why}"),
            Self::Tools(e) => write!(f, "invalid tools: {e}"),
            Self::Protocol { protocol, reason } => {
                write!(f, "invalid configuration: {protocol}: {reason}")
            }
        }
    }
}

impl std::error::Error for StartError {}
