//! What the app refuses to start with, whatever the protocols: a tool declaring a secret only
//! the server may hold.

use super::StartError;
use oxp_lambda_core::registry::Registry;

/// The JWT signing key is the server's, never a tool's: a tool declaring a secret of the same
/// id would be handed the key that mints every caller's identity.
pub(super) fn signing_key_kept_from_tools(
    auth: &crate::config::AuthConfig,
    registry: &Registry,
) -> Result<(), StartError> {
    let crate::config::AuthConfig::Jwt(jwt) = auth else {
        return Ok(());
    };
    let crate::config::JwtKeys::Hs256 { secret_id } = &jwt.keys else {
        return Ok(());
    };
    // The local source reads an id from `OXP_SECRET_<ID>` with its case and punctuation folded,
    // so `jwt-key` names the same value as `JWT_KEY` there: compared as the local source sees
    // them.
    let key = crate::secrets::local::env_var_for(secret_id);
    match registry.tools().iter().find(|t| {
        t.requirements
            .secrets
            .iter()
            .any(|id| id == secret_id || crate::secrets::local::env_var_for(id) == key)
    }) {
        Some(tool) => Err(StartError::Auth(format!(
            "tool {} requires secret '{secret_id}', the JWT signing key (OXP_JWT_HS256_SECRET_ID): tools never get it",
            tool.id
        ))),
        None => Ok(()),
    }
}

/// The sealing key and the providers' client secrets are the server's: a tool declaring one
/// would be handed what opens every user's tokens (compared as the local source folds ids).
pub(super) fn oauth_secrets_kept_from_tools(
    oauth: &crate::config::OAuthConfig,
    registry: &Registry,
) -> Result<(), StartError> {
    if oauth.providers.is_empty() {
        return Ok(());
    }
    let fold = crate::secrets::local::env_var_for;
    let kept: Vec<String> = oauth
        .providers
        .iter()
        .map(|p| p.client_secret_id.clone())
        .chain([crate::oauth::KEY_SECRET_ID.to_owned()])
        .collect();
    for tool in registry.tools() {
        if let Some(id) = tool
            .requirements
            .secrets
            .iter()
            .find(|id| kept.iter().any(|k| fold(k) == fold(id)))
        {
            return Err(StartError::OAuth(format!(
                "tool {} requires secret '{id}', which the OAuth flow keeps (OAUTH_KEY, client secrets): tools never get it",
                tool.id
            )));
        }
    }
    Ok(())
}
