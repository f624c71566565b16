//! The marks that make a 2026-07-28 round used once: its state's nonce and each answer it took,
//! spent in the state store for the state's time ([`STATE_TTL`]), each holding a slot of its
//! caller's share (`OXP_MCP_SPENT_MARKS_PER_CALLER`) meanwhile, across every process sharing
//! the store.

use super::{RoundTrips, STATE_TTL, refused};
use crate::state::share::{Full, Share};
use futures_util::future::try_join_all;
use oxp_lambda_core::durable::Item;
use oxp_lambda_core::idempotency::lower_hex;
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// The state store's partition of spent states.
const SPENT: &str = "mcp-state-spent";
/// The prefix of the partitions of callers' shares of spent marks.
const SPENT_OF: &str = "mcp-spent-of";
/// How long a caller found at its share of marks is refused without the share read again.
const FULL_FOR: Duration = Duration::from_secs(1);
/// The JSON-RPC error of a round refused because its caller's marks fill its share (the code
/// of a caller with too many tasks: a server's, for a caller's own load).
const TOO_MANY_ROUNDS: i32 = -32005;

/// The error of a round whose marks found no room in its caller's share (`Full::Caller`), or
/// whose share could not be read: nothing of it runs.
fn not_marked(full: Full) -> ErrorData {
    match full {
        Full::Caller => ErrorData::new(
            ErrorCode(TOO_MANY_ROUNDS),
            "Too many of your rounds were answered lately; try again in a few minutes",
            None,
        ),
        Full::Unavailable(e) => {
            tracing::warn!(target: "oxp::mcp", error = %e, "requestState not marked");
            ErrorData::internal_error("The server cannot check the requestState now", None)
        }
    }
}

impl RoundTrips {
    /// At most `per_caller` marks of spent states and answers one caller's rounds keep at once
    /// (each for [`STATE_TTL`]); past it the caller's next round is refused until they expire.
    pub(crate) fn with_marks_per_caller(mut self, per_caller: u64) -> Self {
        let per_caller = usize::try_from(per_caller).unwrap_or(usize::MAX);
        // A caller at its bound is told so for a second without its share read again: its
        // marks free only as they expire, and each refusal would otherwise list them all.
        let share = || Share::new(SPENT_OF, per_caller).remembering_full(FULL_FOR);
        self.marks = self.questions.is_some().then(share);
        self
    }

    /// Marks state `nonce` and the `responses` it took spent, where there is a store: their
    /// marks take slots of the caller's share first, so past it nothing is marked (and the
    /// round runs nothing); a state spent before marks nothing and gives its slots back, as
    /// does a mark the store did not take.
    pub(super) async fn spend(
        &self,
        subject: Option<&str>,
        binding: &[u8],
        nonce: &str,
        responses: &BTreeMap<String, Value>,
    ) -> Result<(), ErrorData> {
        let Some(store) = self.store() else {
            return Ok(());
        };
        // A state spent before is refused on one read, taking nothing: a replayed state must
        // not cost its caller's share a listing (only one racing its first use gets further,
        // and gives back what it took below).
        let spent = store.get(SPENT, nonce).await;
        if spent.as_ref().is_ok_and(Option::is_some) {
            return Err(refused("this requestState was used before"));
        }
        let until = SystemTime::now() + STATE_TTL;
        let answers = responses.iter().map(|(k, r)| spent_answer(binding, k, r));
        let marks: Vec<String> = std::iter::once(nonce.to_owned()).chain(answers).collect();
        let caller = crate::state::caller_key(subject);
        let slots = match &self.marks {
            Some(share) => share.take_all(&**store, &caller, &marks, Some(until)).await,
            None => Ok(Vec::new()),
        };
        let slots = slots.map_err(not_marked)?;
        let fresh = store
            .put_if(SPENT, nonce, Item::new(Vec::new(), Some(until)), None)
            .await;
        if !matches!(fresh, Ok(true)) {
            // Nothing marked (a state spent before, or the store not answering): the slots
            // taken for the marks go back.
            if let Some(share) = &self.marks {
                let held = slots
                    .iter()
                    .zip(&marks)
                    .map(|(s, m)| (s.as_str(), m.as_str()));
                share.give_back_all(&**store, &caller, held).await;
            }
            return Err(match fresh {
                Err(e) => not_marked(Full::Unavailable(e.0)),
                _ => refused("this requestState was used before"),
            });
        }
        // The answers' marks side by side: a round of 16 answers waits for one write, not 16.
        let answers = marks[1..].iter().map(|mark| {
            let item = Item::new(Vec::new(), Some(until));
            store.put(SPENT, mark, item)
        });
        try_join_all(answers).await.map_err(|e| {
            tracing::warn!(target: "oxp::mcp", error = %e, "answer not marked");
            ErrorData::internal_error("The server cannot check the answers now", None)
        })?;
        Ok(())
    }

    /// `responses` without those a round already took (for this caller, tool and arguments).
    pub(super) async fn not_spent(
        &self,
        binding: &[u8],
        mut responses: BTreeMap<String, Value>,
    ) -> Result<BTreeMap<String, Value>, ErrorData> {
        let Some(store) = self.store() else {
            return Ok(responses);
        };
        let marks = responses.iter().map(|(key, response)| async move {
            let mark = store
                .get(SPENT, &spent_answer(binding, key, response))
                .await?;
            Ok::<_, oxp_lambda_core::durable::StateError>(mark.map(|_| key.clone()))
        });
        let spent = try_join_all(marks).await.map_err(|e| {
            tracing::warn!(target: "oxp::mcp", error = %e, "answers not checked");
            ErrorData::internal_error("The server cannot check the answers now", None)
        })?;
        for key in spent.into_iter().flatten() {
            responses.remove(&key);
        }
        Ok(responses)
    }
}

/// The mark of an answer a round took: its key and (read, so canonical) response, bound to the
/// caller, tool and arguments.
pub(super) fn spent_answer(binding: &[u8], key: &str, response: &Value) -> String {
    let mut digest = Sha256::new_with_prefix(b"oxp-lambda mcp answer\0");
    digest.update((binding.len() as u64).to_be_bytes());
    digest.update(binding);
    digest.update((key.len() as u64).to_be_bytes());
    digest.update(key.as_bytes());
    digest.update(serde_json::to_vec(response).unwrap_or_default());
    format!("answer:{}", lower_hex(&digest.finalize()))
}
