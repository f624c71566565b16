//! The fixture tools of the official MCP conformance suite (npm
//! `@modelcontextprotocol/conformance`), served through the same public API a user has:
//! `cargo run --example mcp_conformance -- --port 8080`, then
//! `conformance server --url http://127.0.0.1:8080/mcp`. The test command runs the suite
//! against it (`scripts/mcp-conformance`); `tests/mcp-conformance-expected.yml` lists the
//! scenarios a stateless JSON tool server cannot serve, each with its reason.

#[path = "mcp_conformance/client_asks.rs"]
mod client_asks;

use base64::Engine;
use oxp_lambda::{
    Content, Filled, Form, NoInput, Registry, RegistryBuilder, TaskSupport, Tool, ToolBuilder,
    ToolContext, ToolError, ToolOutput,
};
use serde_json::{Value, json};

/// A 1x1 red PNG.
const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

fn png() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(RED_PIXEL_PNG)
        .expect("a valid constant")
}

/// A WAV file of 8 silent samples (8 kHz, 8-bit mono).
fn wav() -> Vec<u8> {
    let samples = [128u8; 8];
    let mut wav = Vec::with_capacity(44 + samples.len());
    let len = |n: usize| u32::try_from(n).expect("small").to_le_bytes();
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&len(36 + samples.len()));
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&8000u32.to_le_bytes()); // sample rate
    wav.extend_from_slice(&8000u32.to_le_bytes()); // byte rate
    wav.extend_from_slice(&1u16.to_le_bytes()); // block align
    wav.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&len(samples.len()));
    wav.extend_from_slice(&samples);
    wav
}

fn resource() -> Content {
    Content::resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )
}

async fn simple_text(_: NoInput, _: ToolContext) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::of([Content::text(
        "This is a simple text response for testing.",
    )]))
}

async fn image(_: NoInput, _: ToolContext) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::of([Content::image(png(), "image/png")]))
}

async fn audio(_: NoInput, _: ToolContext) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::of([Content::audio(wav(), "audio/wav")]))
}

async fn embedded(_: NoInput, _: ToolContext) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::of([resource()]))
}

async fn mixed(_: NoInput, _: ToolContext) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::of([
        Content::text("Multiple content types test:"),
        Content::image(png(), "image/png"),
        resource(),
    ]))
}

async fn error(_: NoInput, _: ToolContext) -> Result<(), ToolError> {
    Err(ToolError::new(
        "This tool intentionally returns an error for testing",
    ))
}

/// The suite's JSON Schema 2020-12 tool: its input schema must be listed as written, the
/// broader vocabulary of 2026-07-28 (`$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`) included.
fn json_schema_2020_12() -> Tool {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    });
    Tool::builder("json_schema_2020_12_tool", "1.0.0")
        .description("Tool with JSON Schema 2020-12 features")
        .raw_handler(schema, None, |input: Value, _| async move { Ok(input) })
}

/// A form of one text field `field` under `key`.
fn text_form(key: &str, message: &str, field: &str) -> Form {
    let schema =
        json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]});
    Form::new(key, message, schema)
}

/// The text of what the user typed into `field` of `filled`.
fn typed(filled: &Filled, field: &str) -> String {
    match filled {
        Filled::Accepted(values) => values
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        Filled::Declined => "(declined)".into(),
        Filled::Cancelled => "(cancelled)".into(),
    }
}

/// Asks the user's name (2026-07-28: an input_required round, key `user_name`).
async fn elicitation(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let filled = ctx
        .fill(text_form("user_name", "What is your name?", "name"))
        .await?;
    Ok(format!("Hello, {}!", typed(&filled, "name")))
}

/// Asks for a confirmation; the retry that carries the state answers "state-ok".
async fn confirm(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let schema =
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
    let filled = ctx
        .fill(Form::new("confirm", "Please confirm", schema))
        .await?;
    let ok = matches!(&filled, Filled::Accepted(v) if v.get("ok") == Some(&Value::Bool(true)));
    Ok(format!("state-ok: confirmed={ok}"))
}

/// What the user did with a form, as the handshake scenarios want it said.
fn said(filled: &Filled) -> String {
    match filled {
        Filled::Accepted(values) => {
            format!("action=accept, content={}", Value::Object(values.clone()))
        }
        Filled::Declined => "action=decline, content={}".into(),
        Filled::Cancelled => "action=cancel, content={}".into(),
    }
}

/// Input of `test_elicitation`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Message {
    /// The message to show the user.
    message: String,
}

/// Asks the user a username and an email (at 2025-06-18 and 2025-11-25 on the call's stream).
async fn elicitation_handshake(input: Message, ctx: ToolContext) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    });
    let filled = ctx.fill(Form::new("info", input.message, schema)).await?;
    Ok(format!("User response: {}", said(&filled)))
}

/// A form whose fields have defaults, of every primitive type (SEP-1034).
async fn elicitation_defaults(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": true},
    }});
    let filled = ctx
        .fill(Form::new("defaults", "Your details", schema))
        .await?;
    Ok(format!("Elicitation completed: {}", said(&filled)))
}

/// A form of the five enum shapes (SEP-1330).
async fn elicitation_enums(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let titled = |pairs: &[(&str, &str)]| -> Vec<Value> {
        pairs
            .iter()
            .map(|(v, t)| json!({"const": v, "title": t}))
            .collect()
    };
    let schema = json!({"type": "object", "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "oneOf": titled(&[
            ("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")])},
        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                       "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array",
                          "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "items": {"anyOf": titled(&[
            ("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")])}},
    }});
    let filled = ctx.fill(Form::new("enums", "Pick options", schema)).await?;
    Ok(format!("Elicitation completed: {}", said(&filled)))
}

/// Two rounds: a name, then a colour.
async fn multi_round(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let name = ctx
        .fill(text_form("step1", "Step 1: What is your name?", "name"))
        .await?;
    let color = ctx
        .fill(text_form(
            "step2",
            "Step 2: What is your favorite color?",
            "color",
        ))
        .await?;
    Ok(format!(
        "{} likes {}",
        typed(&name, "name"),
        typed(&color, "color")
    ))
}

/// A tool whose `region` argument travels in the `Mcp-Param-Region` header too (SEP-2243):
/// rmcp checks the header against the argument.
fn custom_header() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"}
        },
        "required": ["region"]
    });
    Tool::builder("test_custom_header", "1.0.0")
        .description("Echoes its region, which the client also sends as a header")
        .raw_handler(schema, None, |input: Value, _| async move {
            Ok(input["region"].clone())
        })
}

/// Input of `greet`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Named {
    /// Who to greet.
    name: String,
}

/// The tasks scenarios' synchronous tool.
async fn greet(input: Named, _: ToolContext) -> Result<String, ToolError> {
    Ok(format!("Hello, {}!", input.name))
}

/// Input of `slow_compute`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Seconds {
    /// How long to compute.
    #[schemars(range(min = 0, max = 3600))]
    seconds: f64,
    /// What the suite calls this run (unused).
    #[allow(dead_code)]
    label: Option<String>,
}

/// The tasks scenarios' long-running tool: sleeps `seconds`, stops early when cancelled.
async fn slow_compute(input: Seconds, ctx: ToolContext) -> Result<String, ToolError> {
    tokio::select! {
        () = tokio::time::sleep(std::time::Duration::from_secs_f64(input.seconds)) => {}
        () = ctx.cancelled() => return Err(ToolError::new("cancelled")),
    }
    Ok(format!("computed for {} s", input.seconds))
}

/// Reports 0, 50 and 100 of 100, about 50 ms apart: the client that sent a progress token gets
/// them on the request's stream before the result.
async fn with_progress(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    for done in [0.0, 50.0, 100.0] {
        if done > 0.0 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        ctx.progress(done, Some(100.0), "working").await;
    }
    Ok("done".to_owned())
}

/// Input of `confirm_delete`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct File {
    /// The file to delete.
    filename: String,
}

/// A long-running tool that asks before it acts (as a task: `input_required` until
/// `tasks/update` answers).
async fn confirm_delete(input: File, ctx: ToolContext) -> Result<String, ToolError> {
    let schema = json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}});
    let filled = ctx
        .fill(Form::new(
            "confirm",
            format!("Delete {}?", input.filename),
            schema,
        ))
        .await?;
    let confirmed =
        matches!(&filled, Filled::Accepted(v) if v.get("confirm") == Some(&Value::Bool(true)));
    Ok(if confirmed { "deleted" } else { "kept" }.to_owned())
}

/// A long-running tool that asks two questions at once (`join!`): both are open together, and
/// the task works again once the user has answered both, in any order.
async fn multi_input(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}},
    });
    let (first, second) = tokio::join!(
        ctx.fill(Form::new("first", "First input", schema.clone())),
        ctx.fill(Form::new("second", "Second input", schema)),
    );
    Ok(format!(
        "{} and {}",
        typed(&first?, "name"),
        typed(&second?, "name")
    ))
}

/// Asks the user's name within the request (an `input_required` round), then goes on as a
/// task (`ctx.detach`), whose result greets the name.
async fn named_task(_: NoInput, ctx: ToolContext) -> Result<String, ToolError> {
    let filled = ctx
        .fill(text_form("user_name", "What is your name?", "name"))
        .await?;
    ctx.detach().await?;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    Ok(format!("Hello, {}!", typed(&filled, "name")))
}

/// A long-running tool that fails after a moment (a tool error: the task completes with it).
async fn failing_job(_: NoInput, _: ToolContext) -> Result<(), ToolError> {
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    Err(ToolError::new("The job failed"))
}

/// A long-running tool that crashes: a panic is the server's failure, not the tool's answer,
/// so its task ends `failed` with a JSON-RPC error (the panic's text only in the log).
async fn protocol_error_job(_: NoInput, _: ToolContext) -> Result<(), ToolError> {
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    panic!("protocol_error_job crashes, as the suite asks");
}

/// Every fixture tool the suite calls that a stateless server can serve.
fn registry() -> Registry {
    let registry = client_asks::tools(Registry::builder());
    task_tools(asking_tools(content_tools(registry)))
        .build()
        .expect("the fixture tools are valid")
}

/// A read-only fixture tool.
fn tool(name: &str, description: &str) -> ToolBuilder {
    Tool::builder(name, "1.0.0")
        .description(description)
        .read_only()
}

/// The tools that answer: each kind of content, an error, progress, schemas and headers, and
/// the stateless scenario's diagnostics (a tool that logs nothing to a request that did not ask
/// for log messages; `test_missing_capability`, which needs the client's model, is in
/// client_asks.rs).
fn content_tools(registry: RegistryBuilder) -> RegistryBuilder {
    registry
        .tool(tool("test_simple_text", "Returns simple text content").handler(simple_text))
        .tool(tool("test_image_content", "Returns image content").handler(image))
        .tool(tool("test_audio_content", "Returns audio content").handler(audio))
        .tool(tool("test_embedded_resource", "Returns an embedded resource").handler(embedded))
        .tool(
            tool(
                "test_multiple_content_types",
                "Returns text, image and resource content",
            )
            .handler(mixed),
        )
        .tool(tool("test_error_handling", "Always fails").handler(error))
        .tool(tool("test_tool_with_progress", "Reports its progress").handler(with_progress))
        .tool(json_schema_2020_12())
        .tool(custom_header())
        .tool(
            tool("test_logging_tool", "Answers without logging to the client").handler(simple_text),
        )
}

/// The tools that ask the user: at 2026-07-28 in `input_required` rounds (a question on the
/// response, never a request of the server's own), at the handshake revisions on the call's
/// stream, to a client whose session says it shows forms.
fn asking_tools(registry: RegistryBuilder) -> RegistryBuilder {
    registry
        .tool(
            tool(
                "test_input_required_result_elicitation",
                "Asks the user's name",
            )
            .handler(elicitation),
        )
        .tool(
            tool(
                "test_input_required_result_request_state",
                "Asks for a confirmation",
            )
            .handler(confirm),
        )
        .tool(
            tool(
                "test_input_required_result_tampered_state",
                "Asks for a confirmation",
            )
            .handler(confirm),
        )
        .tool(
            tool(
                "test_input_required_result_multi_round",
                "Asks a name, then a colour",
            )
            .handler(multi_round),
        )
        .tool(tool("test_streaming_elicitation", "Asks the user's name").handler(elicitation))
        .tool(
            tool("test_elicitation", "Asks the user for information")
                .handler(elicitation_handshake),
        )
        .tool(
            tool(
                "test_elicitation_sep1034_defaults",
                "Asks a form with defaults",
            )
            .handler(elicitation_defaults),
        )
        .tool(
            tool("test_elicitation_sep1330_enums", "Asks a form of enums")
                .handler(elicitation_enums),
        )
}

/// The tasks extension's fixtures: a synchronous tool and long-running ones, which a client
/// declaring the extension gets as tasks.
fn task_tools(registry: RegistryBuilder) -> RegistryBuilder {
    let long = |name: &str, description: &str| {
        Tool::builder(name, "1.0.0")
            .description(description)
            .long_running()
    };
    registry
        .tool(tool("greet", "Greets by name").handler(greet))
        .tool(long("slow_compute", "Computes for a number of seconds").handler(slow_compute))
        .tool(
            long("confirm_delete", "Deletes a file once the user confirms").handler(confirm_delete),
        )
        .tool(long("multi_input", "Asks two questions at once").handler(multi_input))
        .tool(
            long(
                "test_tool_with_task",
                "Asks a name, then greets it as a task",
            )
            .asks_first()
            // The suite's "task support required" fixtures: served only as tasks.
            .task_support(TaskSupport::Required)
            .handler(named_task),
        )
        .tool(long("protocol_error_job", "Crashes after a moment").handler(protocol_error_job))
        .tool(
            long("failing_job", "Fails after a moment")
                .task_support(TaskSupport::Required)
                .handler(failing_job),
        )
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    oxp_lambda::run(registry()).await
}
