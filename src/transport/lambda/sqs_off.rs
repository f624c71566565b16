//! Without the `lambda-records` feature no role is fed SQS batches (`crate::server::Records` has
//! no value), so there is no consumer: the same API as `sqs.rs`, unreachable.

use super::invocation::InvocationLayer;
use crate::server::Records;

/// Unreachable: no role has records to serve.
pub(crate) async fn run(
    records: Records,
    _layer: InvocationLayer,
) -> Result<(), lambda_runtime::Error> {
    match records {}
}
