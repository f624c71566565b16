//! Without the `embedded-state` feature there is no embedded database.

use oxp_lambda_core::durable::StateStore;
use std::path::PathBuf;
use std::sync::Arc;

/// Refuses: `OXP_STATE=embedded` needs the feature.
pub(crate) fn store_cached(
    _path: Option<PathBuf>,
    _cache_bytes: usize,
) -> Result<Arc<dyn StateStore>, String> {
    Err("OXP_STATE=embedded needs the `embedded-state` feature of oxp-lambda (or set OXP_STATE=off, or OXP_STATE_TABLE)".into())
}
