//! The MCP server behind `/mcp`: `initialize`, `tools/list` and `tools/call` over the invoker.
//! rmcp does the JSON-RPC, the protocol revisions and the per-request negotiation; this only
//! translates.

use super::round_trip::RoundTrips;
use super::task::Tasks;
use oxp_lambda_core::invoke::Invoker;
use oxp_lambda_core::registry::RegisteredTool;
use oxp_lambda_core::running::Running;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult,
    ErrorCode, GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::collections::HashSet;
use std::sync::Arc;

/// How long a client may treat `tools/list` as fresh (2026-07-28 caching hints).
const LISTING_TTL_MS: u64 = 300_000;

/// A served tool and how `/mcp` serves it: what a call reads of it, found by one lookup.
#[derive(Debug)]
pub(crate) struct ServedTool {
    pub(crate) tool: Arc<RegisteredTool>,
    /// Its input schema names `x-mcp-header` (2026-07-28's `Mcp-Param-*` headers, which rmcp
    /// checks against the call's arguments).
    pub(crate) param_headers: bool,
    /// It is served only as a task (`task_support = "required"`, `OXP_MCP_TASK_REQUIRED`).
    pub(crate) task_required: bool,
}

impl std::ops::Deref for ServedTool {
    type Target = Arc<RegisteredTool>;

    fn deref(&self) -> &Arc<RegisteredTool> {
        &self.tool
    }
}

/// What every request shares: the served tools, their MCP definitions and the invoker.
#[derive(Debug)]
pub(crate) struct Served {
    invoker: Arc<Invoker>,
    tools: Vec<ServedTool>,
    by_name: foldhash::HashMap<String, usize>,
    listing: Vec<Tool>,
    /// `tools/call` requests running here, by caller and request id, for
    /// `notifications/cancelled`.
    pub(super) running: Arc<Running>,
    /// Questions for the user at 2026-07-28 (`/mcp` only; the AgentCore target has none).
    pub(super) round_trips: Option<RoundTrips>,
    /// The tasks extension, where the server offers it (`/mcp` with a state store).
    tasks: Option<Arc<Tasks>>,
}

impl Served {
    /// Serves `tools` (one version of each) through `invoker`.
    pub(crate) fn new(invoker: Arc<Invoker>, tools: Vec<Arc<RegisteredTool>>) -> Self {
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.listing_name.clone(), i))
            .collect();
        let listing: Vec<Tool> = tools
            .iter()
            .map(|t| super::definition::definition(t))
            .collect();
        let tools = tools
            .into_iter()
            .zip(&listing)
            .map(|(tool, listed)| ServedTool {
                tool,
                param_headers: serde_json::to_string(&listed.input_schema)
                    .is_ok_and(|s| s.contains("x-mcp-header")),
                task_required: false,
            })
            .collect();
        Self {
            invoker,
            tools,
            by_name,
            listing,
            running: Arc::default(),
            round_trips: None,
            tasks: None,
        }
    }

    /// Offers the tasks extension over `tasks`; the tools named in `required` (listing names)
    /// are served only as tasks.
    pub(crate) fn with_tasks(mut self, tasks: Arc<Tasks>, required: &HashSet<String>) -> Self {
        self.tasks = Some(tasks);
        for served in &mut self.tools {
            served.task_required = required.contains(&served.tool.listing_name);
        }
        self
    }

    /// The task support `tools/list` shows for the tool named `name` (`None`: never a task).
    pub(crate) fn task_support(&self, name: &str) -> Option<&'static str> {
        let served = self.get(name)?;
        if served.task_required {
            return Some("required");
        }
        let optional = served.task_support == oxp_lambda_core::declare::TaskSupport::Optional;
        optional.then_some("optional")
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
    pub(crate) fn get(&self, name: &str) -> Option<&ServedTool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The invoker.
    pub(crate) fn invoker(&self) -> &Arc<Invoker> {
        &self.invoker
    }
}

/// One request's server: rmcp builds one per request (stateless), so it is a shared pointer.
#[derive(Debug, Clone)]
pub(crate) struct McpServer(pub(crate) Arc<Served>);

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

    /// The handshake of 2025-03-26 to 2025-11-25, whose capabilities have no `extensions`:
    /// the tasks extension `get_info` declares is 2026-07-28's (`server/discover`), and these
    /// revisions are served no task (2025-11-25's own `tasks` capability is not served).
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        result.capabilities.extensions = None;
        Ok(result)
    }

    /// The revisions served: 2025-03-26, the first with Streamable HTTP (this transport), and
    /// every later one rmcp knows. An `initialize` asking for an earlier one is answered with
    /// the latest handshake revision, which such a client may take or leave, where rmcp would
    /// agree to a revision this server is not built or tested for.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        let known = ProtocolVersion::KNOWN_VERSIONS;
        let first = ProtocolVersion::V_2025_03_26.as_str();
        let from = known.iter().position(|v| v.as_str() >= first);
        std::borrow::Cow::Borrowed(&known[from.unwrap_or(known.len())..])
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let tasks = self.0.tasks.as_ref().ok_or_else(no_tasks)?;
        let task = tasks.get(caller(&context), &request.task_id).await?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = self.0.tasks.as_ref().ok_or_else(no_tasks)?;
        tasks
            .answer(caller(&context), &request.task_id, &request.input_responses)
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = self.0.tasks.as_ref().ok_or_else(no_tasks)?;
        tasks.cancel(caller(&context), &request.task_id).await
    }

    /// The listed definition of `name`: rmcp checks a 2026-07-28 call's `Mcp-Param-*` headers
    /// against the `x-mcp-header` properties of its input schema.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.0.by_name.get(name).map(|&i| self.0.listing[i].clone())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // One page holds every tool and no `nextCursor` is ever sent, so any cursor is one this
        // server did not give: "Invalid cursors SHOULD result in an error with code -32602"
        // (pagination), rather than the first page again, read as the next.
        if request.is_some_and(|r| r.cursor.is_some()) {
            let why = "Invalid cursor: this server lists every tool in one page";
            return Err(ErrorData::invalid_params(why, None));
        }
        let mut listed = ListToolsResult::with_all_items(self.0.listing.clone());
        // The listing changes only with a new deployment: fresh for five minutes, for this
        // caller (with authentication on, a shared cache must not serve it to another). Said
        // from 2026-07-28, the revision whose listing has these members; earlier ones list
        // as they were published.
        let version = context.meta.protocol_version();
        if version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str()) {
            listed.ttl_ms = Some(LISTING_TTL_MS);
            listed.cache_scope = Some(rmcp::model::CacheScope::Private);
        }
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
        let method = crate::server::shown(&request.method);
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
fn caller(context: &RequestContext<RoleServer>) -> Option<&str> {
    let parts = context.extensions.get::<http::request::Parts>();
    parts.and_then(super::plumbing::subject)
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
