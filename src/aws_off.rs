//! Without the AWS parts (features `aws-secrets`, `dynamodb`, `rap-sqs`) no AWS configuration
//! exists: the parts that would use it refuse at start, naming their feature.

/// The AWS configuration the AWS parts would share: none in this build.
#[derive(Clone, Debug, Default)]
// Braced, as the real one is: `SharedSdk::default()` builds either.
pub(crate) struct SharedSdk {}

impl SharedSdk {
    /// Nothing to load, in Lambda or out.
    pub(crate) fn in_lambda(self, _lambda: bool) -> Self {
        self
    }
}
