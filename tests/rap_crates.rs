//! A runtime built on the RAP project's own crates (`rap-client` 0.2, `rap-protocol` 0.2)
//! against the server on loopback: it loads the toolset with `rap_client`'s `ToolsetLoader`
//! (the manifest read as `rap_protocol::ToolsetManifest`), invokes with
//! `rap_protocol::RapInvocation`, and takes every kind of callback the server sends through
//! `rap_client`'s callback server, which answers 400 to a body `rap_protocol::RapCallback`
//! does not read (the server would retry it and dead-letter it, and the runtime never see it).

use crate::common;
use crate::talk_back::{SECRET, event};

use common::example_tools;
use oxp_lambda::{App, Registry};
use rap_client::http::{HttpClient, InMemoryToolsetCache, SimpleHttpClient};
use rap_client::toolset_loader::ToolsetLoader;
use rap_protocol::ToolsetManifest;
use rap_protocol::{
    DisplaySegment, ProviderCallId, RapCallback, RapInvocation, RapToolResult,
    RapToolResultContent, ThreadId, ToolCallId,
};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

const THREAD: &str = "thread-crates";

/// The example tools with provider `demo`'s authorization, served on a free loopback port.
async fn serve() -> (App, String, tokio::sync::oneshot::Sender<()>) {
    let mut vars = common::DEMO_OAUTH.to_vec();
    vars.push(("OXP_OAUTH_PENDING_SECS", "1"));
    let config = common::test_config_with(&vars);
    let registry = Registry::builder()
        .tools(example_tools::tools())
        .tool(example_tools::profile_tool())
        .state(example_tools::UserInfoUrl(None))
        .build()
        .unwrap();
    let app = common::build(
        App::builder(registry)
            .config(config)
            .secret("DEMO_WEBHOOK_SECRET", SECRET),
    );
    let (addr, stop) = common::serve_app_on_loopback(app.clone()).await;
    (app, format!("http://{addr}"), stop)
}

/// The runtime: its HTTP client, the toolset's endpoint and the callbacks not yet looked at.
struct Runtime {
    http: SimpleHttpClient,
    endpoint: String,
    callback_url: String,
    channel: UnboundedReceiver<RapCallback>,
    unread: Vec<RapCallback>,
}

impl Runtime {
    /// A runtime invoking `manifest`'s endpoint, its callbacks taken by rap-client's server.
    async fn start(manifest: &ToolsetManifest) -> Self {
        let (callbacks, channel) = rap_client::callback_server::start_callback_channel()
            .await
            .unwrap();
        Runtime {
            http: SimpleHttpClient::new(),
            endpoint: manifest.endpoint.clone(),
            callback_url: format!("{callbacks}/callback"),
            channel,
            unread: Vec::new(),
        }
    }

    /// Call `id` of `operation` (its provider's call id `pc-<id>`) for user `ana`.
    fn invocation(&self, operation: &str, arguments: Value, id: &str) -> RapInvocation {
        RapInvocation {
            operation: operation.into(),
            arguments,
            id: ToolCallId::from(id.to_owned()),
            call_id: Some(ProviderCallId::from(format!("pc-{id}"))),
            callback_url: self.callback_url.clone(),
            group_id: ThreadId::from(THREAD.to_owned()),
            user_id: Some("ana".into()),
            thread_ancestors: None,
        }
    }

    async fn send(&self, invocation: RapInvocation) {
        let body = serde_json::to_string(&invocation).unwrap();
        let status = self.http.post(&self.endpoint, &body).await.unwrap();
        assert_eq!(status, 200, "{} acknowledged", invocation.operation);
    }

    /// Invokes `operation` as call `id` ([`Runtime::invocation`]).
    async fn invoke(&self, operation: &str, arguments: Value, id: &str) {
        self.send(self.invocation(operation, arguments, id)).await;
    }

    /// The first callback `pick` takes (20 s at most), whenever it came; others stay unread.
    async fn next<T>(&mut self, what: &str, pick: impl Fn(&RapCallback) -> Option<T>) -> T {
        if let Some(at) = self.unread.iter().position(|c| pick(c).is_some()) {
            return pick(&self.unread.remove(at)).unwrap();
        }
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(callback) = self.channel.recv().await {
                match pick(&callback) {
                    Some(found) => return found,
                    None => self.unread.push(callback),
                }
            }
            panic!("the callback server stopped");
        })
        .await;
        found.unwrap_or_else(|_| panic!("no {what} (unread: {:?})", self.unread))
    }

    /// The `tool_result` of call `id`.
    async fn result_of(&mut self, id: &str) -> RapToolResult {
        self.next(&format!("result of {id}"), |c| match c {
            RapCallback::ToolResult(r) if r.id.as_str() == id => Some(r.clone()),
            _ => None,
        })
        .await
    }
}

/// The toolset, loaded as the RAP project's runtime loads it, with what the server serves.
async fn load(base: &str) -> ToolsetManifest {
    let loader = ToolsetLoader::new(SimpleHttpClient::new(), InMemoryToolsetCache::new());
    let thread = ThreadId::from(THREAD.to_owned());
    let mut toolsets = loader
        .load_toolsets(&[base.to_owned()], &thread)
        .await
        .unwrap();
    assert_eq!(toolsets.len(), 1);
    let manifest = toolsets.remove(0).manifest;
    assert_eq!(manifest.endpoint, format!("{base}/invoke"));
    assert!(!manifest.needs_migration, "docs/rap.md, Migration");
    let names: Vec<&str> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
    for name in [
        "Calculator_Add",
        "Doorbell_Ring",
        "Demo_Confirm",
        "Demo_Image",
        "Demo_Profile",
        "Demo_Sleep",
        "Demo_Watch",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    for tool in &manifest.tools {
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        assert!(!tool.description.is_empty(), "{}", tool.name);
    }
    let sleep = manifest.tools.iter().find(|t| t.name == "Demo_Sleep");
    let annotations = sleep.and_then(|t| t.annotations.clone()).unwrap();
    assert_eq!(annotations["readOnly"], true, "{annotations}");
    assert_eq!(annotations["longRunning"], true, "{annotations}");
    manifest
}

/// Results: as text, as a tool error, with content and display segments.
async fn results(runtime: &mut Runtime) {
    // A result as text, its provider's call id echoed; from a child thread, its ancestors named.
    let mut add = runtime.invocation("Calculator_Add", json!({"a": 20, "b": 22}), "add");
    add.thread_ancestors = Some(vec![ThreadId::from("thread-root".to_owned())]);
    runtime.send(add).await;
    let added = runtime.result_of("add").await;
    assert_eq!(added.text.as_deref(), Some("42"));
    assert_eq!(added.call_id.as_ref().map(|c| c.as_str()), Some("pc-add"));
    assert_eq!(added.group_id.as_str(), THREAD);

    // A tool's error as a result the runtime reads; an invocation whose `call_id` is null (the
    // published types write it so when the provider gave none) answered without one.
    let mut door = runtime.invocation("Doorbell_Ring", json!({"doorbell_id": "doorbell1"}), "door");
    door.call_id = None;
    runtime.send(door).await;
    let failed = runtime.result_of("door").await;
    assert!(failed.call_id.is_none(), "{failed:?}");
    let text = failed.text.unwrap();
    assert!(text.contains("Doorbell ID not found"), "{text}");

    // Content: the text item and the image, as the published types have them.
    runtime.invoke("Demo_Image", json!({}), "image").await;
    let imaged = runtime.result_of("image").await;
    let content = imaged.content.unwrap();
    assert!(
        matches!(&content[0], RapToolResultContent::Text { text } if text.contains("PNG")),
        "{content:?}"
    );
    assert!(
        matches!(&content[1], RapToolResultContent::Image { media_type, data }
            if media_type == "image/png" && !data.is_empty()),
        "{content:?}"
    );
    let display = rap_protocol::build_display_segments(imaged.display_as.as_deref(), "");
    assert!(matches!(display.last(), Some(DisplaySegment::Text(_))));
}

/// What a call says before its result: progress, a view, a question answered.
async fn talk_back(runtime: &mut Runtime, base: &str) {
    // Progress and a view, as view updates, then the result.
    runtime
        .invoke("Demo_Sleep", json!({"ms": 200}), "sleep")
        .await;
    let progress = runtime
        .next("progress", |c| match c {
            RapCallback::ViewUpdate(v) if v.view_type == "progress" => Some(v.content.clone()),
            _ => None,
        })
        .await;
    assert!(progress["done"].is_number(), "{progress}");
    let view = runtime
        .next("the view sleep", |c| match c {
            RapCallback::ViewUpdate(v) if v.view_type == "sleep" => Some(v.content.clone()),
            _ => None,
        })
        .await;
    assert!(view["slept_ms"].as_u64().unwrap() >= 200, "{view}");
    runtime.result_of("sleep").await;
    runtime
        .unread
        .retain(|c| !matches!(c, RapCallback::ViewUpdate(_)));

    // A question, answered at its response URL with the runtime's client.
    let arguments = json!({"prompt": "Ship it?", "choices": ["yes", "no"], "default": 0});
    runtime.invoke("Demo_Confirm", arguments, "confirm").await;
    let choice = runtime
        .next("the user's choice", |c| match c {
            RapCallback::UserChoice(u) => Some(u.clone()),
            _ => None,
        })
        .await;
    assert_eq!(choice.id.as_str(), "confirm");
    assert_eq!(
        choice.call_id.as_ref().map(|c| c.as_str()),
        Some("pc-confirm")
    );
    assert_eq!(choice.choices, ["yes", "no"]);
    assert!(
        choice
            .response_url
            .starts_with(&format!("{base}/user_choice_response/"))
    );
    let answer = json!({"id": "confirm", "selected": 1}).to_string();
    let status = runtime.http.post(&choice.response_url, &answer).await;
    assert_eq!(status.unwrap(), 200);
    let confirmed = runtime.result_of("confirm").await.text.unwrap();
    assert!(confirmed.contains("no"), "{confirmed}");
}

/// A subscription and its events.
async fn subscription(runtime: &mut Runtime, app: &App) {
    // A subscription and its events, the last marked final.
    let arguments = json!({"topic": "crates", "max_events": 2});
    runtime.invoke("Demo_Watch", arguments, "watch").await;
    assert_eq!(runtime.result_of("watch").await.subscription, Some(true));
    for n in 1..=2 {
        assert_eq!(event(app, "crates", n).await.status, 202);
        let taken = runtime
            .next("a subscription event", |c| match c {
                RapCallback::SubscriptionEvent(e) => Some(e.clone()),
                _ => None,
            })
            .await;
        assert_eq!(taken.tool_call_id.as_str(), "watch");
        assert_eq!(taken.text, json!({"n": n}).to_string());
        assert_eq!(taken.r#final == Some(true), n == 2, "{taken:?}");
    }
}

/// An authorization link, then the call's end when it is never used.
async fn authorization(runtime: &mut Runtime) {
    // A user's authorization asked for, then the call's end when it is never given.
    runtime.invoke("Demo_Profile", json!({}), "profile").await;
    let asked = runtime
        .next("an authorization link", |c| match c {
            RapCallback::OAuth(o) => Some(o.clone()),
            _ => None,
        })
        .await;
    assert_eq!(asked.id.as_str(), "profile");
    assert_eq!(
        asked.call_id.as_ref().map(|c| c.as_str()),
        Some("pc-profile")
    );
    let link = "https://tools.example.com/oauth/demo/start?t=";
    assert!(asked.auth_url.starts_with(link), "{}", asked.auth_url);
    let ended = runtime.result_of("profile").await.text.unwrap();
    assert!(ended.contains("authorization_timeout"), "{ended}");
}

#[tokio::test]
async fn a_runtime_on_the_rap_projects_crates_loads_the_toolset_and_reads_every_callback() {
    let (app, base, _stop) = serve().await;
    let manifest = load(&base).await;
    let mut runtime = Runtime::start(&manifest).await;
    results(&mut runtime).await;
    talk_back(&mut runtime, &base).await;
    subscription(&mut runtime, &app).await;
    authorization(&mut runtime).await;
    assert!(runtime.unread.is_empty(), "{:?}", runtime.unread);
}
