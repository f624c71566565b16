//! One classification of everything that keeps a call from a normal result: the invoker's
//! refusals before a tool runs ([`Rejection`]) and the ways a run can fail. Each knows its
//! [`ErrorClass`], whether and when to retry, its message for the user (and the model), and its
//! detail for developers. Adapters only format: the developer detail goes to logs and OXP's
//! `developer_message`, never into text a model reads.

use crate::naming;
use crate::principal::BindError;
use crate::registry_error::{RegistryError, ResolveError};
use crate::schema::ParameterErrors;
use crate::secrets::{SecretError, SecretErrorKind};
use crate::tokens::{Challenge, TokenError};
use std::time::Duration;

pub use crate::class::ErrorClass;

/// What a duplicate of a running call, or a call refused for want of a slot, is told to wait.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// A requirement of the tool that the call does not meet. Names what is missing, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// No token for this authorization provider; with a challenge when the server runs the
    /// provider's flow and the user can authorize there.
    Authorization {
        /// The provider id.
        provider: String,
        /// Where the user authorizes (`None`: the client must send the token).
        challenge: Option<Box<Challenge>>,
    },
    /// The server holds users' tokens for this provider but could not read or refresh one.
    TokenUnavailable(String, TokenError),
    /// No user id.
    UserId,
    /// No value for this secret (`true`: the client sent one but clients may not send secrets).
    Secret(String, bool),
    /// The server holds the secret but could not load it.
    Unavailable(SecretError),
    /// The caller's token does not grant every scope the tool requires of its caller (the
    /// tool's scopes, named: they are the tool's declaration, not the caller's input).
    CallerScopes(Vec<String>),
}

impl Missing {
    /// A message for the user.
    pub fn user_message(&self) -> String {
        match self {
            Self::Authorization {
                provider,
                challenge: None,
            } => format!(
                "This tool requires authorization with '{provider}', which was not provided"
            ),
            Self::Authorization {
                provider,
                challenge: Some(c),
            } => format!(
                "This tool requires authorization with '{provider}'. Open this link to authorize, then call the tool again: {}",
                c.url
            ),
            Self::TokenUnavailable(provider, _) => format!(
                "The authorization with '{provider}' could not be checked right now; try again later"
            ),
            Self::UserId => "This tool requires a user ID, which was not provided".into(),
            Self::Secret(id, _) => {
                format!("This tool requires the secret '{id}', which was not provided")
            }
            Self::Unavailable(e) => e.user_message(),
            Self::CallerScopes(scopes) => format!(
                "This tool requires the caller's token to grant the scopes: {}",
                scopes.join(" ")
            ),
        }
    }

    /// A message for developers: where the value was expected.
    pub(crate) fn developer_message(&self) -> String {
        match self {
            Self::Authorization {
                provider,
                challenge: None,
            } => format!("context.authorization has no token with id '{provider}'"),
            Self::Authorization {
                provider,
                challenge: Some(_),
            } => format!(
                "the server holds no token of this user for '{provider}' (nor did context.authorization carry one): the user must authorize"
            ),
            Self::TokenUnavailable(provider, e) => {
                format!("the token of this user for '{provider}' could not be had: {e}")
            }
            Self::UserId => "context.user_id is required by the tool definition".into(),
            Self::Secret(id, false) => {
                format!("secret '{id}' is neither held by the server nor sent in context.secrets")
            }
            Self::Secret(id, true) => format!(
                "secret '{id}' is not held by the server, and this server does not accept secrets from clients (OXP_CLIENT_SECRETS=never)"
            ),
            Self::Unavailable(e) => e.developer_message(),
            Self::CallerScopes(scopes) => format!(
                "the bearer token lacks a scope the tool declares (caller_scopes: {})",
                scopes.join(" ")
            ),
        }
    }
}

/// Why a call was refused before its tool ran.
#[derive(Debug)]
pub enum Rejection {
    /// The tool selector names no tool.
    Resolve(ResolveError),
    /// The user id cannot be bound to the caller.
    UserBinding(BindError),
    /// A requirement of the tool is not met.
    Missing(Missing),
    /// The input does not fit the tool.
    InvalidInput(ParameterErrors),
    /// The call id was used before for another tool, input or user.
    KeyReused(String),
    /// The idempotency store could not answer.
    Store(crate::idempotency::StoreError),
    /// Every execution slot stayed taken for as long as the call could wait.
    Busy {
        /// The call id (the caller's, or the one generated for the call).
        call_id: String,
        /// The caller's own share was full (`OXP_MAX_CONCURRENT_CALLS_PER_CALLER`), not the
        /// pool every caller shares: the setting an operator would raise differs.
        own_share: bool,
    },
    /// The tool's input schema, compiled at its first call, is not a valid JSON Schema
    /// ([`crate::RegistryBuilder::build`]): the server's fault, refused on every call.
    InvalidSchema(RegistryError),
    /// The caller is over its allowance of calls (`OXP_RATE_LIMIT`); its next comes after
    /// `retry_after`.
    RateLimited {
        /// How long until the caller may call again.
        retry_after: Duration,
    },
}

impl Rejection {
    /// The class.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Resolve(ResolveError::Malformed { .. }) => ErrorClass::InvalidInput,
            Self::Resolve(_) => ErrorClass::NotFound,
            Self::UserBinding(_) => ErrorClass::Unauthorized,
            Self::Missing(Missing::Unavailable(e))
                if matches!(
                    e.kind,
                    SecretErrorKind::Throttled | SecretErrorKind::Unreachable
                ) =>
            {
                ErrorClass::Unavailable
            }
            Self::Missing(Missing::TokenUnavailable(..)) => ErrorClass::Unavailable,
            Self::Missing(Missing::CallerScopes(_)) => ErrorClass::Unauthorized,
            Self::Missing(_) => ErrorClass::MissingRequirement,
            Self::InvalidInput(_) => ErrorClass::InvalidInput,
            Self::KeyReused(_) => ErrorClass::Conflict,
            Self::Store(_) => ErrorClass::Unavailable,
            Self::Busy { .. } => ErrorClass::Busy,
            Self::InvalidSchema(_) => ErrorClass::Internal,
            Self::RateLimited { .. } => ErrorClass::RateLimited,
        }
    }

    /// How long to wait before retrying, for a retryable refusal.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after } => Some(*retry_after),
            _ => self.class().retryable().then_some(RETRY_AFTER),
        }
    }

    /// The message for the user and the model: names ids and kinds, never a value or an
    /// internal detail.
    pub fn user_message(&self) -> String {
        match self {
            Self::Resolve(e) => unresolved(e),
            Self::UserBinding(e) => e.user_message().to_owned(),
            Self::Missing(m) => m.user_message(),
            Self::InvalidInput(_) => "Some input parameters are invalid".into(),
            Self::KeyReused(_) => "This call ID was already used for a different call".into(),
            Self::Store(_) => "The tool server is temporarily unavailable; try again later".into(),
            Self::Busy { .. } => "The tool server is busy; try again shortly".into(),
            Self::InvalidSchema(_) => {
                "This tool cannot be called: its definition is invalid".into()
            }
            Self::RateLimited { .. } => {
                "Too many calls to the tool server; try again after a short wait".into()
            }
        }
    }

    /// The detail for developers and logs (ids and kinds, never a secret or an input value).
    pub fn developer_detail(&self) -> String {
        match self {
            Self::Resolve(e) => e.to_string(),
            Self::UserBinding(e) => e.developer_message().to_owned(),
            Self::Missing(m) => m.developer_message(),
            Self::InvalidInput(errors) => {
                let names: Vec<&str> = errors.keys().map(String::as_str).collect();
                format!("invalid parameters: {}", names.join(", "))
            }
            Self::KeyReused(key) => format!(
                "call_id '{}' was used with another tool, input or user; use a new call_id",
                naming::shown(key)
            ),
            Self::Store(e) => e.to_string(),
            Self::Busy {
                own_share: true, ..
            } => "the caller's own share of the execution slots stayed full within the time limit (OXP_MAX_CONCURRENT_CALLS_PER_CALLER)".into(),
            Self::Busy { .. } => {
                "no free execution slot within the time limit (OXP_MAX_CONCURRENT_CALLS)".into()
            }
            Self::InvalidSchema(e) => e.to_string(),
            Self::RateLimited { .. } => {
                "the caller is over its allowance of calls (OXP_RATE_LIMIT)".into()
            }
        }
    }
}

/// The user-facing message of a tool selector that resolved to nothing: tools are named by
/// their listing name, as every protocol lists them.
fn unresolved(e: &ResolveError) -> String {
    match e {
        ResolveError::Malformed { tool_id, .. } => {
            format!("Tool ID '{}' is not valid", naming::shown(tool_id))
        }
        ResolveError::UnknownTool { name, .. } => {
            format!(
                "Tool '{}' was not found",
                naming::shown(&naming::listing_name(name))
            )
        }
        ResolveError::UnknownVersion { listing_name, .. } => {
            format!("Tool '{listing_name}' was not found")
        }
        ResolveError::NotServed { name } => format!("Tool '{}' was not found", naming::shown(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idempotency::StoreError;

    #[test]
    fn a_store_failure_is_retryable_everywhere_and_its_detail_stays_out_of_the_message() {
        let r = Rejection::Store(StoreError(
            "AccessDeniedException: arn:aws:iam::1:role/x".into(),
        ));
        assert_eq!(r.class(), ErrorClass::Unavailable);
        assert_eq!(r.retry_after(), Some(RETRY_AFTER));
        assert!(!r.user_message().contains("arn:"));
        assert!(r.developer_detail().contains("arn:"));
    }

    #[test]
    fn only_transient_classes_are_retryable() {
        for class in [
            ErrorClass::Busy,
            ErrorClass::RateLimited,
            ErrorClass::Unavailable,
            ErrorClass::Timeout,
        ] {
            assert!(class.retryable(), "{class:?}");
        }
        for class in [
            ErrorClass::NotFound,
            ErrorClass::InvalidInput,
            ErrorClass::MissingRequirement,
            ErrorClass::Unauthorized,
            ErrorClass::Conflict,
            ErrorClass::ToolError,
            ErrorClass::Cancelled,
            ErrorClass::Internal,
            ErrorClass::InvalidOutput,
            ErrorClass::Waiting,
        ] {
            assert!(!class.retryable(), "{class:?}");
        }
    }

    #[test]
    fn an_unknown_version_is_not_found_and_named_by_its_listing_name() {
        let r = Rejection::Resolve(ResolveError::UnknownVersion {
            name: "Calculator.Add".into(),
            listing_name: "Calculator_Add".into(),
            version: semver::Version::new(2, 0, 0),
            available: "1.0.0".into(),
        });
        assert_eq!(r.class(), ErrorClass::NotFound);
        assert_eq!(r.user_message(), "Tool 'Calculator_Add' was not found");
        assert!(r.developer_detail().contains("1.0.0"));
    }
}
