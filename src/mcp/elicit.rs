//! Questions for the client at the handshake revisions (2025-06-18, 2025-11-25), as they have
//! them: `elicitation/create`, `sampling/createMessage` or `roots/list` sent to the client on the
//! call's own stream, the client's answer a POST of its own. A stateless server keeps no
//! session, so two things travel with the client instead, sealed under the `requestState` key
//! (every execution environment opens them):
//!
//! - what its `initialize` declared: a client that declared form elicitation, sampling or roots
//!   gets an `Mcp-Session-Id` carrying that (and a nonce naming it), bound to the caller; a request
//!   without it, or whose id does not open for its caller, is asked nothing (the tool error it
//!   always got);
//! - which call a question belongs to: its request goes out as `<call token>-<n>`
//!   ([`super::call_ids`]), and the question is `<session nonce>:<call token>-<n>` in the one
//!   question service ([`crate::work::questions`]), taken before it is sent and answered once,
//!   by a POST of the same caller's session naming that id; the call reads the answer from the
//!   store, so any execution environment may take the POST.

use super::call_ids::CallToken;
use super::declared::Offers;
use super::handler::Served;
use super::message::Message;
use super::plumbing::subject;
use super::questions::{Carried, Carrier, Question, read_response, request_of};
use super::round_trip::RoundTrips;
use crate::work::questions::{Questions, Waited};
use oxp_lambda_core::invoke::{Outcome, Rejection};
use oxp_lambda_core::talk::{TalkError, TalkFuture};
use rmcp::model::{InputRequest, ProtocolVersion, RequestId, ServerRequest};
use rmcp::service::RequestContext;
use rmcp::service::{Peer, PeerRequestOptions};
use rmcp::{ErrorData, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// The header a session travels in.
pub(crate) const SESSION_HEADER: http::HeaderName = http::HeaderName::from_static("mcp-session-id");
/// How long a session is good for (a client whose session expired is asked nothing).
const SESSION_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a question waits for its answer at most (the call's deadline ends it sooner).
const MAX_WAIT: Duration = Duration::from_secs(600);
/// How long a question is kept unless its call renews it (every third of that): a call that
/// crashed with its server leaves no question behind for long.
const HOLD: Duration = Duration::from_secs(6);
/// Longest `initialize` read for the capabilities it declares.
const MAX_INITIALIZE: usize = 64 * 1024;
/// Longest client answer read.
const MAX_ANSWER: usize = 64 * 1024;
/// The revisions whose clients are asked this way.
const REVISIONS: [ProtocolVersion; 2] =
    [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25];

/// What a session carries: the nonce its questions are named by, and what its client takes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Session {
    n: String,
    /// What the client takes on the call's stream: forms, requests to its model, `roots/list`.
    #[serde(flatten)]
    offers: Offers,
    /// URL mode (2025-11-25): a user's authorization as the revision's -32042 error.
    #[serde(default)]
    u: bool,
}

/// What a session is bound to: the caller.
fn session_binding(subject: Option<&str>) -> Vec<u8> {
    Sha256::new_with_prefix(b"oxp-lambda mcp session\0")
        .chain_update(subject.unwrap_or_default().as_bytes())
        .finalize()
        .to_vec()
}

impl RoundTrips {
    /// A session for a client whose `initialize` (`message`) declared form elicitation at a
    /// handshake revision, for `subject`; `None` for any other message, or without a store.
    pub(super) async fn session_for(
        &self,
        message: &Message<'_>,
        subject: Option<&str>,
    ) -> Option<String> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Params {
            protocol_version: ProtocolVersion,
            capabilities: rmcp::model::ClientCapabilities,
        }
        if message.len() > MAX_INITIALIZE || !message.is_request("initialize") {
            return None;
        }
        let init: Params = message.params()?;
        let capabilities = &init.capabilities;
        // URL mode is 2025-11-25's. Only what this function can carry counts: a form, a
        // request to the model and roots need the stream.
        let version = &init.protocol_version;
        let offers = match self.on_stream {
            true => Offers::of(capabilities),
            false => Offers::default(),
        };
        let url = *version == ProtocolVersion::V_2025_11_25
            && capabilities
                .elicitation
                .as_ref()
                .is_some_and(|modes| modes.url.is_some());
        if !REVISIONS.contains(version) || !(offers.takes_any() || url) {
            return None;
        }
        self.questions()?;
        let codec = self.codec().await.ok()?;
        let session = Session {
            n: uuid::Uuid::new_v4().simple().to_string(),
            offers,
            u: url,
        };
        let binding = session_binding(subject);
        let options = rmcp::model::SealOptions::new()
            .associated_data(&binding)
            .ttl(SESSION_TTL);
        codec.seal_json_with(&session, &options).ok()
    }

    /// The session `token` names, when it opens for `subject`.
    pub(crate) async fn open_session(&self, token: &str, subject: Option<&str>) -> Option<Session> {
        if token.len() > 1024 {
            return None;
        }
        let codec = self.codec().await.ok()?;
        codec.open_json_with(token, &session_binding(subject)).ok()
    }

    /// A client's POST of its answer to a question (`message`, a JSON-RPC response or error)
    /// in `session`: recorded once, for the call that asked it. Whether it answered one.
    pub(super) async fn answered(&self, session: &Session, message: &Message<'_>) -> bool {
        let (Some(questions), Some(id)) = (self.questions(), message.id()) else {
            return false;
        };
        // A client that could not show the question answers an error: the user said nothing.
        let value = match message.outcome() {
            Some(Ok(result)) => {
                read_response(&result).unwrap_or_else(|_| json!({"action": "cancel"}))
            }
            Some(Err(())) => json!({"action": "cancel"}),
            None => return false,
        };
        // The session's nonce stands for its caller: only a request whose session opened for
        // the caller that initialized it names it.
        let Some(key) = question_key(session, &id) else {
            return false;
        };
        questions
            .answer(&key, Some(&session.n), |_| true, value)
            .await
            .is_ok()
    }
}

/// A question's key: the session's nonce and the id its request went out under (a number
/// names no question: every question's id is its call's token and its number).
fn question_key(session: &Session, id: &RequestId) -> Option<String> {
    match id {
        RequestId::String(id) => Some(format!("{}:{id}", session.n)),
        RequestId::Number(_) => None,
    }
}

/// A call's questions at a handshake revision: sent on its stream, answered through the store.
pub(crate) struct Elicit {
    peer: Peer<RoleServer>,
    questions: Arc<Questions>,
    session: Session,
    /// What this call's requests go out as.
    token: CallToken,
    /// Requests sent on this call's stream so far: rmcp numbers the next one with it. Held
    /// while a question is taken and sent, so questions asked at once get their own numbers.
    sent: tokio::sync::Mutex<u32>,
}

impl std::fmt::Debug for Elicit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elicit").finish_non_exhaustive()
    }
}

impl Elicit {
    /// Whether the client takes anything on the stream (forms, its model, its roots).
    pub(crate) fn takes_any(&self) -> bool {
        self.session.offers.takes_any()
    }

    /// The call's end, when it is not the tool's result: for a client that opens links
    /// (URL mode, 2025-11-25), a call that needed the user's authorization is the revision's
    /// -32042 naming the link.
    pub(crate) fn end(&self, answer: &Result<Outcome, Rejection>) -> Option<ErrorData> {
        let rejection = answer.as_ref().err().filter(|_| self.session.u)?;
        super::result::url_elicitation_required(rejection)
    }

    /// The questions of a handshake request whose `Mcp-Session-Id` opens for its caller (its
    /// client declared form elicitation, sampling, roots or URL mode), if it has one.
    pub(crate) async fn of_request(
        served: &Served,
        parts: Option<&http::request::Parts>,
        context: &RequestContext<RoleServer>,
    ) -> Option<Arc<Carried<Self>>> {
        let parts = parts?;
        let token = parts.headers.get(SESSION_HEADER)?.to_str().ok()?;
        let trips = served.round_trips.as_ref()?;
        let Some(session) = trips.open_session(token, subject(parts)).await else {
            // Its client goes on unasked: said, so that an operator can tell why its questions
            // stopped (a session is good for a day; the client initializes again for another).
            tracing::info!(target: "oxp::mcp", outcome = "session_unopened", "an Mcp-Session-Id that does not open (expired, another caller's, or sealed with another key): the call asks nothing");
            return None;
        };
        let questions = trips.questions()?.clone();
        // Without its token (set where its stream is renumbered) a call is asked nothing.
        let token = parts.extensions.get::<CallToken>()?.clone();
        let peer = context.peer.clone();
        Some(Arc::new(Carried(Self::new(
            peer, questions, session, token,
        ))))
    }

    /// The questions of a call whose client's session is `session`, sent over `peer` as
    /// `token` renumbers them.
    fn new(
        peer: Peer<RoleServer>,
        questions: Arc<Questions>,
        session: Session,
        token: CallToken,
    ) -> Self {
        Self {
            peer,
            questions,
            session,
            token,
            sent: tokio::sync::Mutex::new(0),
        }
    }

    /// Asks `question` and waits for its answer (as [`read_response`] keeps it).
    async fn answer(&self, question: Question) -> Result<Value, TalkError> {
        if !self.session.offers.takes(question.needs()) {
            return Err(question.needs().not_carried());
        }
        let request = match request_of(&question).map_err(TalkError::Invalid)? {
            InputRequest::Elicitation(request) => ServerRequest::ElicitRequest(request),
            InputRequest::CreateMessage(request) => ServerRequest::CreateMessageRequest(request),
            InputRequest::ListRoots(request) => ServerRequest::ListRootsRequest(request),
            _ => return Err(TalkError::Invalid("not a request of this revision".into())),
        };
        let unavailable = |e: String| TalkError::Unavailable(e);
        let caller = Some(self.session.n.as_str());
        let (key, waiting) = {
            let mut sent = self.sent.lock().await;
            let id = RequestId::Number(i64::from(*sent));
            let key = format!("{}:{}", self.session.n, self.token.id(*sent));
            // The name is this call's alone: it is free unless the store is not answering.
            let taken = self.questions.take(&key, caller, HOLD).await;
            let Some(written) = taken.map_err(|e| unavailable(e.0))? else {
                return Err(unavailable("the question could not be taken".into()));
            };
            // Waited on from before it is sent: an answer that comes back before the wait
            // begins is handed to it, and written over the question as taken without a read.
            let waiting = self.questions.expect(&key, Some(written));
            let sent_as = self
                .peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await;
            *sent += 1;
            match sent_as {
                Ok(handle) if handle.id == id => (key, waiting),
                Ok(_) | Err(_) => {
                    drop(waiting);
                    let _ = self.questions.forget(&key).await;
                    return Err(unavailable("the question could not be sent".into()));
                }
            }
        };
        // The question goes with the call: one ended at its deadline or cancelled is answered
        // by nothing later.
        let _asked = Asked(self.questions.clone(), key.clone());
        let until = tokio::time::Instant::now() + MAX_WAIT;
        let pending = std::future::pending();
        match waiting.wait(until, Some(HOLD), pending).await {
            Ok(answer) => Ok(answer),
            Err(Waited::Unavailable(e)) => Err(unavailable(e.0)),
            Err(Waited::Until | Waited::Gone | Waited::Cancelled) => Err(TalkError::TimedOut),
        }
    }
}

/// A question sent: let go when its call is done with it, answered or not.
struct Asked(Arc<Questions>, String);

impl Drop for Asked {
    fn drop(&mut self) {
        let (questions, key) = (self.0.clone(), std::mem::take(&mut self.1));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = questions.forget(&key).await;
            });
        }
    }
}

impl Carrier for Elicit {
    fn carry(&self, _seq: u32, question: Question) -> TalkFuture<'_, Result<Value, TalkError>> {
        Box::pin(self.answer(question))
    }
}

/// A POST that may answer a question (a JSON-RPC response or error in a session): its
/// session token and caller, kept for [`answer`] once rmcp has checked the request.
pub(super) fn pending(
    parts: &http::request::Parts,
    message: &Message<'_>,
) -> Option<(String, Option<String>)> {
    let token = parts.headers.get(SESSION_HEADER)?.to_str().ok()?;
    (message.is_answer() && message.len() <= MAX_ANSWER)
        .then(|| (token.to_owned(), subject(parts).map(str::to_owned)))
}

/// The 202 of a client's POST answering a question it was asked in its session (`token`, of
/// caller `subject`), once recorded; `None` when it answers none.
pub(super) async fn answer(
    server: &super::handler::McpServer,
    (token, subject): &(String, Option<String>),
    message: &Message<'_>,
) -> Option<axum::response::Response> {
    let trips = server.0.round_trips.as_ref()?;
    let session = trips.open_session(token, subject.as_deref()).await?;
    if !trips.answered(&session, message).await {
        return None;
    }
    Some(
        axum::response::Response::builder()
            .status(http::StatusCode::ACCEPTED)
            .body(axum::body::Body::empty())
            .expect("a valid response"),
    )
}

/// The `Mcp-Session-Id` for an `initialize` (`message`) whose client declares form elicitation.
pub(super) async fn session(
    server: &super::handler::McpServer,
    parts: &http::request::Parts,
    message: &Message<'_>,
) -> Option<http::HeaderValue> {
    if !message.is_request("initialize") {
        return None;
    }
    let trips = server.0.round_trips.as_ref()?;
    let token = trips.session_for(message, subject(parts)).await?;
    http::HeaderValue::from_str(&token).ok()
}

#[cfg(all(test, feature = "embedded-state"))]
#[path = "elicit_tests.rs"]
mod tests;
