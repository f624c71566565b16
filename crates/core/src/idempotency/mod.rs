//! Idempotent calls by call id, as the invoker sees them: one small [`IdempotencyStore`] trait
//! (the in-memory store here, [`memory::MemoryStore`]; DynamoDB in `oxp-lambda`), the stored
//! outcome and the call's fingerprint.
//!
//! The first call with a given key claims it (an in-progress record that expires with the
//! call's own time limit, so a crashed invocation does not block the key for long), runs the tool
//! and stores the outcome for a while. A repeat with the same tool, input and user gets the
//! stored outcome without running the tool; a repeat with anything else is refused; a repeat
//! while the first still runs is told to retry later. Retryable failures are not stored.

pub mod memory;
mod shares;

pub use shares::Shares;

use crate::content::{Content, DisplaySegment, ToolOutput};
use crate::tool::ToolError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A boxed future borrowing the store.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The outcome of a call as stored: protocol-neutral, replayed as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredOutcome {
    /// The output on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The failure, when the tool failed (never a retryable one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StoredError>,
    /// The content items beside the value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<Content>,
    /// The display segments beside the value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub display_as: Vec<DisplaySegment>,
    /// Duration of the original run, in milliseconds.
    pub duration_ms: f64,
}

/// A stored [`ToolError`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredError {
    /// User-facing message.
    pub message: String,
    /// Developer message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_message: Option<String>,
    /// Extra prompt content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_prompt_content: Option<String>,
}

impl StoredOutcome {
    /// Captures a tool result for storage.
    pub fn new(result: &Result<ToolOutput<Value>, ToolError>, duration: Duration) -> Self {
        let (value, error, content, display_as) = match result {
            Ok(o) => (
                Some(o.value.clone()),
                None,
                o.content.clone(),
                o.display_as.clone(),
            ),
            Err(e) => (
                None,
                Some(StoredError {
                    message: e.message.clone(),
                    developer_message: e.developer_message.clone(),
                    additional_prompt_content: e.additional_prompt_content.clone(),
                }),
                Vec::new(),
                Vec::new(),
            ),
        };
        Self {
            value,
            error,
            content,
            display_as,
            duration_ms: duration.as_secs_f64() * 1e3,
        }
    }

    /// The stored result.
    pub fn result(&self) -> Result<ToolOutput<Value>, ToolError> {
        match &self.error {
            None => Ok(ToolOutput {
                value: self.value.clone().unwrap_or(Value::Null),
                content: self.content.clone(),
                display_as: self.display_as.clone(),
            }),
            Some(e) => Err(ToolError {
                message: e.message.clone(),
                developer_message: e.developer_message.clone(),
                can_retry: false,
                additional_prompt_content: e.additional_prompt_content.clone(),
                retry_after_ms: None,
                class: None,
                refused_token: None,
            }),
        }
    }
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The key was free (or expired): this call owns it and runs the tool.
    Acquired,
    /// A call with the same fingerprint finished: here is its outcome.
    Completed(StoredOutcome),
    /// A call with the same fingerprint is still running.
    InProgress,
    /// The key was used for a different tool, input or user.
    Conflict,
}

/// The store could not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "idempotency store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// Where claims and outcomes live.
pub trait IdempotencyStore: Send + Sync + fmt::Debug {
    /// Claims `key` for a call with `fingerprint`, holding it in progress for at most `hold`.
    fn claim<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        hold: Duration,
    ) -> StoreFuture<'a, Claim>;
    /// Stores the outcome of the call that claimed `key`, kept for `keep`.
    fn complete<'a>(
        &'a self,
        key: &'a str,
        fingerprint: &'a str,
        outcome: &'a StoredOutcome,
        keep: Duration,
    ) -> StoreFuture<'a, ()>;
    /// Frees `key` without storing anything (the call failed in a retryable way).
    fn release<'a>(&'a self, key: &'a str, fingerprint: &'a str) -> StoreFuture<'a, ()>;
}

/// What a call is, as far as repeating it goes.
pub(crate) struct Fingerprinted<'a> {
    /// The resolved tool id.
    pub(crate) tool_id: &'a str,
    /// The end user.
    pub user_id: Option<&'a str>,
    /// The input.
    pub(crate) input: &'a Value,
    /// Tokens and secrets the client sent, by id: a repeat with other credentials is another
    /// call (the stored outcome was computed with these).
    pub(crate) credentials: &'a [(&'a str, &'a str)],
}

/// The fingerprint of a call (JSON objects serialize with sorted keys, so equal inputs give equal
/// fingerprints; credentials are hashed in id order).
pub(crate) fn fingerprint(call: &Fingerprinted<'_>) -> String {
    let mut hash = Sha256::new();
    hash.update(call.tool_id.as_bytes());
    hash.update([0]);
    hash.update(call.user_id.unwrap_or("").as_bytes());
    hash.update([0]);
    // Written into the hash as it is serialized: no copy of the input in between.
    let _ = serde_json::to_writer(HashWriter(&mut hash), call.input);
    let mut credentials = call.credentials.to_vec();
    credentials.sort_unstable();
    for (id, value) in credentials {
        hash.update([0]);
        hash.update(id.as_bytes());
        hash.update([0]);
        hash.update(value.as_bytes());
    }
    lower_hex(&hash.finalize())
}

/// Lowercase hex of a digest, as every durable key and mark of the server spells it: through
/// `hex`'s table into one buffer. Not `hex::encode`, which collects an iterator of `char`s into
/// its `String` a push at a time: about 1,600 instructions for a SHA-256, on every call with a
/// call id (`call_path/calculator_add_idempotent_new`).
pub fn lower_hex(bytes: &[u8]) -> String {
    let mut text = vec![0; bytes.len() * 2];
    hex::encode_to_slice(bytes, &mut text).expect("the buffer holds two digits per byte");
    String::from_utf8(text).expect("hex digits are ASCII")
}

/// Feeds what is written to a hash.
struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The store key of a call: the caller's call id, in the protocol's key space and the caller's,
/// so that another caller's call id neither replays, collides nor tells whether it exists, and
/// in its `scope` where the protocol has one (RAP: the thread), so that the same id in another
/// thread is another call. Adapters that record more about a call (RAP: that its result was
/// delivered) key it from this.
pub fn scoped_key(
    protocol: &str,
    subject: Option<&str>,
    scope: Option<&str>,
    call_id: &str,
) -> String {
    // Pushed into one buffer: `format!` costs a call with a call id about 500 instructions here.
    let mut key = String::with_capacity(protocol.len() + call_id.len() + 36);
    key.push_str(protocol);
    key.push(':');
    match subject {
        // A fixed word where a caller's 16-hex-digit tag stands: no call id of a caller
        // without a subject can spell another caller's key.
        None => key.push_str("anon"),
        Some(subject) => key.push_str(&lower_hex(&Sha256::digest(subject.as_bytes())[..8])),
    }
    key.push(':');
    // A protocol either scopes every call id or none, so a scope's 16-hex-digit tag is never a
    // prefix of an unscoped id.
    if let Some(scope) = scope {
        key.push_str(&lower_hex(&Sha256::digest(scope.as_bytes())[..8]));
        key.push(':');
    }
    key.push_str(call_id);
    key
}

/// The caller's part of a key [`scoped_key`] made (its second field: a caller's tag, or `anon`),
/// which the in-memory store counts each caller's share by; keys of another form are one caller.
pub fn caller_tag(key: &str) -> &str {
    // A plain scan of the few bytes before the tag's end: `splitn` cost a call about 350
    // instructions, `split_once` (a `memchr` set up twice) about 270.
    let colon = |text: &str| text.bytes().position(|b| b == b':');
    let Some(first) = colon(key) else { return "" };
    let rest = &key[first + 1..];
    colon(rest).map_or("", |end| &rest[..end])
}

/// Idempotency settings of the invoker: where claims live and how long outcomes are kept.
#[derive(Debug, Clone)]
pub struct Idempotency {
    /// The store.
    pub store: Arc<dyn IdempotencyStore>,
    /// How long a stored outcome answers repeats.
    pub keep: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome() -> StoredOutcome {
        StoredOutcome::new(&Ok(json!(15).into()), Duration::from_millis(2))
    }

    fn print(
        tool_id: &str,
        user_id: Option<&str>,
        input: Value,
        credentials: &[(&str, &str)],
    ) -> String {
        fingerprint(&Fingerprinted {
            tool_id,
            user_id,
            input: &input,
            credentials,
        })
    }

    #[test]
    fn a_fingerprint_is_the_sha256_of_its_parts_in_lowercase_hex_as_stores_already_hold_it() {
        // Keys written by earlier versions stay found: the same bytes hashed, the same text.
        let digest = Sha256::digest(b"T@1.0.0\0u\0{\"a\":1}\0KEY\0s");
        let expected: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            print("T@1.0.0", Some("u"), json!({"a": 1}), &[("KEY", "s")]),
            expected
        );
        assert_eq!(lower_hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }

    #[test]
    fn fingerprints_depend_on_tool_user_input_and_credentials_not_key_order() {
        let a = print("T@1.0.0", None, json!({"a": 1, "b": 2}), &[]);
        let reordered = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
        assert_eq!(a, print("T@1.0.0", None, reordered, &[]));
        assert_ne!(a, print("T@1.0.1", None, json!({"a": 1, "b": 2}), &[]));
        assert_ne!(a, print("T@1.0.0", Some("u"), json!({"a": 1, "b": 2}), &[]));
        assert_ne!(a, print("T@1.0.0", None, json!({"a": 1, "b": 3}), &[]));
        let with = print(
            "T@1.0.0",
            None,
            json!({}),
            &[("google", "t1"), ("KEY", "s")],
        );
        assert_eq!(
            with,
            print(
                "T@1.0.0",
                None,
                json!({}),
                &[("KEY", "s"), ("google", "t1")]
            )
        );
        assert_ne!(
            with,
            print(
                "T@1.0.0",
                None,
                json!({}),
                &[("google", "t2"), ("KEY", "s")]
            )
        );
    }

    #[test]
    fn keys_are_scoped_by_protocol_and_caller() {
        assert_eq!(scoped_key("oxp", None, None, "c1"), "oxp:anon:c1");
        assert_ne!(
            scoped_key("oxp", None, None, "c1"),
            scoped_key("rap", None, None, "c1")
        );
        let alice = scoped_key("oxp", Some("alice"), None, "c1");
        assert_ne!(alice, scoped_key("oxp", Some("bob"), None, "c1"));
        assert!(alice.ends_with(":c1") && !alice.contains("alice"));
    }

    #[test]
    fn a_keys_caller_tag_is_its_callers_whatever_the_scope_and_call_id() {
        let alice = caller_tag(&scoped_key("oxp", Some("alice"), None, "c1")).to_owned();
        assert_eq!(alice.len(), 16);
        for key in [
            scoped_key("rap", Some("alice"), Some("thread"), "c:2"),
            scoped_key("mcp", Some("alice"), None, "a:b:c"),
        ] {
            assert_eq!(caller_tag(&key), alice, "{key}");
        }
        assert_ne!(
            caller_tag(&scoped_key("oxp", Some("bob"), None, "c1")),
            alice
        );
        assert_eq!(caller_tag(&scoped_key("oxp", None, None, "c1")), "anon");
        assert_eq!(caller_tag("k1"), caller_tag("k:2"));
    }

    #[test]
    fn a_call_id_in_one_scope_is_another_call_than_the_same_id_in_another() {
        let a = scoped_key("rap", None, Some("thread_A"), "call_1");
        assert_ne!(a, scoped_key("rap", None, Some("thread_B"), "call_1"));
        assert_eq!(a, scoped_key("rap", None, Some("thread_A"), "call_1"));
        assert!(a.ends_with(":call_1") && !a.contains("thread_A"), "{a}");
    }

    #[test]
    fn a_key_is_the_text_stores_already_hold_protocol_caller_tag_scope_tag_and_call_id() {
        // Keys written by earlier versions stay found: each tag the first 8 bytes of the
        // SHA-256 of its text, in lowercase hex, between colons.
        let tag = |text: &str| -> String {
            Sha256::digest(text.as_bytes())[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        assert_eq!(
            scoped_key("oxp", Some("alice"), None, "c1"),
            format!("oxp:{}:c1", tag("alice"))
        );
        assert_eq!(
            scoped_key("rap", Some("alice"), Some("thread_A"), "c1"),
            format!("rap:{}:{}:c1", tag("alice"), tag("thread_A"))
        );
        assert_eq!(
            scoped_key("rap", None, Some("thread_A"), "c1"),
            format!("rap:anon:{}:c1", tag("thread_A"))
        );
    }

    #[test]
    fn a_caller_without_a_subject_cannot_spell_another_callers_key() {
        let alice = scoped_key("oxp", Some("alice"), None, "c1");
        let (_, tagged) = alice.split_once(':').unwrap();
        assert_ne!(scoped_key("oxp", None, None, tagged), alice);
    }

    #[test]
    fn outcomes_round_trip_without_retry_fields() {
        let err = ToolError::new("no").developer_message("d");
        let stored = StoredOutcome::new(&Err(err.clone()), Duration::from_millis(1));
        assert_eq!(stored.result().unwrap_err(), err);
        assert_eq!(outcome().result().unwrap().value, json!(15));
        let rich = ToolOutput::new(json!(1)).content(Content::image(vec![1u8, 2], "image/png"));
        let stored = StoredOutcome::new(&Ok(rich.clone()), Duration::ZERO);
        let json = serde_json::to_string(&stored).unwrap();
        let back: StoredOutcome = serde_json::from_str(&json).unwrap();
        assert_eq!(back.result().unwrap(), rich);
    }
}
