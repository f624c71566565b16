//! Without the `rap` feature no protocol carries subscriptions: there are none.

use crate::settings::{ConfigError, Env};
use oxp_lambda_core::durable::StateStore;
use std::sync::Arc;

/// Subscriptions that cannot exist in this build.
#[derive(Debug)]
pub(crate) enum Subscriptions {}

/// None.
pub(crate) fn build(
    _store: Option<&Arc<dyn StateStore>>,
    _runner: Option<&Arc<crate::work::Runner>>,
    _env: &Env<'_>,
) -> Result<Option<Arc<Subscriptions>>, ConfigError> {
    Ok(None)
}
