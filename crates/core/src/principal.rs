//! Who is calling, as authentication established it, and the rule that binds the end user of a
//! call to that caller.

use serde::{Deserialize, Serialize};

/// The authenticated caller of a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The `sub` claim (or the authorizer's principal id); `None` without authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Whether the call's user id must equal [`Principal::subject`] (`OXP_BIND_USER_ID`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bind_user_id: bool,
    /// The OAuth scopes the caller's token grants; `None` where authentication reports none
    /// (no authentication: a tool's caller scopes are not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
}

impl Principal {
    /// The scopes of `required` the caller's token does not grant (none when authentication
    /// reports no scopes).
    pub fn missing_scopes<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        let Some(granted) = &self.scopes else {
            return Vec::new();
        };
        required
            .iter()
            .filter(|s| !granted.contains(s))
            .map(String::as_str)
            .collect()
    }

    /// The user a call is made for. With binding on, `user_id` must be the authenticated
    /// subject, and defaults to it; otherwise it is taken as sent.
    pub fn bind_user_id(&self, user_id: Option<String>) -> Result<Option<String>, BindError> {
        if !self.bind_user_id {
            return Ok(user_id);
        }
        let Some(subject) = &self.subject else {
            return Err(BindError::NoSubject);
        };
        match user_id {
            Some(u) if u != *subject => Err(BindError::Mismatch),
            _ => Ok(Some(subject.clone())),
        }
    }
}

impl Principal {
    /// Whose tokens the server may use for a call whose (bound) user id is `user_id`: with
    /// binding on, that id (it is the subject); authenticated without binding, the subject
    /// itself, since a user id the caller merely names must not pick another user's tokens;
    /// without authentication (a local server), the user id as the client sent it.
    pub fn token_owner<'a>(&'a self, user_id: Option<&'a str>) -> Option<&'a str> {
        match &self.subject {
            Some(subject) if !self.bind_user_id => Some(subject.as_str()),
            _ => user_id,
        }
        .filter(|u| !u.is_empty())
    }
}

/// Why a user id cannot be bound to the caller (the binding of `OXP_BIND_USER_ID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindError {
    /// Binding is on but the credentials carry no subject.
    NoSubject,
    /// The user id is not the caller's subject.
    Mismatch,
}

impl BindError {
    /// A message for the user.
    pub fn user_message(self) -> &'static str {
        match self {
            Self::NoSubject => "The caller cannot act for a user",
            Self::Mismatch => "The user ID does not match the authenticated caller",
        }
    }

    /// A message for developers.
    pub fn developer_message(self) -> &'static str {
        match self {
            Self::NoSubject => "OXP_BIND_USER_ID is on but the credentials carry no subject (sub)",
            Self::Mismatch => "the user id must equal the token's sub claim (OXP_BIND_USER_ID)",
        }
    }
}
