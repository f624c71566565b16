//! The MCP server behind `/mcp`: `initialize`, `tools/list` and `tools/call` over the invoker.
//! rmcp does the JSON-RPC, the protocol revisions and the per-request negotiation; this only
//! translates.

use super::result;
use super::round_trip::{self, RoundTrips};
use super::tasks::Tasks;
use crate::server::CallContext;
use oxp_lambda_core::invoke::{Invoker, Target};
use oxp_lambda_core::registry::RegisteredTool;
use oxp_lambda_core::running::Running;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult,
    ErrorCode, GetTaskParams, GetTaskResult, Implementation, InputResponses, ListToolsResult,
    PaginatedRequestParams, RequestId, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How long a client may treat `tools/list` as fresh (2026-07-28 caching hints).
const LISTING_TTL_MS: u64 = 300_000;

/// Longest part of an unknown tool's name an error repeats (listing names are at most 64).
const MAX_SHOWN_NAME: usize = 64;

/// What every request shares: the served tools, their MCP definitions and the invoker.
#[derive(Debug)]
pub(crate) struct Served {
    invoker: Arc<Invoker>,
    tools: Vec<Arc<RegisteredTool>>,
    by_name: HashMap<String, usize>,
    listing: Vec<Tool>,
    /// `tools/call` requests running here, by caller and request id, for
    /// `notifications/cancelled`.
    running: Arc<Running>,
    /// Questions for the user at 2026-07-28 (`/mcp` only; the AgentCore target has none).
    round_trips: Option<RoundTrips>,
    /// The tasks extension, where the server offers it (`/mcp` with a state store).
    tasks: Option<Arc<Tasks>>,
    /// The tools served only as tasks, by listing name.
    task_required: HashSet<String>,
}

/// How a call may ask its client for input.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum Asking<'a> {
    /// It may not (a handshake revision: the answer is a tool error naming what was needed).
    #[default]
    Not,
    /// At 2026-07-28, by `input_required` results, in the modes the client declared on the
    /// request; `state` and `responses` continue an earlier round.
    Rounds {
        form: bool,
        url: bool,
        state: Option<&'a str>,
        responses: Option<&'a InputResponses>,
    },
}

impl Served {
    /// Serves `tools` (one version of each) through `invoker`.
    pub(crate) fn new(invoker: Arc<Invoker>, tools: Vec<Arc<RegisteredTool>>) -> Self {
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.listing_name.clone(), i))
            .collect();
        let listing = tools.iter().map(|t| definition(t)).collect();
        Self {
            invoker,
            tools,
            by_name,
            listing,
            running: Arc::default(),
            round_trips: None,
            tasks: None,
            task_required: HashSet::new(),
        }
    }

    /// Offers the tasks extension over `tasks`; the tools named in `required` (listing names)
    /// are served only as tasks.
    pub(crate) fn with_tasks(mut self, tasks: Arc<Tasks>, required: HashSet<String>) -> Self {
        self.tasks = Some(tasks);
        self.task_required = required;
        self
    }

    /// Whether the tool named `name` is served only as a task (`OXP_MCP_TASK_REQUIRED`).
    pub(crate) fn task_required(&self, name: &str) -> bool {
        self.task_required.contains(name)
    }

    /// The tasks, where offered.
    pub(crate) fn tasks(&self) -> Option<&Arc<Tasks>> {
        self.tasks.as_ref()
    }

    /// Lets the tools ask the user at 2026-07-28 (multi round-trip requests).
    pub(crate) fn with_round_trips(mut self, round_trips: RoundTrips) -> Self {
        self.round_trips = Some(round_trips);
        self
    }

    /// `notifications/cancelled` for request `id` (its JSON text) of `subject`: fires that
    /// call's signal if it runs here. Whether it did.
    pub(crate) fn cancel(&self, subject: Option<&str>, id: &str) -> bool {
        self.running.cancel(subject, "", id)
    }

    /// The served tool named `name` (its listing name, `Calculator_Add`).
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The invoker.
    pub(crate) fn invoker(&self) -> &Arc<Invoker> {
        &self.invoker
    }
}

/// The MCP definition of a tool: its listing name, description, input schema, and output
/// schema when the output is an object.
pub(crate) fn definition(tool: &RegisteredTool) -> Tool {
    let object = |schema: &Value| match schema {
        Value::Object(map) => Arc::new(map.clone()),
        _ => Arc::new(Map::new()),
    };
    let mut definition = Tool::new(
        tool.listing_name.clone(),
        tool.description.clone(),
        input_object(&tool.input_schema),
    );
    let a = &tool.annotations;
    if !a.is_empty() {
        definition.title = a.title.clone();
        let mut hints = ToolAnnotations::new();
        hints.title = a.title.clone();
        hints.read_only_hint = a.read_only;
        hints.destructive_hint = a.destructive;
        hints.idempotent_hint = a.idempotent;
        hints.open_world_hint = a.open_world;
        definition.annotations = Some(hints);
    }
    if result::has_structured_output(tool)
        && let Some(schema) = &tool.output_schema
    {
        definition = definition.with_raw_output_schema(object(schema));
    }
    definition
}

/// A tool's input schema as MCP lists it: an object schema always with `properties` (`{}` for
/// a tool without input), as the OpenAI and Vercel SDKs add themselves and some clients'
/// adapters (smolagents) require.
fn input_object(schema: &Value) -> Arc<Map<String, Value>> {
    let mut map = match schema {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    if map.get("type").and_then(Value::as_str) == Some("object") || map.is_empty() {
        map.entry("type").or_insert_with(|| Value::from("object"));
        map.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Arc::new(map)
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
}

/// One request's server: rmcp builds one per request (stateless), so it is a shared pointer.
#[derive(Debug, Clone)]
pub(crate) struct McpServer(pub(crate) Arc<Served>);

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
        let Rpc {
            id: request_id,
            traceparent,
            progress,
            closed: stream_closed,
        } = rpc;
        // An unknown tool is the one error the spec makes a protocol error (-32602).
        let Some(tool) = self.0.get(name) else {
            // The name is the caller's: bounded and stripped of control characters before it is
            // answered back (a 200 KB name would come back whole).
            let shown: String = name
                .chars()
                .filter(|c| !c.is_control())
                .take(MAX_SHOWN_NAME)
                .collect();
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {shown}"),
                None,
            ));
        };
        let input = Value::Object(arguments.unwrap_or_default());
        let context = parts.map(CallContext::of).unwrap_or_default();
        // A 2026-07-28 client that can show a form gets the tool's questions as rounds.
        // A 2026-07-28 request: the tool's questions are rounds (or, from a client that cannot
        // show a form, the revision's missing-capability error).
        let rounds = match (asking, &self.0.round_trips) {
            (
                Asking::Rounds {
                    form,
                    state,
                    responses,
                    ..
                },
                Some(trips),
            ) => {
                let binding =
                    round_trip::binding(context.principal.subject.as_deref(), name, &input);
                let exchange = Arc::new(trips.begin(&binding, state, responses).await?);
                Some((trips, exchange, binding, form))
            }
            _ => None,
        };
        let mut call = context.call("mcp", Target::Tool(tool.clone()), input);
        if let Some((_, exchange, _, _)) = &rounds {
            call.talk = Some(exchange.clone());
        }
        if let Some(progress) = progress {
            call.talk = Some(Arc::new(progress.around(call.talk.take())));
        }
        // The request's own `_meta.traceparent` (SEP-414) before the HTTP header's.
        if let Some(sent) = traceparent.and_then(oxp_lambda_core::invoke::traceparent) {
            call.traceparent = Some(sent);
        }
        // MCP has no user field: the end user is the authenticated caller. Secrets come from
        // the server's sources only.
        call.user_id = call.principal.subject.clone();
        let _registered = request_id
            .and_then(|id| serde_json::to_string(id).ok())
            .map(|id| {
                let (signal, registered) =
                    self.0
                        .running
                        .start(call.principal.subject.as_deref(), "", &id);
                call.cancellation = Some(signal);
                registered
            });
        // A request rmcp runs in a task of its own: its client closing the request cancels the
        // call, before the answer starts (`RequestClosed`) or while it streams (rmcp's token);
        // the fast path's call is dropped with the request instead.
        let closed = parts.and_then(|p| p.extensions.get::<super::RequestClosed>());
        let answer = if closed.is_some() || stream_closed.is_some() {
            let signal = call
                .cancellation
                .get_or_insert_with(Default::default)
                .clone();
            let invoke = self.0.invoker().invoke(call);
            tokio::pin!(invoke);
            let closed = async {
                match (closed, stream_closed) {
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
        } else {
            self.0.invoker().invoke(call).await
        };
        // A question the tool asked of a client that cannot show it.
        if let Some((_, exchange, _, false)) = &rounds
            && exchange.asked_anything()
        {
            return Err(round_trip::missing_form_capability());
        }
        // A question the tool asked: the next round.
        if let Some((trips, exchange, binding, true)) = &rounds
            && let Some(input_required) =
                trips.input_required(exchange, binding).await.map_err(|e| {
                    tracing::error!(target: "oxp::mcp", error = %e, "input_required not built");
                    ErrorData::internal_error("The server cannot ask the user now", None)
                })?
        {
            return Ok(CallToolResponse::InputRequired(input_required));
        }
        // A client that can open a URL for its user (it declared URL-mode elicitation) is asked
        // to; any other gets the tool error naming the link.
        if let Asking::Rounds { url: true, .. } = asking
            && let Err(rejection) = &answer
            && let Some(input_required) = result::url_elicitation(rejection)
        {
            return Ok(CallToolResponse::InputRequired(input_required));
        }
        Ok(result::from_invoke(answer).into())
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools();
        let capabilities = match &self.0.tasks {
            Some(_) => capabilities.enable_tasks().build(),
            None => capabilities.build(),
        };
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let tasks = self.0.tasks.as_ref().ok_or_else(no_tasks)?;
        let task = tasks
            .get(caller(&context).as_deref(), &request.task_id)
            .await?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = self.0.tasks.as_ref().ok_or_else(no_tasks)?;
        tasks
            .answer(
                caller(&context).as_deref(),
                &request.task_id,
                &request.input_responses,
            )
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = self.0.tasks.as_ref().ok_or_else(no_tasks)?;
        tasks
            .cancel(caller(&context).as_deref(), &request.task_id)
            .await
    }

    /// The listed definition of `name`: rmcp checks a 2026-07-28 call's `Mcp-Param-*` headers
    /// against the `x-mcp-header` properties of its input schema.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.0.by_name.get(name).map(|&i| self.0.listing[i].clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The listing changes only with a new deployment: fresh for five minutes, for this
        // caller (with authentication on, a shared cache must not serve it to another).
        let mut listed = ListToolsResult::with_all_items(self.0.listing.clone());
        listed.ttl_ms = Some(LISTING_TTL_MS);
        listed.cache_scope = Some(rmcp::model::CacheScope::Private);
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call_tool_request(request, context).await
    }

    /// rmcp hands over any method it could not read: an unknown one (-32601), or a known one
    /// whose params did not fit its type (-32602: rmcp would call that "method not found").
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method: String = request.method.chars().take(64).collect();
        if KNOWN_METHODS.contains(&request.method.as_str()) {
            return Err(ErrorData::invalid_params(
                format!("Invalid params for {method}"),
                None,
            ));
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
            None,
        ))
    }
}

/// The authenticated caller of a request (`None` without authentication).
fn caller(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<oxp_lambda_core::principal::Principal>())
        .and_then(|p| p.subject.clone())
}

fn no_tasks() -> ErrorData {
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "Method not found: tasks", None)
}

/// The client requests of the MCP revisions rmcp speaks.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
];
