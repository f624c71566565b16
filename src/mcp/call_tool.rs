//! `tools/call` as a request: a long-running tool for a client that declared the tasks
//! extension becomes a task; any other call runs here, its tool's questions carried the one way
//! the request's revision and client allow ([`Asking`], chosen once: the carrier's own file
//! says what it makes of the call's end). Run within the Lambda invocation it came in (rmcp
//! gives the request a task of its own, which would not carry the invocation's fields). The
//! call itself (the fast path's too) goes through [`McpServer::call`].

use super::declared::{Offers, OnRequest};
use super::elicit::Elicit;
use super::handler::McpServer;
use super::questions::Carried;
use super::round_trip::Round;
use super::{result, round_trip};
use crate::server::CallContext;
use oxp_lambda_core::invoke::{Outcome, Rejection, Target};
use oxp_lambda_core::registry::RegisteredTool;
use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse, RequestId};
use rmcp::service::RequestContext;
use serde_json::{Map, Value};
use std::sync::Arc;

impl McpServer {
    /// Answers a `tools/call` request rmcp's service read.
    pub(super) async fn call_tool_request(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<http::request::Parts>();
        let fields = parts
            .and_then(|p| p.extensions.get::<Arc<crate::observe::Fields>>())
            .cloned();
        crate::observe::within(fields, async {
            let rpc = Rpc {
                id: Some(&context.id),
                traceparent: context.meta.get_traceparent(),
                progress: super::progress::Streamed::of(&context),
                closed: Some(&context.ct),
                revision: None,
            };
            let on_request = OnRequest::of(&context.meta);
            let stream = || Elicit::of_request(&self.0, parts, &context);
            self.answer_call(request, parts, on_request, rpc, stream)
                .await
        })
        .await
    }

    /// Answers a `tools/call` of `request`, whose client declared `on_request`: a long-running
    /// tool for a client that declared the tasks extension becomes a task; any other call runs,
    /// its questions carried the revision's way (`stream`: a handshake session's, if any).
    pub(super) async fn answer_call<F>(
        &self,
        request: CallToolRequestParams,
        parts: Option<&http::request::Parts>,
        on_request: OnRequest,
        rpc: Rpc<'_>,
        stream: impl FnOnce() -> F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        F: std::future::Future<Output = Option<Arc<Carried<Elicit>>>>,
    {
        match self.prepare(request, parts, on_request, stream).await? {
            Prepared::Answered(answer) => Ok(answer),
            Prepared::Run(tool, arguments, asking) => {
                self.call(tool, arguments, parts, rpc, asking).await
            }
        }
    }

    /// What a `tools/call` of `request` comes to before it runs (the fast path's 2026-07-28
    /// calls come here too, read without rmcp's service, and run the call themselves: one call
    /// future in theirs, not a second one boxed, copying it whole): a long-running tool for a
    /// client that declared the tasks extension becomes a task; any other call is to run, its
    /// questions carried the revision's way (`stream`: a handshake session's, if any).
    pub(super) async fn prepare<F>(
        &self,
        request: CallToolRequestParams,
        parts: Option<&http::request::Parts>,
        on_request: OnRequest,
        stream: impl FnOnce() -> F,
    ) -> Result<Prepared<'_>, ErrorData>
    where
        F: std::future::Future<Output = Option<Arc<Carried<Elicit>>>>,
    {
        let Some(served) = self.tool(&request.name) else {
            return Box::pin(self.unserved(&request.name, parts)).await;
        };
        let (tool, required) = (&served.tool, served.task_required);
        // A long-running tool (or one served only as a task) called by a client that declared
        // the tasks extension runs as a task: the answer is its handle, at once. One that asks
        // first becomes a task where it detaches, its questions asked here.
        let as_task =
            required || tool.task_support == oxp_lambda_core::declare::TaskSupport::Optional;
        let detach = on_request.tasks && tool.asks_first && self.0.tasks().is_some();
        if let Some(tasks) = self.0.tasks()
            && on_request.tasks
            && as_task
            && !tool.asks_first
        {
            let offers = on_request.modern.map(|(offers, _)| offers);
            let context = parts.map(CallContext::of).unwrap_or_default();
            let arguments = request.arguments.unwrap_or_default();
            let created = create_task(tasks, tool, context, &request.name, arguments, offers);
            return Box::pin(created).await.map(Prepared::Answered);
        }
        if required && !on_request.tasks {
            return Err(super::declared::missing_tasks_capability());
        }
        // The carrier of the tool's questions: the revision's, where the client takes any.
        // The steps before the call boxed where they are awaited: inline, their state made the
        // future awaiting them (the fast path's, which axum boxes, copying it) about 5 KB larger.
        let asking = match on_request.modern {
            Some((offers, url)) => {
                let round = match self.fresh_round(&request, offers, url, detach) {
                    Some(round) => round,
                    None => Box::pin(self.round(&request, parts, offers, url, detach)).await?,
                };
                Asking::Round(Box::new(round))
            }
            None => stream().await.map_or(Asking::Not, Asking::Stream),
        };
        Ok(Prepared::Run(tool, request.arguments, asking))
    }

    /// The served tool named `name`.
    pub(super) fn tool(&self, name: &str) -> Option<&super::handler::ServedTool> {
        self.0.get(name)
    }

    /// A call of `name`, which names no tool served here: refused by the invoker as every
    /// protocol's call of an unknown tool is (its line, its metrics, its caller's rate), then
    /// answered as the one error the spec makes a protocol error (-32602), or as the refusal
    /// of a caller over its rate.
    pub(super) async fn unserved(
        &self,
        name: &str,
        parts: Option<&http::request::Parts>,
    ) -> Result<Prepared<'_>, ErrorData> {
        let context = parts.map(CallContext::of).unwrap_or_default();
        let call = context.call("mcp", Target::Unserved(name.to_owned()), Value::Null);
        match self.0.invoker().invoke(call).await {
            Err(e) if e.class() != oxp_lambda_core::refusal::ErrorClass::NotFound => {
                let revision = result::Revision::of(parts);
                Ok(Prepared::Answered(
                    result::from_invoke(Err(e), revision).into(),
                ))
            }
            _ => {
                // The name is the caller's: bounded and stripped of control characters before
                // it is answered back (a 200 KB name would come back whole).
                let shown = crate::server::shown(name);
                Err(ErrorData::invalid_params(
                    format!("Unknown tool: {shown}"),
                    None,
                ))
            }
        }
    }

    /// The round of a 2026-07-28 `request` with nothing to read or bind (no state, no answers,
    /// a client that takes no question, a tool that does not detach): every question it asks
    /// fails at once, so it needs no step of [`McpServer::round`]'s.
    fn fresh_round(
        &self,
        request: &CallToolRequestParams,
        offers: Offers,
        url: bool,
        detach: bool,
    ) -> Option<Round<'_>> {
        let bare = request.request_state.is_none() && request.input_responses.is_none();
        (bare && !offers.takes_any() && !detach).then(|| Round {
            exchange: self.0.round_trips.as_ref().map(|trips| {
                let exchange = super::exchange::Exchange::default().offering(offers);
                (trips, Arc::new(Carried(exchange)), Vec::new())
            }),
            url,
            detaching: None,
        })
    }

    /// The round of a 2026-07-28 `request` from a client that declared `offers` (and `url`):
    /// begun from the state and the answers it brings (refused before anything runs when they
    /// do not hold), where the server keeps rounds.
    async fn round(
        &self,
        request: &CallToolRequestParams,
        parts: Option<&http::request::Parts>,
        offers: Offers,
        url: bool,
        detach: bool,
    ) -> Result<Round<'_>, ErrorData> {
        let Some(trips) = &self.0.round_trips else {
            return Ok(Round {
                exchange: None,
                url,
                detaching: None,
            });
        };
        let empty = Map::new();
        let arguments = request.arguments.as_ref().unwrap_or(&empty);
        let subject = parts.and_then(super::plumbing::subject);
        let (state, responses) = (request.request_state.as_deref(), &request.input_responses);
        // What a state is bound to, where one is read or may be sealed: a client that takes no
        // question and brings no state or answer never gets a round (each question fails at
        // once), and its call skips the digest of its arguments.
        let bound = state.is_some() || responses.is_some() || offers.takes_any();
        let binding = match bound {
            true => round_trip::binding(subject, &request.name, arguments),
            false => Vec::new(),
        };
        let mut exchange = trips
            .begin(subject, &binding, state, responses.as_ref())
            .await?;
        exchange = exchange.offering(offers);
        if detach {
            exchange = exchange.detachable();
        }
        Ok(Round {
            exchange: Some((trips, Arc::new(Carried(exchange)), binding)),
            url,
            detaching: detach.then(|| {
                let context = parts.map(CallContext::of).unwrap_or_default();
                (context, arguments.clone(), offers)
            }),
        })
    }
}

/// A call of `tool` (named `name`) made a task at once (its answer is the task's handle),
/// counted against its caller's rate and its arguments checked before anything is kept: a call
/// over the rate or with invalid arguments is the tool's error, never a stored task.
async fn create_task(
    tasks: &Arc<super::task::Tasks>,
    tool: &Arc<RegisteredTool>,
    context: CallContext,
    name: &str,
    arguments: Map<String, Value>,
    offers: Option<Offers>,
) -> Result<CallToolResponse, ErrorData> {
    let input = Value::Object(arguments);
    let caller = context.principal.subject.as_deref();
    if let Err(refused) = tasks.count(caller).and_then(|()| tool.check_input(&input)) {
        return Ok(result::from_invoke(Err(refused), result::Revision::ALL).into());
    }
    let arguments = match input {
        Value::Object(arguments) => arguments,
        _ => Map::new(),
    };
    let offers = offers.unwrap_or_default();
    let created = tasks
        .create(context, name, arguments, Default::default(), offers)
        .await?;
    Ok(CallToolResponse::Task(created))
}

/// A `tools/call` [prepared](McpServer::prepare): answered already (a task created at once),
/// or its tool to run with its arguments and the carrier of its questions.
pub(crate) enum Prepared<'a> {
    /// Its answer already.
    Answered(CallToolResponse),
    /// To run: its tool, its arguments, the carrier of its questions.
    Run(
        &'a Arc<RegisteredTool>,
        Option<Map<String, Value>>,
        Asking<'a>,
    ),
}

/// How a call asks its client for input: the carrier of its tool's questions, chosen by the
/// request's revision and its client, which also says what the call's end becomes when it is
/// not the tool's result.
#[derive(Default)]
pub(crate) enum Asking<'a> {
    /// It may not (a handshake client that declared nothing: the answer is a tool error naming
    /// what was needed).
    #[default]
    Not,
    /// At a handshake revision, by requests on the call's stream (the client's session says
    /// what it takes).
    Stream(Arc<Carried<Elicit>>),
    /// At 2026-07-28, by `input_required` results.
    Round(Box<Round<'a>>),
}

impl Asking<'_> {
    /// The call's talk-back channel, where its client takes questions.
    fn talk(&self) -> Option<Arc<dyn oxp_lambda_core::talk::Talk>> {
        match self {
            Self::Not => None,
            Self::Stream(elicit) => elicit.takes_any().then(|| elicit.clone() as _),
            Self::Round(round) => round.exchange.as_ref().map(|(_, e, _)| e.clone() as _),
        }
    }

    /// Whether the call's end may be other than the tool's result (`answer`).
    fn may_end(&self, answer: &Result<Outcome, Rejection>) -> bool {
        match self {
            Self::Not => false,
            Self::Stream(_) => true,
            Self::Round(round) => round.may_end(answer),
        }
    }

    /// The call's end as its carrier makes it, when it is not the tool's result.
    async fn end(
        self,
        tasks: Option<&Arc<super::task::Tasks>>,
        name: &str,
        answer: &Result<Outcome, Rejection>,
    ) -> Result<Option<CallToolResponse>, ErrorData> {
        match self {
            Self::Not => Ok(None),
            Self::Stream(elicit) => elicit.end(answer).map_or(Ok(None), Err),
            Self::Round(round) => round.end(tasks, name, answer).await,
        }
    }
}

/// What a `tools/call` request brings besides its tool and arguments.
#[derive(Default)]
pub(crate) struct Rpc<'a> {
    /// Its JSON-RPC id, which a `notifications/cancelled` names.
    pub(crate) id: Option<&'a RequestId>,
    /// Its `_meta.traceparent`.
    pub(crate) traceparent: Option<&'a str>,
    /// Where its progress goes, when the client asked for it.
    pub(crate) progress: Option<super::progress::Streamed>,
    /// Fires when the client closes the request while the answer streams.
    pub(crate) closed: Option<&'a tokio_util::sync::CancellationToken>,
    /// Its revision, when the caller read it already (else read from the request's headers).
    pub(crate) revision: Option<super::result::Revision>,
}

impl McpServer {
    /// A `tools/call` of `tool` with `arguments`; `parts` are the HTTP request's, which carry
    /// what the plumbing learnt (the caller, the transport's deadline). While it runs, a
    /// `notifications/cancelled` naming `request_id` reaches it.
    pub(crate) async fn call(
        &self,
        tool: &Arc<RegisteredTool>,
        arguments: Option<Map<String, Value>>,
        parts: Option<&http::request::Parts>,
        rpc: Rpc<'_>,
        asking: Asking<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        let input = Value::Object(arguments.unwrap_or_default());
        let context = parts.map(CallContext::of).unwrap_or_default();
        let mut call = context.call("mcp", Target::Tool(tool.clone()), input);
        call.talk = asking.talk();
        let revision = rpc.revision.unwrap_or_else(|| result::Revision::of(parts));
        let answer = self.invoke(call, parts, rpc).await;
        // Boxed where a carrier may end the call: a plain call takes none of its steps, and
        // inline they made every call's future (the fast path's, which axum boxes, copying it
        // whole) about 8 KB larger than the invoker's. Not even built when nothing was asked.
        if asking.may_end(&answer)
            && let Some(ended) =
                Box::pin(asking.end(self.0.tasks(), &tool.listing_name, &answer)).await?
        {
            return Ok(ended);
        }
        Ok(result::from_invoke(answer, revision).into())
    }

    /// Runs `call` with what the request brings (`rpc`): its progress, its traceparent, its
    /// cancellation by `notifications/cancelled` or by the client closing the request.
    async fn invoke(
        &self,
        mut call: oxp_lambda_core::invoke::Call,
        parts: Option<&http::request::Parts>,
        rpc: Rpc<'_>,
    ) -> Result<Outcome, Rejection> {
        if let Some(progress) = rpc.progress {
            call.talk = Some(Arc::new(progress.around(call.talk.take())));
        }
        // The request's own `_meta.traceparent` (SEP-414) before the HTTP header's.
        if let Some(sent) = rpc
            .traceparent
            .and_then(oxp_lambda_core::invoke::traceparent)
        {
            call.traceparent = Some(sent);
        }
        // MCP has no user field: the end user is the authenticated caller. Secrets come from
        // the server's sources only.
        call.user_id = call.principal.subject.clone();
        let _registered = rpc
            .id
            .and_then(|id| serde_json::to_string(id).ok())
            .map(|id| {
                // A signal of its own: closing another request with the same id (its caller's
                // next, say) must not stop this one; `notifications/cancelled` reaches both.
                let (signal, registered) =
                    self.0
                        .running
                        .start_own(call.principal.subject.as_deref(), "", id);
                call.cancellation = Some(signal);
                registered
            });
        // A request rmcp runs in a task of its own: its client closing the request cancels the
        // call, before the answer starts (`RequestClosed`) or while it streams (rmcp's token);
        // the fast path's call is dropped with the request instead.
        let closed = parts.and_then(|p| p.extensions.get::<super::RequestClosed>());
        let closable = closed.is_some() || rpc.closed.is_some();
        let signal = closable.then(|| {
            call.cancellation
                .get_or_insert_with(Default::default)
                .clone()
        });
        // One invoker future, awaited either way and pinned where it is made: one per way, or
        // one moved into `pin!` afterwards, each took its own room in this future's state.
        let mut invoke = std::pin::pin!(self.0.invoker().invoke(call));
        let Some(signal) = signal else {
            return invoke.await;
        };
        let closed = async {
            match (closed, rpc.closed) {
                (Some(closed), Some(stream)) => tokio::select! {
                    () = closed.0.cancelled() => {}
                    () = stream.cancelled() => {}
                },
                (Some(closed), None) => closed.0.cancelled().await,
                (None, Some(stream)) => stream.cancelled().await,
                (None, None) => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            answer = &mut invoke => answer,
            () = closed => {
                signal.cancel();
                invoke.await
            }
        }
    }
}
