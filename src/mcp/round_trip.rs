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
//! [`STATE_TTL`], and used once (its nonce is spent in the state store when there is one): a
//! forged, altered, expired, foreign or replayed state is refused and runs nothing.

use oxp_lambda_core::durable::{Item, StateStore};
use oxp_lambda_core::secrets::Secrets;
use oxp_lambda_core::talk::{Ask, Choice, Talk, TalkError, TalkFuture};
use rmcp::ErrorData;
use rmcp::model::{InputRequest, InputRequests, InputRequiredResult, InputResponses};
use rmcp::model::{RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::OnceCell;

/// How long a `requestState` is good for.
pub(crate) const STATE_TTL: Duration = Duration::from_secs(600);
/// The secret whose value keys the states (shared by every execution environment).
pub(crate) const KEY_SECRET_ID: &str = "MCP_STATE_KEY";
/// Longest `requestState` read.
const MAX_STATE_CHARS: usize = 16 * 1024;
/// Most questions one call may ask over its rounds.
const MAX_ASKS: usize = 16;
/// The state store's partition of spent states.
const SPENT: &str = "mcp-state-spent";

/// The round trips of one server: the sealing key, and where spent states are marked.
pub(crate) struct RoundTrips {
    secrets: Secrets,
    /// In Lambda the key must be the shared secret: a process's own key would not open a state
    /// in another execution environment.
    key_required: bool,
    codec: OnceCell<RequestStateCodec>,
    spent: Option<Arc<dyn StateStore>>,
}

impl std::fmt::Debug for RoundTrips {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundTrips")
            .field("key_required", &self.key_required)
            .field("single_use", &self.spent.is_some())
            .finish_non_exhaustive()
    }
}

/// What a state carries (signed, not encrypted: it holds no secret).
#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    /// The answers so far, by question: a choice's label, or `None` when the user declined.
    a: Vec<Option<String>>,
    /// Spent once used.
    n: String,
}

/// Why a retry's state or responses are refused: the client's error, answered as JSON-RPC
/// invalid params, nothing run.
fn refused(why: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("Invalid requestState or inputResponses: {why}"),
        None,
    )
}

impl RoundTrips {
    pub(crate) fn new(
        secrets: Secrets,
        key_required: bool,
        spent: Option<Arc<dyn StateStore>>,
    ) -> Self {
        Self {
            secrets,
            key_required,
            codec: OnceCell::new(),
            spent,
        }
    }

    async fn codec(&self) -> Result<&RequestStateCodec, String> {
        self.codec
            .get_or_try_init(|| async {
                let key: Vec<u8> = if !self.secrets.holds(KEY_SECRET_ID) && !self.key_required {
                    let mut key = vec![0u8; 32];
                    random_fill(&mut key);
                    key
                } else {
                    let secret = self
                        .secrets
                        .get(KEY_SECRET_ID)
                        .await
                        .map_err(|e| e.developer_message())?;
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
        binding: &[u8],
        state: Option<&str>,
        responses: Option<&InputResponses>,
    ) -> Result<Exchange, ErrorData> {
        let Some(state) = state else {
            if responses.is_some_and(|r| !r.is_empty()) {
                return Err(refused(
                    "inputResponses without the requestState they answer",
                ));
            }
            return Ok(Exchange::default());
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
        if sealed.a.len() > MAX_ASKS {
            return Err(refused("too many answers"));
        }
        let mut answers = sealed.a;
        let key = question_key(answers.len());
        match responses.and_then(|r| r.get(&key)) {
            // The client retried without answering: the question is asked again.
            None => {}
            Some(response) => answers.push(read_response(response)?),
        }
        // Used once: a replayed retry would run the tool again with the same answers.
        if let Some(store) = &self.spent {
            let until = Item::new(Vec::new(), Some(SystemTime::now() + STATE_TTL));
            let fresh = store
                .put_if(SPENT, &sealed.n, until, None)
                .await
                .map_err(|e| {
                    tracing::warn!(target: "oxp::mcp", error = %e, "requestState not marked");
                    ErrorData::internal_error("The server cannot check the requestState now", None)
                })?;
            if !fresh {
                return Err(refused("this requestState was used before"));
            }
        }

        Ok(Exchange {
            answers,
            asked: Mutex::default(),
        })
    }

    /// The `input_required` result for `exchange`'s open question, or `None` when it has none.
    pub(crate) async fn input_required(
        &self,
        exchange: &Exchange,
        binding: &[u8],
    ) -> Result<Option<InputRequiredResult>, String> {
        let Some((seq, ask)) = exchange
            .asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return Ok(None);
        };
        let codec = self.codec().await?;
        let sealed = Sealed {
            a: exchange.answers.clone(),
            n: nonce(),
        };
        let state = codec
            .seal_json_with(
                &sealed,
                &SealOptions::new().associated_data(binding).ttl(STATE_TTL),
            )
            .map_err(|e| e.to_string())?;
        let mut requests = InputRequests::new();
        requests.insert(question_key(seq as usize), form(&ask)?);
        let mut result = InputRequiredResult::from_request_state(state);
        result.input_requests = Some(requests);
        Ok(Some(result))
    }
}

/// The `inputRequests` key of question `seq`.
fn question_key(seq: usize) -> String {
    format!("ask_{seq}")
}

/// A single-select form for `ask`: one `choice` property, its labels as the enum.
fn form(ask: &Ask) -> Result<InputRequest, String> {
    let request = json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": ask.prompt,
            "requestedSchema": {
                "type": "object",
                "properties": {"choice": {
                    "type": "string",
                    "title": "Choice",
                    "enum": ask.choices,
                    "default": ask.choices.get(ask.default),
                }},
                "required": ["choice"],
            },
        },
    });
    serde_json::from_value(request).map_err(|e| format!("elicitation request: {e}"))
}

/// The label an `ElicitResult` carries (`None`: declined or cancelled).
fn read_response(response: &Value) -> Result<Option<String>, ErrorData> {
    let object = response
        .as_object()
        .ok_or_else(|| refused("an input response must be an object"))?;
    match object.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let label = object
                .get("content")
                .and_then(Value::as_object)
                .and_then(|c: &Map<String, Value>| c.get("choice"))
                .and_then(Value::as_str)
                .ok_or_else(|| refused("an accepted response carries content.choice"))?;
            if label.chars().count() > 1024 {
                return Err(refused("the choice is too long"));
            }
            Ok(Some(label.to_owned()))
        }
        Some("decline" | "cancel") => Ok(None),
        _ => Err(refused(
            "an input response's action is accept, decline or cancel",
        )),
    }
}

fn nonce() -> String {
    let mut bytes = [0u8; 16];
    random_fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Random bytes from the operating system (a key, a nonce).
fn random_fill(bytes: &mut [u8]) {
    let uuid = || *uuid::Uuid::new_v4().as_bytes();
    for chunk in bytes.chunks_mut(16) {
        chunk.copy_from_slice(&uuid()[..chunk.len()]);
    }
}

/// One call's questions and the answers it came with; the talk-back channel of the call.
#[derive(Debug, Default)]
pub(crate) struct Exchange {
    answers: Vec<Option<String>>,
    /// The question the tool asked that has no answer yet.
    asked: Mutex<Option<(u32, Ask)>>,
}

impl Talk for Exchange {
    fn protocol(&self) -> &'static str {
        "mcp"
    }

    fn ask(&self, ask: Ask, seq: u32) -> TalkFuture<'_, Result<Choice, TalkError>> {
        let answer = match self.answers.get(seq as usize) {
            // Declined or cancelled: the question's default.
            Some(None) => Ok(Choice {
                index: ask.default,
                label: ask.choices[ask.default].clone(),
            }),
            Some(Some(label)) => ask
                .choices
                .iter()
                .position(|c| c == label)
                .map(|index| Choice {
                    index,
                    label: label.clone(),
                })
                .ok_or(TalkError::InvalidAnswer),
            None if seq as usize >= MAX_ASKS => Err(TalkError::Invalid(format!(
                "a call asks at most {MAX_ASKS} questions"
            ))),
            None => {
                *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some((seq, ask));
                // The call ends here; the client's retry carries the answer.
                Err(TalkError::Parked)
            }
        };
        Box::pin(std::future::ready(answer))
    }
}

/// What a state is bound to: the caller, the tool and a digest of its arguments.
pub(crate) fn binding(subject: Option<&str>, tool: &str, arguments: &Value) -> Vec<u8> {
    let mut hash = Sha256::new();
    for part in [subject.unwrap_or_default(), tool] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hash.update(serde_json::to_vec(arguments).unwrap_or_default());
    hash.finalize().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxp_lambda_core::secrets::ClientSecrets;

    fn trips() -> RoundTrips {
        let secrets = Secrets::new(None, Duration::from_secs(60), ClientSecrets::Unheld);
        RoundTrips::new(secrets, false, None)
    }

    fn accept(label: &str) -> InputResponses {
        let mut r = InputResponses::new();
        r.insert(
            "ask_0".into(),
            json!({"action": "accept", "content": {"choice": label}}),
        );
        r
    }

    #[tokio::test]
    async fn a_state_opens_only_for_its_caller_and_call_and_unaltered() {
        let trips = trips();
        let binding = binding(Some("alice"), "Demo_Confirm", &json!({"prompt": "Go?"}));
        let first = Exchange::default();
        let ask = Ask::new("Go?", ["Yes", "No"]);
        assert!(matches!(
            first.ask(ask.clone(), 0).await,
            Err(TalkError::Parked)
        ));
        let result = trips
            .input_required(&first, &binding)
            .await
            .unwrap()
            .unwrap();
        let state = result.request_state.unwrap();
        let answered = trips
            .begin(&binding, Some(&state), Some(&accept("No")))
            .await
            .unwrap();
        assert_eq!(answered.ask(ask.clone(), 0).await.unwrap().index, 1);
        // Another caller, another tool's arguments, an altered state: refused.
        let bob = super::binding(Some("bob"), "Demo_Confirm", &json!({"prompt": "Go?"}));
        assert!(trips.begin(&bob, Some(&state), None).await.is_err());
        let other = super::binding(Some("alice"), "Demo_Confirm", &json!({"prompt": "Stop?"}));
        assert!(trips.begin(&other, Some(&state), None).await.is_err());
        let mut altered = state.clone().into_bytes();
        let middle = altered.len() / 2;
        altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert!(trips.begin(&binding, Some(&altered), None).await.is_err());
        // Responses without a state, a malformed response: refused.
        assert!(
            trips
                .begin(&binding, None, Some(&accept("No")))
                .await
                .is_err()
        );
        let mut bad = InputResponses::new();
        bad.insert("ask_0".into(), json!({"action": "maybe"}));
        assert!(
            trips
                .begin(&binding, Some(&state), Some(&bad))
                .await
                .is_err()
        );
    }
}
