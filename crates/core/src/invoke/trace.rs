//! The caller's W3C trace context (<https://www.w3.org/TR/trace-context/>), as the adapters
//! take it from a `traceparent` header or an MCP request's `_meta`.

/// `value` when it is a W3C `traceparent` (`00-<32 hex trace id>-<16 hex parent id>-<2 hex
/// flags>`, ids not all zero; later versions may append fields after the four), else `None`: what
/// a caller sends is passed on to tools and callbacks only in this shape, never as it came.
pub fn traceparent(value: &str) -> Option<String> {
    let value = value.trim();
    let mut parts = value.split('-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| {
        s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let ok = hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && hex(parent, 16)
        && hex(flags, 2)
        && trace.bytes().any(|b| b != b'0')
        && parent.bytes().any(|b| b != b'0')
        && (version != "00" || parts.next().is_none());
    ok.then(|| format!("{version}-{trace}-{parent}-{flags}"))
}

#[cfg(test)]
mod tests {
    use super::traceparent;

    #[test]
    fn only_a_well_formed_traceparent_is_taken() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(traceparent(good).as_deref(), Some(good));
        assert_eq!(traceparent(&format!(" {good} ")).as_deref(), Some(good));
        // A later version may add fields; only the four known ones are passed on.
        assert_eq!(
            traceparent(&format!("01-{}-extra", &good[3..])).as_deref(),
            Some(&*format!("01-{}", &good[3..]))
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\nforged",
        ] {
            assert_eq!(traceparent(bad), None, "{bad:?}");
        }
    }
}
