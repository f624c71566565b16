//! A tool's requirements against what a call supplied: authorization tokens, the user id and
//! secrets (server-held ones loaded through the cache). The tool then sees exactly the tokens
//! and secrets it declared.

use crate::core::registry::RegisteredTool;
use crate::core::secrets::{SecretError, Secrets, SecretsRejection};
use crate::core::tool::Secret;
use std::collections::HashMap;

/// A requirement of the tool that the call does not meet. Names what is missing, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Missing {
    /// No token for this authorization provider.
    Authorization(String),
    /// No user id.
    UserId,
    /// No value for this secret (`true`: the client sent one but clients may not send secrets).
    Secret(String, bool),
    /// The server holds the secret but could not load it.
    Unavailable(SecretError),
}

impl Missing {
    /// A message for the user.
    pub(crate) fn user_message(&self) -> String {
        match self {
            Self::Authorization(id) => {
                format!("This tool requires authorization with '{id}', which was not provided")
            }
            Self::UserId => "This tool requires a user ID, which was not provided".into(),
            Self::Secret(id, _) => {
                format!("This tool requires the secret '{id}', which was not provided")
            }
            Self::Unavailable(e) => e.user_message(),
        }
    }

    /// A message for developers: where the value was expected.
    pub(crate) fn developer_message(&self) -> String {
        match self {
            Self::Authorization(id) => {
                format!("context.authorization has no token with id '{id}'")
            }
            Self::UserId => "context.user_id is required by the tool definition".into(),
            Self::Secret(id, false) => {
                format!("secret '{id}' is neither held by the server nor sent in context.secrets")
            }
            Self::Secret(id, true) => format!(
                "secret '{id}' is not held by the server, and this server does not accept secrets from clients (OXP_CLIENT_SECRETS=never)"
            ),
            Self::Unavailable(e) => e.developer_message(),
        }
    }
}

/// Tokens and secrets by id, exactly those the tool declared.
type Granted = (HashMap<String, Secret>, HashMap<String, Secret>);

/// Checks `tool`'s requirements against what the call supplied and loads the server-held
/// secrets it needs.
pub(super) async fn check(
    tool: &RegisteredTool,
    user_id: Option<&str>,
    mut offered: Vec<(String, Secret)>,
    client_secrets: Vec<(String, Secret)>,
    secrets: &Secrets,
) -> Result<Granted, Missing> {
    let required = &tool.requirements;
    let mut authorization = HashMap::with_capacity(required.authorization.len());
    for provider in &required.authorization {
        let i = offered
            .iter()
            .position(|(id, token)| *id == provider.id && !token.expose().is_empty())
            .ok_or_else(|| Missing::Authorization(provider.id.clone()))?;
        let (id, token) = offered.swap_remove(i);
        authorization.insert(id, token);
    }
    if required.user_id && user_id.is_none_or(str::is_empty) {
        return Err(Missing::UserId);
    }
    if required.secrets.is_empty() {
        return Ok((authorization, HashMap::new()));
    }
    let values = secrets
        .resolve(&required.secrets, client_secrets)
        .await
        .map_err(|r| match r {
            SecretsRejection::Missing {
                id,
                refused_from_client,
            } => Missing::Secret(id, refused_from_client),
            SecretsRejection::Source(e) => Missing::Unavailable(e),
        })?;
    Ok((authorization, values))
}
