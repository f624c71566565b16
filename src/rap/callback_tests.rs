//! Callback URLs a runtime may name, and those refused (schemes, hosts, addresses).
use super::*;

fn lambda() -> CallbackPolicy {
    CallbackPolicy {
        lambda: true,
        allow_loopback: false,
        ..CallbackPolicy::default()
    }
}

#[test]
fn lambda_requires_https_and_a_public_address() {
    let p = lambda();
    assert!(p.check_url("https://agent.example.com/cb").is_ok());
    assert!(p.check_url("http://agent.example.com/cb").is_err());
    assert!(p.check_url("http://127.0.0.1:9/cb").is_err());
    for refused in [
        "https://127.0.0.1/cb",
        "https://[::1]/cb",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.5/cb",
        "https://172.16.1.1/cb",
        "https://192.168.1.1/cb",
        "https://100.64.0.1/cb",
        "https://0.0.0.0/cb",
        "https://[::ffff:127.0.0.1]/cb",
        "https://[::ffff:169.254.169.254]/cb",
        "https://[fd00::1]/cb",
        "https://[fe80::1]/cb",
        "https://[64:ff9b::a00:1]/cb",
        // IPv4-compatible forms and the local-use NAT64 prefix.
        "https://[::127.0.0.1]/cb",
        "https://[::169.254.169.254]/cb",
        "https://[::10.0.0.1]/cb",
        "https://[64:ff9b:1::5db8:d70e]/cb",
        "ftp://agent.example.com/cb",
        "https://user:pw@agent.example.com/cb",
        "not a url",
    ] {
        assert!(p.check_url(refused).is_err(), "{refused} must be refused");
    }
    assert!(p.check_url("https://93.184.215.14/cb").is_ok());
}

#[test]
fn local_mode_allows_plain_http_to_loopback_only() {
    let p = CallbackPolicy::default();
    assert!(p.check_url("http://127.0.0.1:8081/cb").is_ok());
    assert!(p.check_url("http://localhost:8081/cb").is_ok());
    assert!(p.check_url("http://agent.example.com/cb").is_err());
    assert!(p.check_url("http://192.168.1.1/cb").is_err());
    assert!(p.check_url("https://169.254.169.254/").is_err());
}

#[test]
fn private_targets_need_an_explicit_opt_in_and_link_local_is_never_allowed() {
    let p = CallbackPolicy {
        allow_private: true,
        ..lambda()
    };
    assert!(p.check_url("https://10.0.0.5/cb").is_ok());
    assert!(p.check_url("https://[fd00::1]/cb").is_ok());
    assert!(p.check_url("https://169.254.169.254/").is_err());
    assert!(
        p.check_url("https://[fd00:ec2::254]/latest/meta-data/")
            .is_err(),
        "the IPv6 metadata range stays refused with private targets allowed"
    );
    assert!(
        p.check_url("https://127.0.0.1/cb").is_err(),
        "loopback has a flag of its own"
    );
}

#[test]
fn loopback_needs_a_loopback_server_or_its_own_flag() {
    // A server on ECS, EC2 or Kubernetes (not on loopback, not in Lambda).
    let exposed = CallbackPolicy {
        allow_loopback: false,
        ..CallbackPolicy::default()
    };
    for url in [
        "http://127.0.0.1:15000/quitquitquit",
        "https://[::1]/cb",
        "http://localhost/cb",
    ] {
        assert!(exposed.check_url(url).is_err(), "{url}");
    }
    let flagged = CallbackPolicy {
        allow_loopback: true,
        ..exposed
    };
    assert!(flagged.check_url("http://127.0.0.1:15000/cb").is_ok());
}

#[test]
fn the_allow_list_matches_hosts_and_subdomains() {
    let p = CallbackPolicy {
        allowed_hosts: vec!["agent.example.com".into(), "*.runtime.example".into()],
        ..lambda()
    };
    assert!(p.check_url("https://agent.example.com/cb").is_ok());
    assert!(p.check_url("https://AGENT.example.com/cb").is_ok());
    assert!(p.check_url("https://eu.runtime.example/cb").is_ok());
    assert!(p.check_url("https://runtime.example/cb").is_err());
    assert!(p.check_url("https://evilruntime.example/cb").is_err());
    assert!(
        p.check_url("https://agent.example.com.evil.test/cb")
            .is_err()
    );
}

#[test]
fn a_refusal_shows_at_most_64_characters_of_the_scheme_or_host_it_names() {
    let p = CallbackPolicy {
        allowed_hosts: vec!["agent.example.com".into()],
        ..lambda()
    };
    let long = "a".repeat(1900);
    for url in [format!("{long}://x/cb"), format!("https://{long}.test/cb")] {
        let refused = p.check_url(&url).unwrap_err().to_string();
        assert!(!refused.contains(&"a".repeat(65)), "{refused}");
        assert!(
            refused.contains(&format!("{}…", "a".repeat(64))),
            "{refused}"
        );
    }
}
