//! A tool's requirements against what a call supplied: authorization tokens, the user id and
//! secrets (server-held ones loaded through the cache). A token the caller did not send comes
//! from the server's [`UserTokens`] when it runs the provider's flow. The tool then sees
//! exactly the tokens and secrets it declared.

use crate::principal::Principal;
use crate::refusal::Missing;
use crate::registry::RegisteredTool;
use crate::secrets::{Secrets, SecretsRejection};
use crate::tokens::{Held, UserTokens};
use crate::tool::Secret;
use std::collections::HashMap;

/// Tokens and secrets by id, exactly those the tool declared, and the tokens among them the
/// server held (not the caller's), by provider.
type Granted = (
    HashMap<String, Secret>,
    HashMap<String, Secret>,
    Option<Box<Vaulted>>,
);

/// The tokens of a call the server held for its user (`owner`), by provider: what it forgets
/// when the service refuses one. None for most calls (boxed: the call's future carries a
/// pointer, and no allocation without it).
pub(super) struct Vaulted {
    pub(super) owner: String,
    pub(super) tokens: Vec<(String, Secret)>,
}

/// What the server holds for a call: its secrets and, when it runs OAuth flows, users' tokens.
pub(super) struct Holdings<'a> {
    pub(super) secrets: &'a Secrets,
    pub(super) tokens: Option<&'a dyn UserTokens>,
}

/// Checks `tool`'s requirements against what the call supplied and loads the server-held
/// secrets and tokens it needs.
pub(super) async fn check(
    tool: &RegisteredTool,
    principal: &Principal,
    user_id: Option<&str>,
    mut offered: Vec<(String, Secret)>,
    client_secrets: Vec<(String, Secret)>,
    held: Holdings<'_>,
) -> Result<Granted, Missing> {
    let required = &tool.requirements;
    let lacking = principal.missing_scopes(&required.caller_scopes);
    if !lacking.is_empty() {
        return Err(Missing::CallerScopes(required.caller_scopes.clone()));
    }
    if required.user_id && user_id.is_none_or(str::is_empty) {
        return Err(Missing::UserId);
    }
    let mut authorization = HashMap::with_capacity(required.authorization.len());
    let mut vaulted: Option<Box<Vaulted>> = None;
    for provider in &required.authorization {
        let sent = offered
            .iter()
            .position(|(id, token)| *id == provider.id && !token.expose().is_empty());
        if let Some(i) = sent {
            let (id, token) = offered.swap_remove(i);
            authorization.insert(id, token);
            continue;
        }
        let missing = || Missing::Authorization {
            provider: provider.id.clone(),
            challenge: None,
        };
        let tokens = held
            .tokens
            .filter(|t| t.serves(&provider.id))
            .ok_or_else(missing)?;
        // The server's tokens belong to a user: without one it cannot tell whose to use.
        let owner = principal.token_owner(user_id).ok_or(Missing::UserId)?;
        match tokens.token(&provider.id, owner, &provider.scopes).await {
            Ok(Held::Token(token)) => {
                let vaulted = vaulted.get_or_insert_with(|| {
                    let (owner, tokens) = (owner.to_owned(), Vec::new());
                    Box::new(Vaulted { owner, tokens })
                });
                vaulted.tokens.push((provider.id.clone(), token.clone()));
                authorization.insert(provider.id.clone(), token);
            }
            Ok(Held::Authorize(challenge)) => {
                return Err(Missing::Authorization {
                    provider: provider.id.clone(),
                    challenge: Some(Box::new(challenge)),
                });
            }
            Err(e) => return Err(Missing::TokenUnavailable(provider.id.clone(), e)),
        }
    }
    if required.secrets.is_empty() {
        return Ok((authorization, HashMap::new(), vaulted));
    }
    let values = held
        .secrets
        .resolve(&required.secrets, client_secrets)
        .await
        .map_err(|r| match r {
            SecretsRejection::Missing {
                id,
                refused_from_client,
            } => Missing::Secret(id, refused_from_client),
            SecretsRejection::Source(e) => Missing::Unavailable(e),
        })?;
    Ok((authorization, values, vaulted))
}
