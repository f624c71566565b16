//! Without the `lambda-runtime` feature no request comes from a Lambda event.

/// HTTP events: none in this build.
pub(crate) mod http {
    /// Whether `request` was made from a Lambda event: never.
    pub(crate) fn prepare<B>(
        _request: &mut http::Request<B>,
        _margin: std::time::Duration,
    ) -> bool {
        false
    }
}
