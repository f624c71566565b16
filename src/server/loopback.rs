//! Whether a request comes from this machine: loopback `Host` names and the server's own
//! loopback `Origin`, which the local server's browser guard and `/mcp`'s origin check read.

use http::{HeaderMap, HeaderValue, header};

/// `localhost`, a `.localhost` name, 127.0.0.0/8 or `[::1]`, with or without a port.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    // Compared without case rather than lowercased into a copy: every request to the local
    // server is checked, and the copy was an allocation of each.
    let name = name.trim_end_matches('.');
    let bytes = name.as_bytes();
    let suffix = bytes
        .len()
        .checked_sub(b".localhost".len())
        .map(|at| &bytes[at..]);
    name.eq_ignore_ascii_case("localhost")
        || suffix.is_some_and(|s| s.eq_ignore_ascii_case(b".localhost"))
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether the request's `Origin` is the server's own loopback origin (`http://<Host>` with a
/// loopback `Host`): a same-origin request, which no other page can send. A rebound name is not
/// a loopback `Host`, so a page of another site never passes.
pub(crate) fn same_loopback_origin(headers: &HeaderMap) -> bool {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    // `Origin` first: most requests send none, and need no second lookup.
    text(header::ORIGIN).is_some_and(|origin| is_own_loopback_origin(text(header::HOST), origin))
}

/// Whether `origin` is the server's own loopback origin for a request to `host` (see
/// [`same_loopback_origin`], for a caller that read both already).
pub(crate) fn is_own_loopback_origin(host: Option<&str>, origin: &str) -> bool {
    host.is_some_and(|host| {
        is_loopback_host(host)
            && origin
                .strip_prefix("http://")
                .is_some_and(|o| o.eq_ignore_ascii_case(host))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_names_and_addresses_of_this_machine() {
        for host in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:8080",
            "127.1.2.3",
            "[::1]:80",
            "api.localhost",
            "LocalHost:3000",
            "API.LOCALHOST.",
            "[::1]",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example:8080",
            "127.0.0.1.evil.example",
            "[::2]:80",
            "localhost.evil.example",
            "evillocalhost",
            ".localhos",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn only_the_servers_own_loopback_origin_is_same_origin() {
        let headers = |host: &str, origin: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, host.parse().unwrap());
            h.insert(header::ORIGIN, origin.parse().unwrap());
            h
        };
        assert!(same_loopback_origin(&headers(
            "127.0.0.1:8080",
            "http://127.0.0.1:8080"
        )));
        assert!(same_loopback_origin(&headers(
            "localhost:8080",
            "http://localhost:8080"
        )));
        // Another port is another origin; a rebound name is not a loopback host.
        assert!(!same_loopback_origin(&headers(
            "127.0.0.1:8080",
            "http://127.0.0.1:9090"
        )));
        assert!(!same_loopback_origin(&headers(
            "evil.example:8080",
            "http://evil.example:8080"
        )));
        assert!(!same_loopback_origin(&headers(
            "127.0.0.1:8080",
            "https://evil.example"
        )));
    }
}
