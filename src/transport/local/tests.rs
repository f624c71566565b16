//! The local server's unit tests: the browser guard's rules and HTTP/1.1's `Host` rule.
use super::*;

#[test]
fn the_guard_runs_on_loopback_and_on_any_listener_while_authentication_is_off() {
    let any: std::net::IpAddr = "0.0.0.0".parse().unwrap();
    let loopback: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    assert!(guarded(loopback, false));
    assert!(guarded(loopback, true));
    assert!(
        guarded(any, true),
        "0.0.0.0 with OXP_AUTH=none: DNS rebinding"
    );
    assert!(
        !guarded(any, false),
        "a page cannot send the caller's token"
    );
}

#[test]
fn allowed_hosts_pass_besides_loopback_names() {
    let rules = BrowserRules {
        allowed_hosts: vec!["tools.internal:8080".to_owned()].into(),
        ..BrowserRules::default()
    };
    let with_host = |host: &str| {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, host.parse().unwrap());
        h
    };
    assert!(check_browser(&with_host("localhost:8080"), &rules).is_ok());
    assert!(check_browser(&with_host("TOOLS.internal:8080"), &rules).is_ok());
    assert!(check_browser(&with_host("rebound.example:8080"), &rules).is_err());
    assert!(check_browser(&with_host("tools.internal:9090"), &rules).is_err());
    // An entry without a port takes the name on any port, as rmcp reads OXP_MCP_ALLOWED_HOSTS:
    // `tools.internal` refused `tools.internal:8080`.
    let rules = BrowserRules {
        allowed_hosts: vec!["tools.internal".to_owned()].into(),
        ..BrowserRules::default()
    };
    assert!(check_browser(&with_host("tools.internal:8080"), &rules).is_ok());
    assert!(check_browser(&with_host("tools.internal"), &rules).is_ok());
    assert!(check_browser(&with_host("tools.internal.example:8080"), &rules).is_err());
}

#[test]
fn an_http_1_1_request_carries_one_valid_host_and_none_carries_two() {
    use http::Version;
    let request = |version: Version, target: &str, hosts: &[&str]| {
        let mut request = Request::get(target).version(version).body(()).unwrap();
        for host in hosts {
            let value = host.parse().unwrap();
            request.headers_mut().append(header::HOST, value);
        }
        request
    };
    let host = |mut request: Request<()>| {
        one_host(&mut request, true).map(|()| request.headers()[header::HOST].clone())
    };
    for good in [
        "localhost:8080",
        "127.0.0.1",
        "[::1]:9000",
        "tools.example",
        "",
    ] {
        let sent = request(Version::HTTP_11, "/mcp", &[good]);
        assert_eq!(
            host(sent).ok().as_ref().map(|h| h.as_bytes()),
            Some(good.as_bytes())
        );
    }
    let mut sent = request(Version::HTTP_10, "/mcp", &[]);
    assert!(one_host(&mut sent, true).is_ok(), "HTTP/1.0 needs none");
    for (version, hosts) in [
        (Version::HTTP_11, &[][..]),
        (Version::HTTP_11, &["localhost", "rebound.example"][..]),
        (Version::HTTP_10, &["localhost", "localhost"][..]),
        (Version::HTTP_11, &["user@localhost"][..]),
        (Version::HTTP_11, &["local host"][..]),
        (Version::HTTP_11, &["localhost:port"][..]),
    ] {
        let mut sent = request(version, "/mcp", hosts);
        let refused = one_host(&mut sent, true);
        assert!(matches!(refused, Err(ServerError::BadHost)), "{hosts:?}");
    }
    // An absolute target names the host the request is for, whatever its Host says.
    let sent = request(
        Version::HTTP_11,
        "http://rebound.example/mcp",
        &["localhost"],
    );
    assert_eq!(host(sent).unwrap(), "rebound.example");
    let sent = request(
        Version::HTTP_11,
        "http://user@localhost/mcp",
        &["localhost"],
    );
    assert!(matches!(host(sent), Err(ServerError::BadHost)));
}
