//! What `scripts/bench` weighs when choosing where an HTTP client's TLS roots come from: the
//! time to build the callback/JWKS client (reqwest with rustls) with the system's roots, as
//! oxp-lambda does at the first request that needs one, against roots compiled into the
//! binary (webpki-roots), and what each client after the first costs now that every client
//! shares one TLS configuration (`src/http_client.rs`: the system's roots read once). Prints
//! `{"system_ms": .., "compiled_in_ms": .., "shared_ms": ..}`, medians of 15 builds each,
//! every build in a fresh process so no cache helps.

use std::process::Command;
use std::time::Instant;

// ring's provider, as src/http_client.rs installs it (deprecated by rustls 0.23.48; it says why).
#[allow(deprecated)]
fn build(which: &str) -> f64 {
    let t = Instant::now();
    let client = if which == "system" {
        reqwest::Client::builder().build()
    } else if which == "shared" {
        // A configuration as src/http_client.rs makes it, made before the clock starts: what a
        // client built after the process's first pays.
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls_platform_verifier::Verifier::new(provider.clone()).expect("roots");
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .dangerous()
            .with_custom_certificate_verifier(std::sync::Arc::new(verifier))
            .with_no_client_auth();
        let t = Instant::now();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(config)
            .build();
        client.expect("the client builds");
        return t.elapsed().as_secs_f64() * 1e3;
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        reqwest::Client::builder()
            .tls_backend_preconfigured(config)
            .build()
    };
    client.expect("the client builds");
    t.elapsed().as_secs_f64() * 1e3
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    if let Some(which) = std::env::args().nth(1) {
        println!("{}", build(&which));
        return;
    }
    let me = std::env::current_exe().expect("own path");
    let time = |which: &str| {
        median(
            (0..15)
                .map(|_| {
                    let out = Command::new(&me).arg(which).output().expect("runs");
                    String::from_utf8_lossy(&out.stdout)
                        .trim()
                        .parse()
                        .expect("a time")
                })
                .collect(),
        )
    };
    println!(
        "{{\"system_ms\": {:.3}, \"compiled_in_ms\": {:.3}, \"shared_ms\": {:.3}}}",
        time("system"),
        time("compiled-in"),
        time("shared")
    );
}
