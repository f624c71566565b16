//! A RAP runtime written from the published specification (`hydro-project/infinity`,
//! `docs/docs/rap/spec/basic/`: toolsets, tool invocation, tool result, cancellation, thread
//! closure), driving the server over HTTP on loopback. It loads the toolset with the validation
//! a runtime must apply (all of it or none), invokes, and reads every callback through the
//! published types, refusing what they refuse: an unknown field, a result with neither `text`
//! nor `content`, a content item of another shape, a result for no pending call.

use crate::common;

use common::receiver::Receiver;
use common::*;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashSet;

/// `basic/toolsets.md`: the toolset definition. Fields beyond the published ones are tolerated
/// at the top level (this server adds `version`); the tools are read strictly.
#[derive(Debug, Deserialize)]
struct Toolset {
    name: String,
    #[allow(dead_code)]
    description: Option<String>,
    endpoint: String,
    tools: Vec<ToolDefinition>,
    #[serde(rename = "needsMigration", default)]
    #[allow(dead_code)]
    needs_migration: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolDefinition {
    name: String,
    description: String,
    #[serde(rename = "inputSchema")]
    input_schema: Value,
    #[serde(default)]
    annotations: Option<Annotations>,
    #[serde(rename = "displayScript", default)]
    #[allow(dead_code)]
    display_script: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct Annotations {
    requires_auth: Option<String>,
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    long_running: Option<bool>,
}

/// `basic/tool-result.md`: the callback message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolResult {
    #[serde(rename = "type")]
    kind: String,
    group_id: String,
    id: String,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    content: Option<Vec<ContentItem>>,
    #[serde(default)]
    display_as: Option<Vec<Value>>,
    #[serde(default)]
    #[allow(dead_code)]
    subscription: bool,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ContentItem {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mediaType")]
        media_type: String,
    },
}

/// The toolset, or why a runtime must refuse all of it.
fn load(body: &str) -> Result<Toolset, String> {
    let toolset: Toolset = serde_json::from_str(body).map_err(|e| e.to_string())?;
    let name_ok = |n: &str| (1..=128).contains(&n.chars().count());
    if !name_ok(&toolset.name) {
        return Err("toolset name must be 1 to 128 characters".into());
    }
    url::Url::parse(&toolset.endpoint).map_err(|e| format!("endpoint: {e}"))?;
    if toolset.tools.is_empty() {
        return Err("a toolset has at least one tool".into());
    }
    let mut names = HashSet::new();
    for tool in &toolset.tools {
        let charset = tool
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !name_ok(&tool.name) || !charset || !names.insert(tool.name.clone()) {
            return Err(format!("bad or duplicate tool name {:?}", tool.name));
        }
        if tool.description.is_empty() || !tool.input_schema.is_object() {
            return Err(format!(
                "{}: description and an object inputSchema",
                tool.name
            ));
        }
        jsonschema::validator_for(&tool.input_schema)
            .map_err(|e| format!("{}: inputSchema is not a JSON Schema: {e}", tool.name))?;
    }
    Ok(toolset)
}

/// A callback, read through the published types and matched to a pending call.
fn receive(body: &Value, pending: &[(&str, &str)]) -> Result<ToolResult, String> {
    let result: ToolResult = serde_json::from_value(body.clone()).map_err(|e| e.to_string())?;
    if result.kind != "tool_result" {
        return Err(format!("type {:?}", result.kind));
    }
    if result.text.is_none() && result.content.is_none() {
        return Err("neither text nor content".into());
    }
    if !pending.contains(&(result.group_id.as_str(), result.id.as_str())) {
        return Err("a result for no pending call".into());
    }
    Ok(result)
}

struct Runtime {
    addr: String,
    endpoint: String,
    toolset: Toolset,
    receiver: Receiver,
}

impl Runtime {
    async fn start() -> Self {
        let app = example_app();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(app.serve(listener, std::future::pending()));
        let (status, body) = http_raw(&addr, "GET", "/.well-known/rap-toolset", "").await;
        assert_eq!(status, 200);
        let toolset = load(&body).unwrap_or_else(|e| panic!("the toolset is refused: {e}"));
        let endpoint = url::Url::parse(&toolset.endpoint)
            .unwrap()
            .path()
            .to_owned();
        Self {
            addr,
            endpoint,
            toolset,
            receiver: Receiver::ok().await,
        }
    }

    fn tool(&self, name: &str) -> &ToolDefinition {
        self.toolset.tools.iter().find(|t| t.name == name).unwrap()
    }

    /// Dispatches as a runtime must: a known operation, arguments checked against its schema.
    async fn invoke(&self, operation: &str, arguments: Value, id: &str) {
        let schema = &self.tool(operation).input_schema;
        assert!(
            jsonschema::is_valid(schema, &arguments),
            "runtime-side validation"
        );
        let invocation = json!({
            "operation": operation, "arguments": arguments, "id": id, "call_id": null,
            "callback_url": self.receiver.url, "group_id": "thread_xyz",
            "thread_ancestors": ["thread_root"], "user_id": "user_42"
        });
        let (status, _) =
            http_raw(&self.addr, "POST", &self.endpoint, &invocation.to_string()).await;
        assert_eq!(status, 200, "acknowledged at once");
    }
}

#[tokio::test]
async fn a_runtime_built_from_the_published_pages_loads_invokes_and_reads_every_result() {
    let rt = Runtime::start().await;
    assert_eq!(rt.endpoint, "/invoke");
    let sleep = rt.tool("Demo_Sleep").annotations.as_ref().unwrap();
    assert_eq!(sleep.long_running, Some(true));

    rt.invoke("Calculator_Add", json!({"a": 20, "b": 22}), "c1")
        .await;
    rt.invoke("Demo_Image", json!({}), "c2").await;
    rt.invoke("Doorbell_Ring", json!({"doorbell_id": "doorbell1"}), "c3")
        .await;
    let pending = [
        ("thread_xyz", "c1"),
        ("thread_xyz", "c2"),
        ("thread_xyz", "c3"),
    ];
    let hits = rt.receiver.wait_for(3).await;
    let mut results: Vec<ToolResult> = hits
        .iter()
        .map(|h| {
            assert_eq!(h.content_type, "application/json");
            receive(&h.body, &pending).unwrap_or_else(|e| panic!("refused {}: {e}", h.body))
        })
        .collect();
    results.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(results[0].text.as_deref(), Some("42"));
    assert_eq!(results[0].call_id, None);
    let image = results[1].content.as_ref().expect("content items");
    assert!(matches!(&image[0], ContentItem::Text { text } if text.contains("PNG")));
    assert!(
        matches!(&image[1], ContentItem::Image { media_type, data } if media_type == "image/png" && !data.is_empty())
    );
    assert!(results[1].display_as.is_none());
    let error = results[2].text.as_deref().unwrap();
    assert!(error.starts_with("Error: Doorbell ID not found"), "{error}");

    // Cancellation and thread closure: fire-and-forget, always 200.
    let cancel = json!({"thread_id": "thread_xyz", "tool_call_id": "c9"}).to_string();
    assert_eq!(
        http_raw(&rt.addr, "POST", "/cancel_tool_call", &cancel)
            .await
            .0,
        200
    );
    let close = json!({"thread_id": "thread_xyz"}).to_string();
    assert_eq!(
        http_raw(&rt.addr, "POST", "/close_thread", &close).await.0,
        200
    );
}

#[test]
fn the_runtime_refuses_what_the_published_types_refuse() {
    let pending = [("g", "i")];
    let ok = json!({"type": "tool_result", "group_id": "g", "id": "i", "text": "x"});
    assert!(receive(&ok, &pending).is_ok());
    for bad in [
        json!({"type": "tool_result", "group_id": "g", "id": "i"}),
        json!({"type": "tool_result", "group_id": "g", "id": "i", "text": "x", "extra": 1}),
        json!({"type": "tool_result", "group_id": "g", "id": "other", "text": "x"}),
        json!({"type": "tool_result", "group_id": "g", "id": "i",
               "content": [{"type": "image", "data": "AA=="}]}),
        json!({"type": "progress", "group_id": "g", "id": "i", "text": "x"}),
    ] {
        assert!(receive(&bad, &pending).is_err(), "{bad}");
    }
    let no_tools = json!({"name": "t", "endpoint": "https://x/invoke", "tools": []});
    assert!(load(&no_tools.to_string()).is_err());
    let long = json!({"name": "t", "endpoint": "https://x/invoke",
                      "tools": [{"name": "a".repeat(129), "description": "d", "inputSchema": {}}]});
    assert!(load(&long.to_string()).is_err());
}
