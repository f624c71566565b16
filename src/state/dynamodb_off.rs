//! Without the `dynamodb` feature there is no DynamoDB state store.

use oxp_lambda_core::durable::StateStore;
use std::sync::Arc;

/// Refuses: `OXP_STATE=dynamodb` needs the feature.
pub(crate) fn store(
    _sdk: &crate::aws::SharedSdk,
    _table: String,
) -> Result<Arc<dyn StateStore>, String> {
    Err("OXP_STATE=dynamodb needs the `dynamodb` feature of oxp-lambda".into())
}
