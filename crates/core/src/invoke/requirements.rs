//! A tool's requirements against what a call supplied: authorization tokens, the user id and
//! secrets (server-held ones loaded through the cache). The tool then sees exactly the tokens
//! and secrets it declared.

use crate::refusal::Missing;
use crate::registry::RegisteredTool;
use crate::secrets::{Secrets, SecretsRejection};
use crate::tool::Secret;
use std::collections::HashMap;

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
