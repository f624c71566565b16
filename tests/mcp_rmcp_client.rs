//! The Rust MCP SDK's own client (rmcp 3.11, `transport-streamable-http-client-reqwest`), the
//! one an agent written in Rust would use, against the server on loopback: at 2026-07-28
//! (`server/discover`, each request carrying its own metadata) and at the handshake revision
//! (`initialize`, 2025-11-25), it lists the tools, calls one, reads content and a tool error,
//! and answers a tool's question, its request for the model and for the client's roots through
//! its `ClientHandler`:
//! `input_required` rounds that rmcp's `call_tool` drives at 2026-07-28, `elicitation/create`
//! `sampling/createMessage` and `roots/list` on the call's stream at 2025-11-25. With the tasks extension
//! declared, a long-running tool's call is a task it polls with `tasks/get`.

use crate::common;

use rmcp::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorData, GetTaskParams, ProtocolVersion,
};
// Sampling, which 2026-07-28 deprecates (SEP-2577) and this server still serves (docs/mcp.md).
use oxp_lambda::{Registry, Tool};
#[allow(deprecated)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ListRootsResult};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

/// A client that shows forms, answering each with the last label its one property offers,
/// whose model answers every sampling request "A short summary.", and whose one root is
/// `file:///work/project`.
#[derive(Clone)]
struct ChoosesLast(ClientConfig);

impl ClientHandler for ChoosesLast {
    fn get_info(&self) -> ClientConfig {
        self.0.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap();
        let (key, property) = schema["properties"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let last = property["enum"].as_array().unwrap().last().unwrap().clone();
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({ key: last })))
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        _request: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let answer = crate::mcp_sampling::model_answer("A short summary.");
        Ok(serde_json::from_value(answer).unwrap())
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let roots = json!({"roots": [{"uri": "file:///work/project", "name": "project"}]});
        Ok(serde_json::from_value(roots).unwrap())
    }
}

/// The example tools and `Files.Roots`, which answers the client's roots' URIs.
async fn serve() -> (String, tokio::sync::oneshot::Sender<()>) {
    let roots = crate::mcp_sampling::roots_tool(Tool::builder("Files.Roots", "1.0.0"));
    let registry = Registry::builder()
        .tools(common::example_tools::tools())
        .tool(roots)
        .build()
        .unwrap();
    common::serve_app_on_loopback(common::app_with(registry, common::test_config())).await
}

/// A client of `config` connected to a server of its own ([`serve`]) as `lifecycle` says.
async fn connect(
    config: ClientConfig,
    lifecycle: ClientLifecycleMode,
) -> (
    RunningService<RoleClient, ChoosesLast>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (addr, stop) = serve().await;
    let transport = StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
    let client = ChoosesLast(config)
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .unwrap();
    (client, stop)
}

fn config(version: &str) -> ClientConfig {
    serde_json::from_value(json!({
        "protocolVersion": version,
        "capabilities": {"elicitation": {"form": {}}, "sampling": {}, "roots": {}},
        "clientInfo": {"name": "rmcp-test-client", "version": "1.0.0"},
    }))
    .unwrap()
}

fn arguments(value: Value) -> rmcp::model::JsonObject {
    value.as_object().unwrap().clone()
}

async fn lists_calls_and_answers(lifecycle: ClientLifecycleMode, version: ProtocolVersion) {
    let (client, _stop) = connect(config(version.as_str()), lifecycle).await;
    let negotiated = client.peer_info().unwrap().protocol_version.clone();
    assert_eq!(negotiated, version);

    let tools = client.list_all_tools().await.unwrap();
    let add = tools.iter().find(|t| t.name == "Calculator_Add").unwrap();
    assert_eq!(add.input_schema["type"], "object", "{version:?}");
    let sleep = tools.iter().find(|t| t.name == "Demo_Sleep").unwrap();
    let hints = sleep.annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(true), "{version:?}");

    let call = |name: &'static str, input: Value| {
        client.call_tool(CallToolRequestParams::new(name).with_arguments(arguments(input)))
    };
    let added = call("Calculator_Add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert_eq!(added.is_error, Some(false));
    let content = serde_json::to_value(&added.content).unwrap();
    assert_eq!(
        content,
        json!([{"type": "text", "text": "42"}]),
        "{version:?}"
    );

    let imaged = call("Demo_Image", json!({})).await.unwrap();
    let content = serde_json::to_value(&imaged.content).unwrap();
    assert_eq!(content[1]["type"], "image", "{version:?}: {content}");
    assert_eq!(content[1]["mimeType"], "image/png", "{version:?}");

    let failed = call("Doorbell_Ring", json!({"doorbell_id": "doorbell1"}))
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true), "{version:?}: {failed:?}");

    let question = json!({"prompt": "Ship it?", "choices": ["yes", "no"], "default": 0});
    let confirmed = call("Demo_Confirm", question).await.unwrap();
    assert_eq!(
        confirmed.is_error,
        Some(false),
        "{version:?}: {confirmed:?}"
    );
    let answer = confirmed.structured_content.unwrap_or_default();
    assert_eq!(answer["choice"], "no", "{version:?}: {answer}");
    let rooted = call("Files_Roots", json!({})).await.unwrap();
    let content = serde_json::to_value(&rooted.content).unwrap();
    assert_eq!(
        content[0]["text"], "file:///work/project",
        "{version:?}: {content}"
    );

    let summarized = call("Demo_Summarize", json!({"text": "A long text."}))
        .await
        .unwrap();
    let summary = summarized.structured_content.unwrap_or_default();
    assert_eq!(
        summary["summary"], "A short summary.",
        "{version:?}: {summary}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn rmcps_client_at_2026_07_28_lists_calls_and_answers_the_tools_questions_in_rounds() {
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    lists_calls_and_answers(lifecycle, ProtocolVersion::V_2026_07_28).await;
}

#[tokio::test]
async fn rmcps_client_at_2025_11_25_lists_calls_and_answers_the_tools_questions_on_the_calls_stream()
 {
    lists_calls_and_answers(
        ClientLifecycleMode::Initialize,
        ProtocolVersion::V_2025_11_25,
    )
    .await;
}

#[tokio::test]
async fn rmcps_client_with_the_tasks_extension_gets_a_long_call_as_a_task_and_polls_its_result() {
    let mut tasks = config(ProtocolVersion::V_2026_07_28.as_str());
    tasks.capabilities = ClientCapabilities::builder().enable_tasks().build();
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let (client, _stop) = connect(tasks, lifecycle).await;
    let sleep =
        CallToolRequestParams::new("Demo_Sleep").with_arguments(arguments(json!({"ms": 300})));
    let CallToolResponse::Task(created) = client.call_tool_once(sleep).await.unwrap() else {
        panic!("a long-running tool's call is a task for a client with the extension");
    };
    let id = created.task.task_id.clone();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let done = loop {
        let got = client
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .unwrap();
        let got = serde_json::to_value(&got).unwrap();
        if got["status"] != "working" {
            break got;
        }
        assert!(std::time::Instant::now() < end, "still working: {got}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["cancelled"], false,
        "{done}"
    );
    client.cancel().await.unwrap();
}
