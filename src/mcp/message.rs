//! A `/mcp` POST body read once in front of rmcp: its JSON-RPC members, each kept as the text
//! it was sent as. Every step before rmcp's service (a cancellation, a method 2026-07-28
//! removed, a listing, a client's answer to a question, an `initialize` that opens a session,
//! the error of a message rmcp could not read) reads this value, and takes the params it needs
//! typed, with rmcp's wire types, from [`Message::params`]. A plain `tools/call` never comes
//! here: the fast path reads it typed in one pass (`fast.rs`). rmcp's service reads the body
//! again: it takes a request's bytes, not a parsed message.

use rmcp::model::RequestId;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// The members of one JSON-RPC message, as sent.
#[derive(Default)]
pub(super) struct Message<'a> {
    /// `jsonrpc` was `"2.0"`.
    v2: bool,
    id: Option<&'a RawValue>,
    method: Option<Cow<'a, str>>,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    /// The body's length in bytes.
    len: usize,
}

/// Why a body is no message.
#[derive(Debug)]
pub(super) enum Unread {
    /// Not JSON: a syntax error, by line and column (never the text it found).
    NotJson(String),
    /// JSON, but no JSON-RPC message (an array, a number, a member twice).
    NotMessage,
}

impl<'a> Message<'a> {
    /// Reads `body`, once.
    pub(super) fn read(body: &'a [u8]) -> Result<Self, Unread> {
        match serde_json::from_slice::<Message<'a>>(body) {
            Ok(message) => Ok(Message {
                len: body.len(),
                ..message
            }),
            Err(e) if e.is_data() => Err(Unread::NotMessage),
            Err(e) => Err(Unread::NotJson(e.to_string())),
        }
    }

    /// A request (`method` and `id`) or a notification (`method` alone) of JSON-RPC 2.0: its method.
    pub(super) fn method(&self) -> Option<&str> {
        self.v2.then_some(self.method.as_deref()).flatten()
    }

    /// Whether this is a request (not a notification) for `method`.
    pub(super) fn is_request(&self, method: &str) -> bool {
        self.id.is_some() && self.method() == Some(method)
    }

    /// Whether this is a notification (no `id`) of `method`.
    pub(super) fn is_notification(&self, method: &str) -> bool {
        self.id.is_none() && self.method() == Some(method)
    }

    /// A response or error (an `id`, no `method`): a client answering a request of the server.
    pub(super) fn is_answer(&self) -> bool {
        self.v2 && self.method.is_none() && self.id.is_some()
    }

    /// The body's length in bytes.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The `id`, for an error's `id`: `null` without one, or for one that is no request id
    /// (JSON-RPC answers an id it cannot read with `null`; it is never echoed).
    pub(super) fn id_value(&self) -> Value {
        self.id()
            .and_then(|id| serde_json::to_value(id).ok())
            .unwrap_or(Value::Null)
    }

    /// An `id` was sent that is no request id (an object, an array, `null`, a boolean, a
    /// fraction): the message is no valid request.
    pub(super) fn has_unreadable_id(&self) -> bool {
        self.id.is_some() && self.id().is_none()
    }

    /// The `id`, when it is a JSON-RPC request id (a number or a string).
    pub(super) fn id(&self) -> Option<RequestId> {
        serde_json::from_str(self.id?.get()).ok()
    }

    /// The `params`, read as `T` from an object (MCP's params are; by position they are not).
    pub(super) fn params<T: Deserialize<'a>>(&self) -> Option<T> {
        crate::server::object(self.params?.get().as_bytes())
    }

    /// An answer's `result` (`Ok`) or `error` (`Err`); `None` for neither or both.
    pub(super) fn outcome(&self) -> Option<Result<Value, ()>> {
        match (self.result, self.error) {
            (Some(result), None) => serde_json::from_str(result.get()).ok().map(Ok),
            (None, Some(_)) => Some(Err(())),
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Message<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Members)
    }
}

struct Members;

/// A member's value, once: a second of the same name is no message.
fn once<T, E: de::Error>(slot: &mut Option<T>, key: &str, value: T) -> Result<(), E> {
    if slot.replace(value).is_some() {
        return Err(E::custom(format_args!("duplicate member {key}")));
    }
    Ok(())
}

impl<'de> Visitor<'de> for Members {
    type Value = Message<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut message = Message::default();
        let mut version: Option<Text<'de>> = None;
        let mut method: Option<Text<'de>> = None;
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            match &*key {
                "jsonrpc" => once(&mut version, "jsonrpc", map.next_value()?)?,
                "id" => once(&mut message.id, "id", map.next_value()?)?,
                "method" => once(&mut method, "method", map.next_value()?)?,
                "params" => once(&mut message.params, "params", map.next_value()?)?,
                "result" => once(&mut message.result, "result", map.next_value()?)?,
                "error" => once(&mut message.error, "error", map.next_value()?)?,
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        message.v2 = version.is_some_and(|Text(v)| v == "2.0");
        message.method = method.map(|Text(m)| m);
        Ok(message)
    }
}

/// A string of the body, borrowed from it where it has no escape: serde's own `Cow<str>`
/// copies every one, which cost a call's parse an allocation per member name.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Str;
        impl<'de> Visitor<'de> for Str {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
        }
        deserializer.deserialize_str(Str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_with_its_members_as_sent() {
        let body = br#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"X"}}"#;
        let message = Message::read(body).unwrap();
        assert!(message.is_request("tools/call"));
        assert_eq!(message.id(), Some(RequestId::String("a\"b".into())));
        assert_eq!(message.params::<Value>().unwrap()["name"], "X");
        assert_eq!(message.len(), body.len());
    }

    #[test]
    fn member_names_and_the_method_read_the_same_with_escapes_in_them() {
        // Borrowed from the body where they can be, copied where an escape must be undone.
        let body = br#"{"js\u006fnrpc":"2.\u0030","\u0069d":1,"method":"tools\/call"}"#;
        let message = Message::read(body).unwrap();
        assert!(message.is_request("tools/call"));
    }

    #[test]
    fn what_is_no_message_is_told_from_what_is_no_json() {
        assert!(matches!(
            Message::read(b"{not json"),
            Err(Unread::NotJson(_))
        ));
        for body in [&b"[1, 2]"[..], b"42", br#"{"id":1,"id":2}"#] {
            assert!(matches!(Message::read(body), Err(Unread::NotMessage)));
        }
        let v1 = Message::read(br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#).unwrap();
        assert_eq!(v1.method(), None);
        // A member JSON-RPC does not define is rmcp's to judge (the fast path takes none).
        let extra = Message::read(br#"{"jsonrpc":"2.0","id":1,"method":"ping","x":1}"#).unwrap();
        assert!(extra.is_request("ping"));
    }

    #[test]
    fn an_answer_has_an_id_and_no_method() {
        let answer = Message::read(br#"{"jsonrpc":"2.0","id":"t-1","result":{"a":1}}"#).unwrap();
        assert!(answer.is_answer());
        assert_eq!(answer.outcome(), Some(Ok(serde_json::json!({"a": 1}))));
        let error = Message::read(br#"{"jsonrpc":"2.0","id":"t-1","error":{}}"#).unwrap();
        assert_eq!(error.outcome(), Some(Err(())));
        let note = Message::read(br#"{"jsonrpc":"2.0","method":"x"}"#).unwrap();
        assert!(!note.is_answer() && note.is_notification("x"));
    }
}
