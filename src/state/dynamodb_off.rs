//! Without the `dynamodb` feature there is no DynamoDB state store.

use oxp_lambda_core::durable::StateStore;
use std::sync::Arc;

/// Refuses: a DynamoDB table needs the feature.
pub(crate) fn store(
    _sdk: &crate::aws::SharedSdk,
    _table: String,
) -> Result<Arc<dyn StateStore>, String> {
    Err("a DynamoDB table needs the `dynamodb` feature of oxp-lambda".into())
}
