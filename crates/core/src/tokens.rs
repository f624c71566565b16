//! Users' tokens the server holds: when a tool needs a provider's token and the caller sent
//! none, the invoker asks the server's [`UserTokens`] for the token of the call's user, and
//! without one the call ends as "authorization required" with a [`Challenge`] each protocol
//! puts to the user its own way. The core knows no OAuth and no HTTP: the flow, the vault and
//! the refresh live behind this trait (in `oxp-lambda`'s `oauth` module); the vault itself is a
//! [`TokenStore`] (in memory, or DynamoDB).

use crate::tool::Secret;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

/// A boxed future borrowing its source.
pub type TokenFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a user goes to authorize a provider, and where a client asks whether they did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The provider id (as the tool declared it).
    pub provider: String,
    /// The URL the user opens in a browser.
    pub url: String,
    /// The URL that answers whether the user completed it (`{"authorized": bool}`).
    pub check_url: String,
}

/// Why a held token could not be had (a store or the provider failed). Never holds a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError(pub String);

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TokenError {}

/// What a held token lookup found.
#[derive(Debug)]
pub enum Held {
    /// A token usable now (refreshed if it had to be).
    Token(Secret),
    /// None: the user must authorize, here.
    Authorize(Challenge),
}

/// A user finished (or refused) an authorization: what a call waiting on the user's
/// authorization wakes on ([`UserTokens::when_completed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorized {
    /// The provider.
    pub provider: String,
    /// The user whose token it is.
    pub user: String,
    /// `false`: the user (or the provider) refused; nothing was stored.
    pub granted: bool,
}

/// What is told of each authorization completed ([`UserTokens::when_completed`]).
pub type Completed = std::sync::Arc<dyn Fn(Authorized) -> TokenFuture<'static, ()> + Send + Sync>;

/// The users' tokens the server holds for the providers it runs the OAuth flow for.
pub trait UserTokens: Send + Sync + fmt::Debug {
    /// Whether the server runs the flow for `provider` (no I/O: decided by configuration).
    fn serves(&self, provider: &str) -> bool;

    /// Whether `user` holds a token for `provider` granting at least `scopes` (no refresh):
    /// what a call waiting on the user polls, so it sees an authorization completed in another
    /// process.
    fn holds<'a>(
        &'a self,
        provider: &'a str,
        user: &'a str,
        scopes: &'a [String],
    ) -> TokenFuture<'a, Result<bool, TokenError>>;

    /// Has `hook` told of every authorization completed (or refused) from now on, before the
    /// user's browser is answered: what wakes the calls waiting on the user, in any process.
    fn when_completed(&self, hook: Completed);

    /// The token `user` granted for `provider` with at least `scopes`, refreshed when it is
    /// about to expire; else the challenge that asks the user to authorize.
    fn token<'a>(
        &'a self,
        provider: &'a str,
        user: &'a str,
        scopes: &'a [String],
    ) -> TokenFuture<'a, Result<Held, TokenError>>;

    /// Forgets `user`'s token for `provider` if it is still `refused`, a token the service it
    /// is for refused ([`ToolError::token_refused`](crate::ToolError::token_refused)): a token
    /// that replaced it meanwhile (refreshed, authorized again) stays.
    fn forget_refused<'a>(
        &'a self,
        provider: &'a str,
        user: &'a str,
        refused: &'a Secret,
    ) -> TokenFuture<'a, Result<(), TokenError>>;
}

/// One sealed record of a [`TokenStore`]: opaque bytes (the store never sees a token in clear)
/// and when the store may drop it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// The sealed bytes.
    pub bytes: Vec<u8>,
    /// After this the record is worthless and may be dropped (`None`: kept).
    pub expires: Option<SystemTime>,
}

/// Where users' sealed tokens and spent flow nonces are kept: in memory locally, DynamoDB in
/// Lambda. Keys are opaque strings made by the caller (provider and a hash of the user).
pub trait TokenStore: Send + Sync + fmt::Debug {
    /// The record under `key`, if any and not expired.
    fn get<'a>(&'a self, key: &'a str) -> TokenFuture<'a, Result<Option<Sealed>, TokenError>>;
    /// Stores `record` under `key`, replacing what was there.
    fn put<'a>(&'a self, key: &'a str, record: Sealed) -> TokenFuture<'a, Result<(), TokenError>>;
    /// Removes the record under `key` (nothing if none).
    fn delete<'a>(&'a self, key: &'a str) -> TokenFuture<'a, Result<(), TokenError>>;
    /// Marks the one-time value `nonce` spent until `until`: `true` the first time, `false`
    /// when it was spent before (a replay).
    fn spend<'a>(
        &'a self,
        nonce: &'a str,
        until: SystemTime,
    ) -> TokenFuture<'a, Result<bool, TokenError>>;
}
