//! A `tools/call`'s `_meta` as the fast path reads it: in the body's one pass, each member it
//! acts on read straight into rmcp's type (what rmcp's accessors on `RequestMetaObject` return),
//! the others only noted. Reading `_meta` into rmcp's map first and decoding each member from it
//! again cost a 2026-07-28 call about 7,000 of its 46,000 instructions (a map of every member,
//! its strings and objects, then a typed copy of each, then dropping both). A member the fast
//! path reads that is there twice or does not decode fails the read, and the request goes to
//! rmcp, which reads it in full: never another answer, only the slower path.

use rmcp::model::{ClientCapabilities, ProgressToken, ProtocolVersion};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::fmt;

/// The revision's members (SEP-2575), as rmcp's accessors name them.
const VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The prefix of the revision's members, those above and any other (a log level, say).
const REVISION: &str = "io.modelcontextprotocol/";

/// What a request's `_meta` says, as far as the fast path takes it.
#[derive(Default)]
pub(super) struct FastMeta {
    /// `io.modelcontextprotocol/protocolVersion`, a revision rmcp knows (read from the body
    /// without a copy: rmcp's own read makes a `String` of it first). One it does not know is
    /// [`FastMeta::other_revision`], which rmcp answers.
    pub(super) version: Option<&'static ProtocolVersion>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub(super) capabilities: Option<ClientCapabilities>,
    /// `io.modelcontextprotocol/clientInfo` was there. Not decoded: nothing here reads it, and
    /// rmcp answers a call alike whatever it holds (`tests/mcp_modern.rs`).
    pub(super) info: bool,
    /// The W3C `traceparent` (SEP-414).
    pub(super) traceparent: Option<String>,
    /// A progress token rmcp would act on (one it cannot read asks for nothing).
    pub(super) progress: bool,
    /// Another of the revision's members (`io.modelcontextprotocol/...`, a log level say).
    pub(super) other_revision: bool,
    /// A member of none of the above (a progress token among them, valid or not) and not a
    /// trace context (`tracestate`, `baggage`): nothing a 2026-07-28 call takes here.
    pub(super) untaken: bool,
}

impl FastMeta {
    /// Whether a handshake revision's call carries per-request metadata rmcp acts on: progress
    /// makes the answer a stream, which rmcp writes; any of 2026-07-28's per-request members,
    /// whatever its value, is rmcp's to read.
    pub(super) fn per_request(&self) -> bool {
        self.progress
            || self.other_revision
            || self.version.is_some()
            || self.capabilities.is_some()
            || self.info
    }
}

/// A member's name, read without keeping it.
enum Key {
    Version,
    Capabilities,
    Info,
    Traceparent,
    /// `tracestate`, `baggage`.
    Trace,
    Progress,
    /// Another member, of the revision's (`true`) or not.
    Other(bool),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Named;
        impl Visitor<'_> for Named {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
                Ok(match name {
                    VERSION => Key::Version,
                    CAPABILITIES => Key::Capabilities,
                    INFO => Key::Info,
                    "traceparent" => Key::Traceparent,
                    "tracestate" | "baggage" => Key::Trace,
                    "progressToken" => Key::Progress,
                    other => Key::Other(other.starts_with(REVISION)),
                })
            }
        }
        deserializer.deserialize_str(Named)
    }
}

impl<'de> Deserialize<'de> for FastMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = FastMeta;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<FastMeta, M::Error> {
                let mut meta = FastMeta::default();
                while let Some(key) = map.next_key()? {
                    match key {
                        Key::Version => {
                            let sent: &str = map.next_value()?;
                            match super::plumbing::version_of(sent.as_bytes()) {
                                Some(known) => once(&mut meta.version, known)?,
                                None => {
                                    meta.other_revision = true;
                                    meta.untaken = true;
                                }
                            }
                        }
                        Key::Capabilities => once(&mut meta.capabilities, map.next_value()?)?,
                        Key::Info => {
                            map.next_value::<IgnoredAny>()?;
                            if std::mem::replace(&mut meta.info, true) {
                                return Err(de::Error::custom("a member twice"));
                            }
                        }
                        Key::Traceparent => once(&mut meta.traceparent, map.next_value()?)?,
                        Key::Trace => drop(map.next_value::<IgnoredAny>()?),
                        Key::Progress => {
                            let token = map.next_value::<serde_json::Value>()?;
                            meta.progress |= ProgressToken::deserialize(&token).is_ok();
                            meta.untaken = true;
                        }
                        Key::Other(revision) => {
                            map.next_value::<IgnoredAny>()?;
                            meta.other_revision |= revision;
                            meta.untaken = true;
                        }
                    }
                }
                Ok(meta)
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// `value` into `slot`, which must be empty: a member read twice is rmcp's to judge.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    match slot.replace(value) {
        None => Ok(()),
        Some(_) => Err(E::custom("a member twice")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::RequestMetaObject;

    /// rmcp writes the revision's members as its accessors read them: read here, they say the
    /// same (the names here are rmcp's, checked).
    #[test]
    fn the_members_rmcp_writes_are_read_here_as_its_accessors_read_them() {
        let capabilities = ClientCapabilities::builder()
            .enable_elicitation()
            .enable_tasks()
            .build();
        let mut written = RequestMetaObject::with_client_context(
            ProtocolVersion::V_2026_07_28,
            rmcp::model::Implementation::new("c", "1"),
            capabilities.clone(),
        );
        written.set_traceparent("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01");
        let json = serde_json::to_string(&written).unwrap();
        let read: FastMeta = serde_json::from_str(&json).unwrap();
        assert_eq!(read.version.cloned(), written.protocol_version());
        assert_eq!(read.capabilities, written.client_capabilities());
        assert_eq!(read.info, written.client_info().is_some());
        assert_eq!(read.traceparent.as_deref(), written.get_traceparent());
        assert!(!read.untaken && !read.progress && !read.other_revision);
        assert!(read.per_request());
    }

    #[test]
    fn a_progress_token_rmcp_reads_asks_for_progress_and_one_it_cannot_read_does_not() {
        let read = |meta: &str| serde_json::from_str::<FastMeta>(meta).unwrap();
        assert!(read(r#"{"progressToken":1}"#).progress);
        assert!(read(r#"{"progressToken":"t"}"#).progress);
        let unreadable = read(r#"{"progressToken":true}"#);
        assert!(!unreadable.progress && unreadable.untaken && !unreadable.per_request());
        let vendor = read(r#"{"com.example/trace":{"a":[1]},"tracestate":"x","baggage":"y"}"#);
        assert!(vendor.untaken && !vendor.per_request());
        let level = read(r#"{"io.modelcontextprotocol/logLevel":"debug"}"#);
        assert!(level.other_revision && level.per_request());
    }

    #[test]
    fn a_version_rmcp_does_not_know_or_written_with_escapes_is_left_to_rmcp() {
        let unknown: FastMeta =
            serde_json::from_str(r#"{"io.modelcontextprotocol/protocolVersion":"2031-01-01"}"#)
                .unwrap();
        assert!(unknown.version.is_none() && unknown.untaken && unknown.per_request());
        let escaped = r#"{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}"#;
        assert!(serde_json::from_str::<FastMeta>(escaped).is_err());
    }

    #[test]
    fn a_member_read_here_twice_or_not_decoding_is_left_to_rmcp() {
        for meta in [
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
            r#"{"io.modelcontextprotocol/clientCapabilities":[]}"#,
            r#"{"traceparent":5}"#,
            r#"[]"#,
        ] {
            assert!(serde_json::from_str::<FastMeta>(meta).is_err(), "{meta}");
        }
    }
}
