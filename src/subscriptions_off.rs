//! Without the `subscriptions` feature there are no subscriptions, and no event source finds
//! any to hand events to.

use crate::settings::{ConfigError, Env};
use oxp_lambda_core::durable::{StateError, StateStore};
use std::sync::Arc;
use std::time::Duration;

/// Subscriptions that cannot exist in this build.
#[derive(Debug)]
pub(crate) enum Subscriptions {}

/// What a publish did (never, here).
#[derive(Debug, Default)]
pub(crate) struct Published {
    pub(crate) accepted: usize,
    pub(crate) full: usize,
}

impl Subscriptions {
    pub(crate) async fn replayed(&self, _: &str, _: &str) -> Result<bool, StateError> {
        match *self {}
    }

    pub(crate) async fn publish(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: &str,
    ) -> Result<Published, StateError> {
        match *self {}
    }

    pub(crate) async fn reserve(&self, _: &str, _: &str, _: Duration) -> Result<bool, StateError> {
        match *self {}
    }

    pub(crate) async fn taken(&self, _: &str, _: &str, _: Duration) -> Result<(), StateError> {
        match *self {}
    }
}

/// None.
pub(crate) fn build(
    _store: Option<&Arc<dyn StateStore>>,
    _runner: Option<&Arc<crate::work::Runner>>,
    _env: &Env<'_>,
) -> Result<Option<Arc<Subscriptions>>, ConfigError> {
    Ok(None)
}
