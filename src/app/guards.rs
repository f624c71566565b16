//! What the app refuses to start with, whatever the protocols: a tool declaring a secret only
//! the server may hold, or a signing key too short to sign with; and what it warns of, a
//! variable that misspells a setting. Secret ids are compared as the local source reads them
//! (`OXP_SECRET_<ID>`, case and punctuation folded), so `demo-webhook-secret` names the same
//! value as `DEMO_WEBHOOK_SECRET`: one rule for every guard.

use super::StartError;
use crate::secrets::local::env_var_for;
use oxp_lambda_core::registry::Registry;
use oxp_lambda_core::secrets::Secrets;

/// Whether ids `a` and `b` name the same server-held secret.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    env_var_for(a) == env_var_for(b)
}

/// Refuses a tool that declares one of the secrets `kept` (`what` says whose they are): it
/// would be handed the server's own key.
pub(crate) fn kept_from_tools(
    registry: &Registry,
    kept: &[&str],
    what: &str,
) -> Result<(), String> {
    for tool in registry.tools() {
        if let Some(id) = tool
            .requirements
            .secrets
            .iter()
            .find(|id| kept.iter().any(|k| same_secret(k, id)))
        {
            return Err(format!(
                "tool {} requires secret '{id}', {what}: tools never get it",
                tool.id
            ));
        }
    }
    Ok(())
}

/// Refuses a signing key the server holds in a variable (read at start) that is empty or
/// shorter than `least` bytes, naming the variable; a key fetched later (Secrets Manager) is
/// checked where it is used.
pub(crate) fn long_enough(secrets: &Secrets, id: &str, least: usize) -> Result<(), String> {
    match secrets.peek(id) {
        Some(value) if value.expose().len() < least => Err(format!(
            "{} is {}: a signing key has at least {least} bytes",
            env_var_for(id),
            if value.expose().is_empty() {
                "empty"
            } else {
                "too short"
            }
        )),
        _ => Ok(()),
    }
}

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
    kept_from_tools(
        registry,
        &[secret_id],
        "the JWT signing key (OXP_JWT_HS256_SECRET_ID)",
    )
    .map_err(StartError::Auth)
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
    let kept: Vec<&str> = oauth
        .providers
        .iter()
        .map(|p| p.client_secret_id.as_str())
        .chain([crate::oauth::KEY_SECRET_ID])
        .collect();
    kept_from_tools(
        registry,
        &kept,
        "which the OAuth flow keeps (OAUTH_KEY, client secrets)",
    )
    .map_err(StartError::OAuth)
}

/// Warns of each `OXP_` variable set that nothing in this server read while it was built and
/// that misspells one it did read (`OXP_TOOL_TIMEOUT` or `OXP_TOOL_TIMEOUT_SECS` for
/// `OXP_TOOL_TIMEOUT_MS`): a setting the operator meant, silently left at its default.
pub(super) fn misspelled_variables(config: &crate::config::Config) {
    for (set, read) in config.vars.misspelled() {
        tracing::warn!(
            variable = set.as_str(),
            read = read.as_str(),
            "set but not read, and named nearly as a variable that is: misspelled, or in another unit? (docs/configuration.md lists them)"
        );
    }
}
