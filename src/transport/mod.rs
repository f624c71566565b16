//! Transports: how requests reach the app. The same app serves a local TCP port ([`local`]) and
//! the Lambda Runtime API ([`lambda`], feature `lambda`): HTTP events, SQS batches and direct
//! invocations, each role a value a protocol contributes.

#[cfg(feature = "lambda")]
pub(crate) mod lambda;
#[cfg(not(feature = "lambda"))]
#[path = "lambda_off.rs"]
pub(crate) mod lambda;
pub(crate) mod local;
