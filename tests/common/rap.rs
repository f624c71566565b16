//! The rig of the RAP tests (`tests/rap*.rs`): a server with the example tools and test tools
//! of its own, RAP's retries shortened, its dead letters in a file of its own; and the
//! invocations they send.

use super::*;
use oxp_lambda::config::{RapConfig, RetryPolicy};
use oxp_lambda::protocols::Rap;
use oxp_lambda::{Config, RapThread, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Test tools besides the examples; `gate` holds `Test.Wait` until a permit is added, and
/// `waiting` counts the runs of it waiting at the gate.
#[derive(Clone)]
pub struct Tools {
    pub gate: Arc<Semaphore>,
    pub waiting: Arc<AtomicUsize>,
    pub runs: Arc<AtomicUsize>,
}

impl Default for Tools {
    fn default() -> Self {
        Self {
            gate: Arc::new(Semaphore::new(0)),
            waiting: Arc::default(),
            runs: Arc::default(),
        }
    }
}

impl Tools {
    pub fn registry(&self) -> Registry {
        let (gate, waiting) = (self.gate.clone(), self.waiting.clone());
        let runs = self.runs.clone();
        let object = || Some(json!({"type": "object"}));
        Registry::builder()
            .tools(super::example_tools::tools())
            .tool(
                Tool::builder("Test.Wait", "1.0.0")
                    .description("Waits for the test to let it finish.")
                    .raw_handler(json!({"type": "object"}), object(), move |_, _| {
                        let (gate, waiting) = (gate.clone(), waiting.clone());
                        async move {
                            waiting.fetch_add(1, Ordering::SeqCst);
                            gate.acquire().await.unwrap().forget();
                            waiting.fetch_sub(1, Ordering::SeqCst);
                            Ok(json!({"released": true}))
                        }
                    }),
            )
            .tool(
                Tool::builder("Test.Echo", "1.0.0")
                    .description("Answers what it was told about the call.")
                    .raw_handler(json!({"type": "object"}), object(), |_, ctx: ToolContext| async move {
                        let thread = ctx.extension::<RapThread>().cloned();
                        Ok(json!({
                            "call_id": ctx.call_id,
                            "group_id": thread.as_ref().map(|t| t.group_id.clone()),
                            "thread_ancestors": thread.map(|t| t.thread_ancestors).unwrap_or_default(),
                            "user_id": ctx.user_id,
                        }))
                    }),
            )
            .tool(
                Tool::builder("Test.Count", "1.0.0")
                    .description("Counts its runs.")
                    .raw_handler(
                        json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 10}}, "required": ["n"]}),
                        object(),
                        move |_, _| {
                            runs.fetch_add(1, Ordering::SeqCst);
                            async { Ok(json!({})) }
                        },
                    ),
            )
            .tool(
                Tool::builder("Test.Big", "1.0.0")
                    .description("Answers 400 kB: two parts of a kept result.")
                    .raw_handler(json!({"type": "object"}), object(), |_, _| async {
                        Ok(json!({"b": "b".repeat(400_000)}))
                    }),
            )
            .tool(
                Tool::builder("Test.Fail", "1.0.0")
                    .description("Fails.")
                    .raw_handler(json!({"type": "object"}), object(), |_, _| async {
                        Err(ToolError::new("The mailbox is full")
                            .developer_message("INTERNAL-DETAIL /srv/mail/quota.db")
                            .retry_after(Duration::from_secs(30))
                            .additional_prompt_content("Ask the user to delete old mail."))
                    }),
            )
            .tool(
                Tool::builder("Test.Panic", "1.0.0")
                    .description("Panics.")
                    .raw_handler(json!({"type": "object"}), object(), |_, _| async {
                        panic!("PANIC-DETAIL password=hunter2")
                    }),
            )
            .tool(
                Tool::builder("Versioned.Tool", "1.0.0")
                    .description("v1")
                    .raw_handler(json!({"type": "object"}), None, |_, _| async { Ok(Value::Null) }),
            )
            .tool(
                Tool::builder("Versioned.Tool", "2.0.0")
                    .description("v2")
                    .raw_handler(json!({"type": "object"}), None, |_, _| async { Ok(Value::Null) }),
            )
            .build()
            .unwrap()
    }
}

pub struct Rig {
    pub app: App,
    pub tools: Tools,
    pub dead_letter_file: PathBuf,
}

impl Rig {
    pub async fn new() -> Self {
        Self::with(|_| {}).await
    }

    pub async fn with(edit: impl FnOnce(&mut Config)) -> Self {
        Self::build(edit, |_| {}).await
    }

    pub async fn with_rap(edit: impl FnOnce(&mut RapConfig) + Send + 'static) -> Self {
        Self::build(|_| {}, edit).await
    }

    /// The server's configuration edited by `edit`, RAP's settings by `rap`.
    pub async fn build(
        edit: impl FnOnce(&mut Config),
        rap: impl FnOnce(&mut RapConfig) + Send + 'static,
    ) -> Self {
        let dead_letter_file =
            std::env::temp_dir().join(format!("oxp-dead-{}.jsonl", uuid::Uuid::new_v4()));
        let mut config = Config::default();
        edit(&mut config);
        let file = dead_letter_file.clone();
        let tools = Tools::default();
        let registry = tools.registry();
        let builder = App::builder(registry)
            .config(config)
            .configure::<Rap>(move |r| {
                r.dead_letter_file = file;
                r.retry = RetryPolicy {
                    max_attempts: 4,
                    base: Duration::from_millis(20),
                    max_delay: Duration::from_secs(3),
                    total: Duration::from_secs(20),
                    attempt_timeout: Duration::from_secs(2),
                };
                rap(r);
            });
        Self {
            app: build(builder),
            tools,
            dead_letter_file,
        }
    }

    pub async fn invoke(&self, body: Value) -> Reply {
        post(&self.app, "/invoke", body.to_string()).await
    }

    /// Sends `body` and checks that it is acknowledged.
    pub async fn accept(&self, body: Value) {
        accepted(&self.invoke(body).await);
    }

    /// Waits for every accepted invocation to finish (delivered or dead-lettered).
    pub async fn settle(&self) {
        assert_eq!(self.app.drain(Duration::from_secs(30)).await, 0);
    }

    pub fn dead_letters(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.dead_letter_file)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.dead_letter_file);
    }
}

pub fn invocation(callback_url: &str, operation: &str, arguments: Value) -> Value {
    json!({
        "operation": operation,
        "arguments": arguments,
        "id": "call_abc123",
        "call_id": null,
        "callback_url": callback_url,
        "group_id": "thread_xyz",
        "thread_ancestors": ["thread_root", "thread_parent"],
        "user_id": "user_42"
    })
}

/// `body` as a new invocation: its own `id` (a repeated `id` is the same invocation, which
/// runs once).
pub fn with_id(mut body: Value, id: &str) -> Value {
    body["id"] = json!(id);
    body
}

/// `Calculator_Add` of 1 and 2, answered to `callback_url`.
pub fn add(callback_url: &str) -> Value {
    invocation(callback_url, "Calculator_Add", json!({"a": 1, "b": 2}))
}

pub fn accepted(reply: &Reply) {
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.json, json!({"status": "accepted"}));
}

/// The error object a failed call's `text` carries.
pub fn error_of(result: &Value) -> Value {
    assert_eq!(result["type"], "tool_result");
    // The published convention: `Error: <message>`, then the detail as JSON on the next line.
    let text = result["text"].as_str().unwrap();
    let (sentence, detail) = text
        .split_once('\n')
        .unwrap_or_else(|| panic!("no detail line: {result}"));
    assert!(sentence.starts_with("Error: "), "{result}");
    let detail: Value = serde_json::from_str(detail)
        .unwrap_or_else(|e| panic!("the detail is not JSON ({e}): {result}"));
    assert!(sentence.contains(detail["error"]["message"].as_str().unwrap()));
    detail["error"].clone()
}
