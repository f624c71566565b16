//! Transports: how requests reach the app. The same app serves a local TCP port ([`local`]) and
//! the Lambda Runtime API ([`lambda`], feature `lambda-runtime`): SQS batches and direct
//! invocations, each role a value a protocol contributes, and HTTP events (feature `lambda`).

#[cfg(feature = "lambda-runtime")]
pub(crate) mod lambda;
#[cfg(not(feature = "lambda-runtime"))]
#[path = "lambda_off.rs"]
pub(crate) mod lambda;
pub(crate) mod local;
