//! Without the `aws-secrets` feature there is no AWS Secrets Manager source.

use crate::aws::SharedSdk;
use crate::secrets::SecretsConfig;
use oxp_lambda_core::secrets::SecretSource;
use std::sync::Arc;

/// Refuses: `OXP_SECRETS_SOURCE=aws` needs the feature.
pub(crate) fn source(
    _sdk: &SharedSdk,
    _config: &SecretsConfig,
) -> Result<Arc<dyn SecretSource>, String> {
    Err("OXP_SECRETS_SOURCE=aws needs the `aws-secrets` feature of oxp-lambda".into())
}
