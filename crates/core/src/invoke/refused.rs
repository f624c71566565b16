//! A token the service it is for refused ([`ToolError::token_refused`]): the call ends as a
//! call without the token does, asking the user to authorize again. A token the server held
//! is forgotten first (unless another replaced it meanwhile), so the next call does not hand
//! the tool the same refused token; a caller's own token is the caller's to replace.

use super::requirements::Vaulted;
use super::{Outcome, Rejection};
use crate::refusal::Missing;
use crate::tokens::{Held, UserTokens};

/// Whether `executed` is a tool error naming a refused token (what [`reauthorize`] looks at).
pub(super) fn names_one(executed: &Result<Outcome, Rejection>) -> bool {
    matches!(executed, Ok(Outcome { result: Err(e), .. }) if e.refused_token.is_some())
}

/// `executed` as the call ends: a tool error naming a refused token of a provider its tool
/// declared becomes the authorization its protocol asks the user for; anything else is as it
/// was. `vaulted`: the tokens the server held for the call, and whose.
pub(super) async fn reauthorize(
    executed: Result<Outcome, Rejection>,
    tokens: Option<&dyn UserTokens>,
    vaulted: Option<Box<Vaulted>>,
) -> Result<Outcome, Rejection> {
    let declared = match &executed {
        Ok(Outcome {
            result: Err(error),
            tool,
            ..
        }) => error.refused_token.as_deref().and_then(|provider| {
            (tool.requirements.authorization.iter()).find(|declared| declared.id == provider)
        }),
        _ => None,
    };
    let Some(declared) = declared else {
        return executed;
    };
    let provider = declared.id.clone();
    let held = vaulted.as_deref().and_then(|v| {
        let token = v.tokens.iter().find(|(id, _)| *id == provider)?;
        Some((v.owner.as_str(), &token.1))
    });
    let (Some(tokens), Some((owner, token))) = (tokens, held) else {
        // The caller's token: it sends another, or the server's flow runs for the user.
        return Err(Rejection::Missing(Missing::Authorization {
            provider,
            challenge: None,
        }));
    };
    let unavailable = |e| {
        Err(Rejection::Missing(Missing::TokenUnavailable(
            provider.clone(),
            e,
        )))
    };
    if let Err(e) = tokens.forget_refused(&provider, owner, token).await {
        return unavailable(e);
    }
    match tokens.token(&provider, owner, &declared.scopes).await {
        Ok(Held::Authorize(challenge)) => Err(Rejection::Missing(Missing::Authorization {
            provider,
            challenge: Some(Box::new(challenge)),
        })),
        // Another token replaced the refused one meanwhile: the tool's error stands, and the
        // next call has the new token.
        Ok(Held::Token(_)) => executed,
        Err(e) => unavailable(e),
    }
}

#[cfg(test)]
#[path = "refused_tests.rs"]
mod tests;
