//! The process's HTTP clients (the AWS SDK's, RAP's callbacks, JWKS, OAuth providers) over one
//! TLS configuration: the system's CA roots read once, by the first client built, rather than
//! by each (1.9 to 4 ms each as measured: docs/performance.md), and HTTP/1.1, the only
//! version they speak.

use std::sync::{Arc, OnceLock};

/// A reqwest client builder over the process's one TLS configuration (reqwest's own, which
/// says why at `build`, when the system's roots cannot be read).
pub(crate) fn builder() -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder();
    match tls() {
        Some(config) => builder.tls_backend_preconfigured(config.clone()),
        None => builder,
    }
}

/// What failed at the bottom of `e` (a connection refused, a timeout, a certificate), at most
/// 200 characters: reqwest's own text is "error sending request" whatever it was. Never the URL.
pub(crate) fn cause(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut cause: &(dyn std::error::Error + 'static) = &e;
    while let Some(source) = cause.source() {
        cause = source;
    }
    oxp_lambda_core::naming::shown_at_most(&cause.to_string(), 200)
}

/// Makes ring the process's default TLS provider, unless the program installed one: what a
/// tool's own rustls or reqwest client (built without a provider of its own) then uses.
/// rustls 0.23.48 deprecates ring's provider for its want of post-quantum key exchange; it
/// stays the default for the smaller package, and a program that wants that exchange installs
/// aws-lc-rs's first (docs/deploy.md says how).
#[allow(deprecated)]
pub(crate) fn install_default_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The TLS configuration, made by its first use: rustls over the process's default provider
/// (ring, [`install_default_provider`], unless the program installed another: aws-lc-rs's
/// FIPS module, say), the platform's verifier (the system's roots), HTTP/1.1 offered, as
/// reqwest makes its own. ring rather than aws-lc-rs by default: the same TLS for a smaller
/// package and a shorter build (docs/performance.md, "Lambda functions").
pub(crate) fn tls() -> Option<&'static rustls::ClientConfig> {
    static TLS: OnceLock<Option<rustls::ClientConfig>> = OnceLock::new();
    TLS.get_or_init(|| {
        install_default_provider();
        configure(rustls::crypto::CryptoProvider::get_default()?.clone())
    })
    .as_ref()
}

fn configure(provider: Arc<rustls::crypto::CryptoProvider>) -> Option<rustls::ClientConfig> {
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone()).ok()?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Some(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_shares_one_tls_configuration_that_offers_http_1_1_only() {
        let (first, second) = (tls().expect("system roots"), tls().expect("system roots"));
        assert!(std::ptr::eq(first, second), "made once");
        assert_eq!(first.alpn_protocols, [b"http/1.1".to_vec()]);
        builder().build().expect("a client over it builds");
    }
}
