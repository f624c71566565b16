//! Without the `http-client` feature the process makes no HTTP client and links no TLS.

/// Nothing to install: no TLS provider is linked.
pub(crate) fn install_default_provider() {}
