//! Transports: how requests reach the app. The same app serves a local TCP port ([`local`]) and
//! the Lambda Runtime API ([`lambda`], feature `lambda`): HTTP events, SQS batches of async
//! invocations, and direct invocations.

#[cfg(feature = "lambda")]
pub(crate) mod lambda;
pub(crate) mod local;
