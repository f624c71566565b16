//! Questions for the user at MCP 2026-07-28: multi round-trip requests (the revision's
//! `basic/patterns/mrtr` page). A tool's `ctx.ask` cannot wait on a stateless request, so the
//! call answers `resultType: "input_required"` with an `elicitation/create` form naming the
//! choices, and a `requestState`; the client asks its user and calls again with the answer in
//! `inputResponses` and the state echoed. The tool then runs again from its start, and each
//! question it asked before is answered at once from the state, in order; a new question is the
//! next round.
//!
//! The state is sealed (HMAC-SHA256, rmcp's `RequestStateCodec`) under a key every execution
//! environment shares (the server-held secret `MCP_STATE_KEY`; locally a key of the process when
//! it is not held), bound to the caller, the tool and its arguments, expiring after
//! [`STATE_TTL`], and used once (its nonce is spent in the state store when there is one:
//! `spent.rs`, with the caller's share of such marks): a forged, altered, expired, foreign or replayed state is refused and runs nothing.
//!
//! [`Round`] is a call's way of asking at this revision: its exchange, and what the call's end
//! becomes when it is not the tool's result.

use super::declared::Offers;
pub(crate) use super::exchange::Exchange;
use super::questions::{Answers, Carried, MAX_ASKS, read_response, refused, request_of};
use super::task::Tasks;
use crate::server::CallContext;
use crate::state::share::Share;
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::idempotency::lower_hex;
use oxp_lambda_core::invoke::{Outcome, Rejection};
use oxp_lambda_core::secrets::Secrets;
use rmcp::ErrorData;
use rmcp::model::CallToolResponse;
use rmcp::model::{InputRequests, InputRequiredResult, InputResponses};
use rmcp::model::{RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;

/// How long a `requestState` is good for.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(600);
/// The secret whose value keys the states (shared by every execution environment).
pub(crate) const KEY_SECRET_ID: &str = "MCP_STATE_KEY";
/// Longest `requestState` read.
const MAX_STATE_CHARS: usize = 16 * 1024;
/// Where an earlier version kept a local server's own sealing key, in the state store: removed
/// when the key file takes over (the database must not hold the key that seals its questions).
const OLD_KEY: &str = "mcp-state-key";
/// The length of a sealing key, and the least a held `MCP_STATE_KEY` may have.
pub(crate) const KEY_BYTES: usize = 32;
/// The round trips of one server: the sealing key, and where spent states are marked.
pub(crate) struct RoundTrips {
    secrets: Secrets,
    /// In Lambda the key must be the shared secret: a process's own key would not open a state
    /// in another execution environment.
    key_required: bool,
    codec: OnceCell<RequestStateCodec>,
    /// The one question service (over the state store, where spent states are marked too).
    questions: Option<Arc<crate::work::Questions>>,
    /// Where a local server keeps its own key, when it holds no `MCP_STATE_KEY`
    /// ([`crate::state::key_file`]); `None`: a key of the process, gone with it.
    key_file: Option<std::path::PathBuf>,
    /// Whether a handshake client's questions may go on the call's stream: the answer reaches
    /// the client as it is written (locally; in Lambda only with response streaming).
    pub(super) on_stream: bool,
    /// Each caller's share of the spent marks kept in the store, across every process sharing
    /// it (`OXP_MCP_SPENT_MARKS_PER_CALLER`: a slot per mark, held as long as the mark).
    marks: Option<Share>,
}

impl std::fmt::Debug for RoundTrips {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundTrips")
            .field("key_required", &self.key_required)
            .field("single_use", &self.questions.is_some())
            .finish_non_exhaustive()
    }
}

/// What a state carries (signed, not encrypted: it holds no secret).
#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    /// The answers so far, by question, as the client's `ElicitResult`s (`action`, and the
    /// accepted `content`).
    a: Answers,
    /// The questions the round left open, by number: this retry's responses answer these
    /// (under their keys) and no other. Empty in a state sealed before several questions could
    /// be open at once: then the first one without an answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    o: Vec<u32>,
    /// Spent once used.
    n: String,
}

impl RoundTrips {
    pub(crate) fn new(
        secrets: Secrets,
        key_required: bool,
        questions: Option<Arc<crate::work::Questions>>,
    ) -> Self {
        Self {
            secrets,
            key_required,
            codec: OnceCell::new(),
            questions,
            key_file: None,
            on_stream: false,
            marks: None,
        }
    }

    /// Keeps the server's own sealing key in `file` (see [`crate::state::key_file`]).
    pub(crate) fn with_key_file(mut self, file: Option<std::path::PathBuf>) -> Self {
        self.key_file = file;
        self
    }

    /// The state store (where spent states are marked).
    pub(super) fn store(&self) -> Option<&Arc<dyn StateStore>> {
        self.questions.as_ref().map(|q| q.store())
    }

    /// The one question service (where handshake questions wait).
    pub(super) fn questions(&self) -> Option<&Arc<crate::work::Questions>> {
        self.questions.as_ref()
    }

    /// The sealing key of a server that holds no `MCP_STATE_KEY` (locally): its own, kept in its
    /// key file (0600, apart from the database) so that states and sessions given out before a
    /// restart open after it; a key of the process without one.
    async fn own_key(&self) -> Result<Vec<u8>, String> {
        let mut key = vec![0u8; KEY_BYTES];
        random_fill(&mut key);
        let Some(file) = self.key_file.clone() else {
            return Ok(key);
        };
        let kept = tokio::task::spawn_blocking(move || crate::state::key_in(&file, key))
            .await
            .map_err(|e| e.to_string())??;
        // The key an earlier version kept inside the database goes.
        if let Some(store) = self.store()
            && let Err(e) = store.delete(OLD_KEY, OLD_KEY).await
        {
            tracing::warn!(target: "oxp::mcp", error = %e, "the old sealing key in the state store was not removed");
        }
        Ok(kept)
    }

    pub(super) async fn codec(&self) -> Result<&RequestStateCodec, String> {
        self.codec
            .get_or_try_init(|| async {
                let key: Vec<u8> = if !self.secrets.holds(KEY_SECRET_ID) && !self.key_required {
                    self.own_key().await?
                } else {
                    let secret = self.secrets.get(KEY_SECRET_ID).await.map_err(|e| {
                        tracing::error!(target: "oxp::mcp", error = %e.developer_message(), "{KEY_SECRET_ID} could not be read: no requestState or session is sealed until it is (a secret every server sharing the state holds)");
                        e.developer_message()
                    })?;
                    // An empty or short key would make every state forgeable (a value read
                    // from Secrets Manager is checked here, a local one at start too).
                    if secret.expose().len() < KEY_BYTES {
                        return Err(format!(
                            "{KEY_SECRET_ID} is shorter than {KEY_BYTES} bytes: no requestState is sealed with it"
                        ));
                    }
                    Sha256::new_with_prefix(b"oxp-lambda mcp requestState\0")
                        .chain_update(secret.expose().as_bytes())
                        .finalize()
                        .to_vec()
                };
                RequestStateCodec::try_new(key).map_err(|e| e.to_string())
            })
            .await
    }

    /// The exchange of one `tools/call`: fresh, or continued from the client's retry
    /// (`state`, `responses`), verified against `binding` (the caller, the tool, its
    /// arguments).
    pub(crate) async fn begin(
        &self,
        subject: Option<&str>,
        binding: &[u8],
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<Exchange, ErrorData> {
        // Every response is read now: a malformed one is refused before anything runs. Which
        // question each answers is known only when the tool asks it (by its key); responses to
        // no question are ignored, as anything a server does not recognize ("Error Handling").
        let responses = match responses {
            None => BTreeMap::new(),
            Some(r) if r.len() > MAX_ASKS => return Err(refused("too many input responses")),
            Some(r) => r
                .iter()
                .map(|(key, response)| Ok((key.clone(), read_response(response)?)))
                .collect::<Result<BTreeMap<_, _>, ErrorData>>()?,
        };
        // Answers sent without a state are taken as given (a client may answer before it is
        // asked), except those a round of ours already took: a spent round's answers sent
        // bare would otherwise run it again.
        let Some(state) = state else {
            let responses = self.not_spent(binding, responses).await?;
            return Ok(Exchange::continued(Answers::default(), responses, None));
        };
        if state.len() > MAX_STATE_CHARS {
            return Err(refused("the requestState is too long"));
        }
        let codec = self.codec().await.map_err(|e| {
            tracing::error!(target: "oxp::mcp", error = %e, "requestState key unavailable");
            ErrorData::internal_error("The server cannot read the requestState now", None)
        })?;
        let sealed: Sealed = codec
            .open_json_with(state, binding)
            .map_err(|_| refused("forged, altered, expired, or for another caller or call"))?;
        if sealed.a.slots() > MAX_ASKS || sealed.o.len() > MAX_ASKS {
            return Err(refused("too many answers"));
        }
        // Used once: a replayed retry would run the tool again with the same answers.
        self.spend(subject, binding, &sealed.n, &responses).await?;
        let open = (!sealed.o.is_empty()).then(|| sealed.o.into_iter().collect());
        Ok(Exchange::continued(sealed.a, responses, open))
    }

    /// The `input_required` result for `exchange`'s open questions (every question the run
    /// asked that had no answer), or `None` when it has none.
    pub(crate) async fn input_required(
        &self,
        exchange: &Exchange,
        binding: &[u8],
    ) -> Result<Option<InputRequiredResult>, String> {
        let (answers, asked) = exchange.round();
        if asked.is_empty() {
            return Ok(None);
        }
        // Never a state bound to nothing (a call of a client that takes no question has no
        // binding, and asks nothing).
        if binding.is_empty() {
            return Err("a round without a binding".into());
        }
        let codec = self.codec().await?;
        let sealed = Sealed {
            a: answers,
            o: asked.keys().copied().collect(),
            n: nonce(),
        };
        let state = codec
            .seal_json_with(
                &sealed,
                &SealOptions::new().associated_data(binding).ttl(STATE_TTL),
            )
            .map_err(|e| e.to_string())?;
        let mut requests = InputRequests::new();
        for (seq, question) in &asked {
            requests.insert(question.key(*seq), request_of(question)?);
        }
        let mut result = InputRequiredResult::from_request_state(state);
        result.input_requests = Some(requests);
        Ok(Some(result))
    }
}

fn nonce() -> String {
    let mut bytes = [0u8; 16];
    random_fill(&mut bytes);
    lower_hex(&bytes)
}

/// Random bytes from the operating system (a key, a nonce).
fn random_fill(bytes: &mut [u8]) {
    let uuid = || *uuid::Uuid::new_v4().as_bytes();
    for chunk in bytes.chunks_mut(16) {
        chunk.copy_from_slice(&uuid()[..chunk.len()]);
    }
}

/// What a state is bound to: the caller, the tool and a digest of its arguments.
pub(crate) fn binding(subject: Option<&str>, tool: &str, arguments: &impl Serialize) -> Vec<u8> {
    let mut hash = Sha256::new();
    for part in [subject.unwrap_or_default(), tool] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hash.update(serde_json::to_vec(arguments).unwrap_or_default());
    hash.finalize().to_vec()
}

/// A round the server keeps: the store of rounds, the round's exchange and what its state is
/// bound to.
pub(crate) type Kept<'a> = (&'a RoundTrips, Arc<Carried<Exchange>>, Vec<u8>);

/// A 2026-07-28 call's way of asking its client: `input_required` rounds.
pub(crate) struct Round<'a> {
    /// The round (`None`: the server keeps no rounds, and the tool is asked nothing).
    pub(crate) exchange: Option<Kept<'a>>,
    /// The client opens links for its user (it declared URL-mode elicitation).
    pub(crate) url: bool,
    /// What the task starts from, should the tool detach.
    pub(crate) detaching: Option<(CallContext, Map<String, Value>, Offers)>,
}

impl Round<'_> {
    /// Whether the call's end may be other than the tool's result (`answer`): a question
    /// left open, something the client did not declare, a detach, a link for the user.
    pub(crate) fn may_end(&self, answer: &Result<Outcome, Rejection>) -> bool {
        self.exchange.as_ref().is_some_and(|(_, e, _)| !e.quiet()) || (self.url && answer.is_err())
    }

    /// The call's end, when it is not the tool's result: the next round (a question without an
    /// answer), the -32021 of what the tool needed that its client did not declare, a task
    /// (the tool detached), or the user's authorization as a link to open.
    pub(crate) async fn end(
        self,
        tasks: Option<&Arc<Tasks>>,
        name: &str,
        answer: &Result<Outcome, Rejection>,
    ) -> Result<Option<CallToolResponse>, ErrorData> {
        if let Some((trips, exchange, binding)) = &self.exchange {
            let input_required = trips.input_required(exchange, binding).await.map_err(|e| {
                tracing::error!(target: "oxp::mcp", error = %e, "input_required not built");
                ErrorData::internal_error("The server cannot ask the user now", None)
            })?;
            if let Some(input_required) = input_required {
                return Ok(Some(CallToolResponse::InputRequired(input_required)));
            }
            let missing = exchange.missing();
            if !missing.is_empty() && !answer.as_ref().is_ok_and(|o| o.result.is_ok()) {
                return Err(super::declared::missing_capabilities(&missing));
            }
            if let Some(answers) = exchange.detached()
                && let (Some(tasks), Some((context, arguments, offers))) = (tasks, self.detaching)
            {
                // Boxed where it is awaited: inline, a task's creation made this future (boxed
                // at every 2026-07-28 call, copying it) about 10 KB.
                let created = tasks.create(context, name, arguments, answers, offers);
                let created = Box::pin(created).await?;
                return Ok(Some(CallToolResponse::Task(created)));
            }
        }
        if self.url
            && let Err(rejection) = answer
            && let Some(input_required) = super::result::url_elicitation(rejection)
        {
            return Ok(Some(CallToolResponse::InputRequired(input_required)));
        }
        Ok(None)
    }
}

#[path = "spent.rs"]
mod spent;

#[cfg(test)]
#[path = "round_trip_tests.rs"]
mod tests;
