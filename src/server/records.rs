//! Roles fed SQS batches (feature `lambda-records`): a protocol's [`RecordHandler`]s as one
//! Lambda role, which the transport's SQS consumer runs.

use super::{LambdaRole, RecordHandler, RoleKind};
use std::sync::Arc;

/// A records role's handlers: each record goes to the first that takes it.
#[derive(Clone)]
pub(crate) struct Records(pub(crate) Vec<Arc<dyn RecordHandler>>);

impl Records {
    /// `other`'s handlers behind these.
    pub(crate) fn join(&mut self, other: Records) {
        self.0.extend(other.0);
    }
}

impl LambdaRole {
    /// `OXP_LAMBDA_ROLE=name`: SQS batches whose records `handler` handles (feature
    /// `lambda-records`).
    pub fn records(name: &'static str, handler: Arc<dyn RecordHandler>) -> Self {
        Self {
            name,
            kind: RoleKind::Records(Records(vec![handler])),
        }
    }
}

/// The role `name` fed records, handled by what `make` makes.
pub(crate) fn records_role(
    name: &'static str,
    make: impl FnOnce() -> Arc<dyn RecordHandler>,
) -> Option<LambdaRole> {
    Some(LambdaRole::records(name, make()))
}
