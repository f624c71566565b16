//! The fixture tools of the official MCP conformance suite (npm
//! `@modelcontextprotocol/conformance`), served through the same public API a user has:
//! `cargo run --example mcp_conformance -- --port 8080`, then
//! `conformance server --url http://127.0.0.1:8080/mcp`. The test command runs the suite
//! against it (`scripts/mcp-conformance`); `tests/mcp-conformance-expected.yml` lists the
//! scenarios a stateless JSON tool server cannot serve, each with its reason.

use base64::Engine;
use oxp_lambda::{Content, NoInput, Registry, Tool, ToolContext, ToolError, ToolOutput};
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

/// The suite's JSON Schema 2020-12 tool: its input schema must be listed as written.
fn json_schema_2020_12() -> Tool {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"}
        },
        "additionalProperties": false
    });
    Tool::builder("json_schema_2020_12_tool", "1.0.0")
        .description("Tool with JSON Schema 2020-12 features")
        .raw_handler(schema, None, |input: Value, _| async move { Ok(input) })
}

/// Every fixture tool the suite calls that a stateless server can serve.
fn registry() -> Registry {
    let tool = |name: &str, description: &str| {
        Tool::builder(name, "1.0.0")
            .description(description)
            .read_only()
    };
    Registry::builder()
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
        .tool(json_schema_2020_12())
        .build()
        .expect("the fixture tools are valid")
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    oxp_lambda::run(registry()).await
}
