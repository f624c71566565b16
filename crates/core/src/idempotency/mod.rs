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

/// The fingerprint of a call (JSON objects serialize with sorted keys and numbers by their
/// value, so equal inputs give equal fingerprints; credentials are hashed in id order).
pub(crate) fn fingerprint(call: &Fingerprinted<'_>) -> String {
    let mut hash = Sha256::new();
    hash.update(call.tool_id.as_bytes());
    hash.update([0]);
    hash.update(call.user_id.unwrap_or("").as_bytes());
    hash.update([0]);
    // Written into the hash as it is serialized: no copy of the input in between.
    let mut input = serde_json::Serializer::with_formatter(HashWriter(&mut hash), SameNumbers);
    let _ = call.input.serialize(&mut input);
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

/// Writes a number as its value, whatever its spelling: an integral float as the integer it is
/// (`1.0` and `1e0` as `1`, `-0.0` as `0`), as RFC 8785 and JSON Schema compare numbers. A client
/// (or a gateway on its way) that sends a repeat with `1.0` where it first sent `1` repeats the
/// call; it was "a different call" before.
struct SameNumbers;

impl serde_json::ser::Formatter for SameNumbers {
    fn write_f64<W: ?Sized + std::io::Write>(
        &mut self,
        out: &mut W,
        value: f64,
    ) -> std::io::Result<()> {
        // Below 2^53 every integral float is exactly an integer.
        const EXACT: f64 = 9_007_199_254_740_992.0;
        let compact = &mut serde_json::ser::CompactFormatter;
        if value.fract() == 0.0 && value.abs() < EXACT {
            #[allow(clippy::cast_possible_truncation)]
            return compact.write_i64(out, value as i64);
        }
        compact.write_f64(out, value)
    }
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
mod tests;
