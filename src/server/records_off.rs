//! Without the `lambda-records` feature no role is fed SQS batches: a records role cannot be
//! made (its handlers are of a type with no value), so a build answering direct invocations
//! alone links neither `lambda_runtime`'s loop nor the SQS consumer. The same API as
//! `records.rs`, but `LambdaRole::records`.

use super::{LambdaRole, RecordHandler};
use std::sync::Arc;

/// No records role's handlers: there is none.
#[derive(Clone)]
pub(crate) enum Records {}

impl Records {
    /// Unreachable: there are no handlers to join.
    pub(crate) fn join(&mut self, other: Records) {
        match other {}
    }
}

/// No role fed records: `make` is never called.
pub(crate) fn records_role(
    _name: &'static str,
    _make: impl FnOnce() -> Arc<dyn RecordHandler>,
) -> Option<LambdaRole> {
    None
}
