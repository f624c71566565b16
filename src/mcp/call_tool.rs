//! `tools/call` as a request: a long-running tool for a client that declared the tasks
//! extension becomes a task; any other call runs here, asking its client for input the way
//! the request's revision allows. Run within the Lambda invocation it came in (rmcp gives the
//! request a task of its own, which would not carry the invocation's fields). The call itself
//! (the fast path's too) goes through [`McpServer::call`].

use super::exchange::Exchange;
use super::handler::McpServer;
use super::questions::{Carried, Offers, OnRequest};
use super::round_trip::RoundTrips;
use super::{result, round_trip};
use crate::server::CallContext;
use oxp_lambda_core::invoke::Target;
use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse, InputResponses, RequestId};
use rmcp::service::RequestContext;
use serde_json::{Map, Value};
use std::sync::Arc;

impl McpServer {
    /// Answers a `tools/call` request.
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
            // A long-running tool (or one served only as a task) called by a client that
            // declared the tasks extension runs as a task: the answer is its handle, at once.
            let required = self.0.task_required(&request.name);
            let on_request = OnRequest::of(&context.meta);
            let declared = on_request.tasks;
            // One that asks first becomes a task where it detaches, its questions asked here.
            let tool = self.0.get(&request.name);
            let as_task = required
                || tool.is_some_and(|t| {
                    t.task_support == oxp_lambda_core::declare::TaskSupport::Optional
                });
            let asks_first = tool.is_some_and(|t| t.asks_first);
            if let Some(tasks) = self.0.tasks()
                && declared
                && as_task
                && !asks_first
            {
                let offers = on_request.modern.map(|(offers, _)| offers);
                let context = parts.map(CallContext::of).unwrap_or_default();
                let arguments = request.arguments.unwrap_or_default();
                return create_task(tasks, tool, context, &request.name, arguments, offers).await;
            }
            if required && !declared {
                return Err(super::questions::missing_tasks_capability());
            }
            let asking = match on_request.modern {
                Some((offers, url)) => Asking::Rounds {
                    offers,
                    url,
                    state: request.request_state.as_deref(),
                    responses: request.input_responses.as_ref(),
                    detach: declared && asks_first && self.0.tasks().is_some(),
                },
                None => Asking::Not,
            };
            // A handshake client whose session says it shows forms is asked on the stream.
            let elicit = match asking {
                Asking::Not => self.handshake_questions(parts, &context).await,
                _ => None,
            };
            let asking = elicit.as_ref().map_or(asking, Asking::Stream);
            let rpc = Rpc {
                id: Some(&context.id),
                traceparent: context.meta.get_traceparent(),
                progress: super::progress::Streamed::of(&context),
                closed: Some(&context.ct),
                revision: None,
            };
            self.call(&request.name, request.arguments, parts, rpc, asking)
                .await
        })
        .await
    }
}

/// A call of `name` (`tool`, if served) made a task at once (its answer is the task's handle),
/// its arguments checked before anything is kept: invalid ones are the tool's error, never a
/// stored task.
async fn create_task(
    tasks: &Arc<super::task::Tasks>,
    tool: Option<&Arc<oxp_lambda_core::registry::RegisteredTool>>,
    context: CallContext,
    name: &str,
    arguments: Map<String, Value>,
    offers: Option<Offers>,
) -> Result<CallToolResponse, ErrorData> {
    let input = Value::Object(arguments);
    if let Some(Err(refused)) = tool.map(|t| t.check_input(&input)) {
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

/// How a call may ask its client for input.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum Asking<'a> {
    /// It may not (a handshake revision: the answer is a tool error naming what was needed).
    #[default]
    Not,
    /// At a handshake revision, by `elicitation/create` on the call's stream (the client's
    /// session says it shows forms).
    Stream(&'a Arc<Carried<super::elicit::Elicit>>),
    /// At 2026-07-28, by `input_required` results, in the modes the client declared on the
    /// request; `state` and `responses` continue an earlier round.
    Rounds {
        offers: Offers,
        url: bool,
        state: Option<&'a str>,
        responses: Option<&'a InputResponses>,
        /// The call goes on as a task where the tool detaches (a tool that asks first, from a
        /// client that takes tasks).
        detach: bool,
    },
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

/// A 2026-07-28 call's round of questions: the store of rounds, this round's exchange and what
/// it is bound to.
type Round<'a> = (&'a RoundTrips, Arc<Carried<Exchange>>, Vec<u8>);

impl McpServer {
    /// A `tools/call` of `name` with `arguments`; `parts` are the HTTP request's, which carry
    /// what the plumbing learnt (the caller, the transport's deadline). While it runs, a
    /// `notifications/cancelled` naming `request_id` reaches it.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        parts: Option<&http::request::Parts>,
        rpc: Rpc<'_>,
        asking: Asking<'_>,
    ) -> Result<CallToolResponse, ErrorData> {
        // An unknown tool is the one error the spec makes a protocol error (-32602).
        let Some(tool) = self.0.get(name) else {
            // The name is the caller's: bounded and stripped of control characters before it is
            // answered back (a 200 KB name would come back whole).
            let shown = crate::server::shown(name);
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {shown}"),
                None,
            ));
        };
        let input = Value::Object(arguments.unwrap_or_default());
        let context = parts.map(CallContext::of).unwrap_or_default();
        // The round's, the question's and the task's futures are boxed where they are awaited:
        // a plain call takes none of them, and inline they made every call's future (the fast
        // path's, which axum boxes, copying it whole) about 8 KB larger than the invoker's.
        let round = match asking {
            Asking::Rounds { .. } => Box::pin(self.round(asking, &context, name, &input)).await?,
            _ => None,
        };
        // What the task starts from, should the tool detach.
        let detaching = match asking {
            Asking::Rounds {
                detach: true,
                offers,
                ..
            } => Some((
                context.clone(),
                input.as_object().cloned().unwrap_or_default(),
                offers,
            )),
            _ => None,
        };
        let mut call = context.call("mcp", Target::Tool(tool.clone()), input);
        if let Some((_, exchange, _)) = &round {
            call.talk = Some(exchange.clone());
        }
        if let Asking::Stream(elicit) = asking
            && elicit.takes_any()
        {
            call.talk = Some(elicit.clone());
        }
        let revision = rpc.revision.unwrap_or_else(|| result::Revision::of(parts));
        let answer = self.invoke(call, parts, rpc).await;
        // A question the tool asked: the next round.
        if let Some((trips, exchange, binding)) = &round
            && let Some(input_required) = Box::pin(trips.input_required(exchange, binding))
                .await
                .map_err(|e| {
                    tracing::error!(target: "oxp::mcp", error = %e, "input_required not built");
                    ErrorData::internal_error("The server cannot ask the user now", None)
                })?
        {
            return Ok(CallToolResponse::InputRequired(input_required));
        }
        let exchange = round.as_ref().map(|(_, exchange, _)| &exchange.0);
        self.answer(name, answer, exchange, detaching, asking, revision)
            .await
    }

    /// The round of a 2026-07-28 call whose client may be asked (`None` for any other).
    async fn round(
        &self,
        asking: Asking<'_>,
        context: &CallContext,
        name: &str,
        input: &Value,
    ) -> Result<Option<Round<'_>>, ErrorData> {
        let (
            Asking::Rounds {
                offers,
                state,
                responses,
                detach,
                ..
            },
            Some(trips),
        ) = (asking, &self.0.round_trips)
        else {
            return Ok(None);
        };
        let binding = round_trip::binding(context.principal.subject.as_deref(), name, input);
        let mut exchange = trips.begin(&binding, state, responses).await?;
        exchange = exchange.offering(offers);
        if detach {
            exchange = exchange.detachable();
        }
        Ok(Some((trips, Arc::new(Carried(exchange)), binding)))
    }

    /// Runs `call` with what the request brings (`rpc`): its progress, its traceparent, its
    /// cancellation by `notifications/cancelled` or by the client closing the request.
    async fn invoke(
        &self,
        mut call: oxp_lambda_core::invoke::Call,
        parts: Option<&http::request::Parts>,
        rpc: Rpc<'_>,
    ) -> Result<oxp_lambda_core::invoke::Outcome, oxp_lambda_core::refusal::Rejection> {
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

    /// The response to a call of `name` that ended with `answer` (no question left to ask).
    async fn answer(
        &self,
        name: &str,
        answer: Result<oxp_lambda_core::invoke::Outcome, oxp_lambda_core::refusal::Rejection>,
        exchange: Option<&Exchange>,
        detaching: Option<(CallContext, Map<String, Value>, Offers)>,
        asking: Asking<'_>,
        revision: result::Revision,
    ) -> Result<CallToolResponse, ErrorData> {
        // What the tool needed of a client that did not declare it, and could not do without.
        if let Some(exchange) = exchange
            && !answer.as_ref().is_ok_and(|outcome| outcome.result.is_ok())
            && let missing = exchange.missing()
            && !missing.is_empty()
        {
            return Err(super::questions::missing_capabilities(&missing));
        }
        // The tool detached: the call goes on as a task, with the answers it had.
        if let Some(exchange) = exchange
            && let Some(answers) = exchange.detached()
            && let (Some(tasks), Some((context, arguments, offers))) = (self.0.tasks(), detaching)
        {
            let created = Box::pin(tasks.create(context, name, arguments, answers, offers)).await?;
            return Ok(CallToolResponse::Task(created));
        }
        // A 2025-11-25 client whose session says it opens links gets the revision's -32042.
        if let Asking::Stream(elicit) = asking
            && elicit.opens_links()
            && let Err(rejection) = &answer
            && let Some(error) = result::url_elicitation_required(rejection)
        {
            return Err(error);
        }
        // A client that can open a URL for its user (it declared URL-mode elicitation) is asked
        // to; any other gets the tool error naming the link.
        if let Asking::Rounds { url: true, .. } = asking
            && let Err(rejection) = &answer
            && let Some(input_required) = result::url_elicitation(rejection)
        {
            return Ok(CallToolResponse::InputRequired(input_required));
        }
        Ok(result::from_invoke(answer, revision).into())
    }
}

impl McpServer {
    /// The questions channel of a handshake request whose `Mcp-Session-Id` opens for its
    /// caller (its client declared form elicitation), if it has one.
    async fn handshake_questions(
        &self,
        parts: Option<&http::request::Parts>,
        context: &rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Option<Arc<Carried<super::elicit::Elicit>>> {
        let parts = parts?;
        let token = parts
            .headers
            .get(super::elicit::SESSION_HEADER)?
            .to_str()
            .ok()?;
        let trips = self.0.round_trips.as_ref()?;
        let session = trips
            .open_session(token, super::plumbing::subject(parts))
            .await?;
        let questions = trips.questions()?.clone();
        // Without its token (set where its stream is renumbered) a call is asked nothing.
        let token = parts
            .extensions
            .get::<super::call_ids::CallToken>()?
            .clone();
        Some(Arc::new(Carried(super::elicit::Elicit::new(
            context.peer.clone(),
            questions,
            session,
            token,
        ))))
    }
}
