//! Without the `dynamodb` feature the token vault lives in memory only.

use oxp_lambda_core::tokens::TokenStore;
use std::sync::Arc;

/// Refuses: `OXP_OAUTH_TABLE` needs the feature.
pub(crate) fn vault(
    _sdk: &crate::aws::SharedSdk,
    _table: String,
) -> Result<Arc<dyn TokenStore>, String> {
    Err("OXP_OAUTH_TABLE needs the `dynamodb` feature of oxp-lambda".into())
}
