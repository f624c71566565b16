//! Which callback URLs results may be sent to (SSRF protection).
//!
//! A callback URL comes from the caller, so an unchecked one would let any caller make the
//! server send requests into its own network (the cloud metadata service at 169.254.169.254,
//! a database on a private address). The rules:
//!
//! - the scheme is `https`; plain `http` only when [`CallbackPolicy::allow_http`] is set, or for
//!   a loopback target (`127.0.0.1`, `[::1]`, `localhost`) where loopback is allowed;
//! - when [`CallbackPolicy::allowed_hosts`] is not empty, the host must match one of its
//!   entries (`api.example.com`, or `*.example.com` for any subdomain);
//! - the target address must be public: loopback only with [`CallbackPolicy::allow_loopback`]
//!   (a server that itself listens on loopback, outside Lambda, or
//!   `OXP_RAP_ALLOW_LOOPBACK_CALLBACKS`: on ECS, EC2 or Kubernetes loopback reaches sidecars'
//!   admin ports), private ranges only with `allow_private`, and link-local (the metadata
//!   service), the IPv6 instance metadata range `fd00:ec2::/32`, unspecified, multicast and
//!   broadcast never.
//!
//! The address rule is checked on the address the connection is made to ([`GuardedResolver`]
//! filters what DNS answers, and literal addresses are checked before sending), so a host
//! name that resolves to a private address, or changes its answer after a first check (DNS
//! rebinding), is refused too.

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// The callback rules; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackPolicy {
    /// Lambda rules (https only, loopback refused) rather than local ones.
    pub lambda: bool,
    /// Host names results may go to; empty means any public host (`OXP_RAP_CALLBACK_HOSTS`).
    pub allowed_hosts: Vec<String>,
    /// Plain `http` callbacks are allowed for every host (`OXP_RAP_ALLOW_HTTP`).
    pub allow_http: bool,
    /// Private targets are allowed (`OXP_RAP_ALLOW_PRIVATE_CALLBACKS`).
    pub allow_private: bool,
    /// Loopback targets are allowed: by default when the server listens on loopback outside
    /// Lambda, else with `OXP_RAP_ALLOW_LOOPBACK_CALLBACKS`.
    pub allow_loopback: bool,
}

/// Why a callback URL or address is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

impl Default for CallbackPolicy {
    /// A local server on loopback: any public host, and loopback.
    fn default() -> Self {
        Self {
            lambda: false,
            allowed_hosts: Vec::new(),
            allow_http: false,
            allow_private: false,
            allow_loopback: true,
        }
    }
}

impl CallbackPolicy {
    /// Checks everything that can be checked without DNS: scheme, host allow-list and, for a
    /// literal address, the address itself.
    pub(crate) fn check_url(&self, url: &str) -> Result<Url, Refused> {
        let parsed = Url::parse(url).map_err(|e| Refused(format!("not a URL: {e}")))?;
        let host = match parsed.host() {
            Some(url::Host::Domain(d)) => Host::Name(d.to_ascii_lowercase()),
            Some(url::Host::Ipv4(ip)) => Host::Ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Host::Ip(IpAddr::V6(ip)),
            None => return Err(Refused("the URL has no host".into())),
        };
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(Refused(
                "credentials in callback URLs are not accepted".into(),
            ));
        }
        match parsed.scheme() {
            "https" => {}
            "http" if self.allow_http => {}
            "http" if self.allow_loopback && host.is_loopback() => {}
            "http" => {
                return Err(Refused(
                    "callback URLs must use https (plain http is allowed only for loopback where loopback is allowed, or with OXP_RAP_ALLOW_HTTP)".into(),
                ));
            }
            other => {
                let other = oxp_lambda_core::naming::shown(other);
                return Err(Refused(format!("scheme '{other}' is not https")));
            }
        }
        if !self.allowed_hosts.is_empty() {
            let name = match &host {
                Host::Name(n) => n.clone(),
                Host::Ip(ip) => ip.to_string(),
            };
            if !self.allowed_hosts.iter().any(|p| host_matches(p, &name)) {
                let name = oxp_lambda_core::naming::shown(&name);
                return Err(Refused(format!(
                    "host '{name}' is not in the callback allow-list (OXP_RAP_CALLBACK_HOSTS)"
                )));
            }
        }
        if let Host::Ip(ip) = host {
            self.check_address(ip)?;
        }
        Ok(parsed)
    }

    /// Whether results may be sent to `ip`.
    pub(crate) fn check_address(&self, ip: IpAddr) -> Result<(), Refused> {
        let ip = canonical(ip);
        let refuse = |what: &str| {
            Err(Refused(format!(
                "{what} address {ip} is not an allowed callback target"
            )))
        };
        if is_never_allowed(ip) {
            return refuse("link-local, metadata, unspecified or multicast");
        }
        if ip.is_loopback() {
            return if self.allow_loopback {
                Ok(())
            } else {
                refuse("loopback")
            };
        }
        if is_private(ip) && !self.allow_private {
            return refuse("private");
        }
        Ok(())
    }

    /// The DNS resolver that enforces [`CallbackPolicy::check_address`] on every answer.
    pub(crate) fn resolver(self: &Arc<Self>) -> GuardedResolver {
        GuardedResolver {
            policy: self.clone(),
        }
    }
}

enum Host {
    Name(String),
    Ip(IpAddr),
}

impl Host {
    fn is_loopback(&self) -> bool {
        match self {
            Host::Name(n) => n == "localhost" || n.ends_with(".localhost"),
            Host::Ip(ip) => canonical(*ip).is_loopback(),
        }
    }
}

fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim().to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(domain) => host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.') && rest.len() > 1),
        None => host == pattern,
    }
}

/// IPv4-mapped (`::ffff:a.b.c.d`) and IPv4-compatible (`::a.b.c.d`, deprecated but still
/// routed by some stacks) IPv6 addresses are judged as the IPv4 address they carry; `::1` and
/// `::` stay what they are.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) if v6.is_loopback() || v6.is_unspecified() => IpAddr::V6(v6),
        IpAddr::V6(v6) => v6.to_ipv4().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

fn is_never_allowed(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_link_local() || v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast()
                // 0.0.0.0/8 ("this network") reaches the local host on Linux.
                || v4.octets()[0] == 0
        }
        IpAddr::V6(v6) => {
            v6.is_unspecified()
                || v6.is_multicast()
                // fe80::/10
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                // fd00:ec2::/32, the instance metadata service over IPv6 (inside fc00::/7,
                // which `allow_private` would otherwise open)
                || v6.segments()[..2] == [0xfd00, 0x0ec2]
        }
    }
}

fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_private()
                // 100.64.0.0/10 shared address space (carrier-grade NAT, some VPC setups).
                || (a == 100 && (64..128).contains(&b))
                // 198.18.0.0/15 benchmarking, 192.0.0.0/24 protocol assignments.
                || (a == 198 && (b == 18 || b == 19))
                || (a == 192 && b == 0 && v4.octets()[2] == 0)
        }
        // fc00::/7 unique local.
        IpAddr::V6(v6) => (v6.segments()[0] & 0xfe00) == 0xfc00 || nat64_private(v6),
    }
}

/// `64:ff9b::a.b.c.d` (NAT64) carrying a private IPv4 address, or any address of the
/// local-use NAT64 prefix `64:ff9b:1::/48` (RFC 8215), which each network maps as it likes.
fn nat64_private(v6: Ipv6Addr) -> bool {
    let s = v6.segments();
    if s[..3] == [0x64, 0xff9b, 1] {
        return true;
    }
    if s[..6] != [0x64, 0xff9b, 0, 0, 0, 0] {
        return false;
    }
    let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    is_private(IpAddr::V4(v4)) || v4.is_loopback() || is_never_allowed(IpAddr::V4(v4))
}

/// A `reqwest` DNS resolver that drops answers [`CallbackPolicy::check_address`] refuses, and
/// fails with [`Refused`] when none is left.
#[derive(Debug, Clone)]
pub(crate) struct GuardedResolver {
    policy: Arc<CallbackPolicy>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let answers: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refusal = None;
            let allowed: Vec<SocketAddr> = answers
                .into_iter()
                .filter(|a| match policy.check_address(a.ip()) {
                    Ok(()) => true,
                    Err(r) => {
                        refusal = Some(r);
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let reason = refusal.map_or_else(
                    || format!("'{host}' has no address"),
                    |r| format!("'{host}' resolves to a refused address: {r}"),
                );
                return Err(Box::new(Refused(reason)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
#[path = "callback_tests.rs"]
mod tests;
