//! Without the `dynamodb` feature there is no DynamoDB idempotency store.

use oxp_lambda_core::idempotency::IdempotencyStore;
use std::sync::Arc;

/// Refuses: `OXP_IDEMPOTENCY=dynamodb` needs the feature.
pub(crate) fn store(
    _sdk: &crate::aws::SharedSdk,
    _table: String,
) -> Result<Arc<dyn IdempotencyStore>, String> {
    Err("OXP_IDEMPOTENCY=dynamodb needs the `dynamodb` feature of oxp-lambda".into())
}
