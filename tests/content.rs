//! Rich results and annotations on every protocol: content items and display segments, their
//! bounds, annotations in each protocol's names, and refusals without developer detail.

use crate::common;

use base64::Engine;
use common::example_tools;
use common::mcp::{post_mcp, rpc, text_json};
use common::receiver::Receiver;
use common::*;
use oxp_lambda::{Content, NoInput, Registry, Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{Value, json};

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// A POST to `/mcp`: its status and its body as JSON (`null` when empty).
async fn mcp(app: &App, message: Value) -> (u16, Value) {
    let (status, _, text) = post_mcp(app, &message.to_string(), &[]).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn is_png(base64: &Value) -> bool {
    base64::engine::general_purpose::STANDARD
        .decode(base64.as_str().unwrap())
        .unwrap()
        .starts_with(PNG_SIGNATURE)
}

#[tokio::test]
async fn oxp_content_alone_is_the_value_as_content_blocks() {
    let reply = call(
        &example_app(),
        json!({"request": {"tool_id": "Demo.Image"}}),
    )
    .await;
    let value = &reply.json["result"]["value"];
    assert_eq!(value[0]["type"], "text", "{}", reply.text);
    assert!(value[0]["text"].as_str().unwrap().contains("PNG"));
    assert_eq!(value[1]["type"], "image");
    assert_eq!(value[1]["mimeType"], "image/png");
    assert!(is_png(&value[1]["data"]));
}

/// A content item of every kind: text, an image, audio, a text and a binary resource, a link.
fn every_kind() -> [Content; 6] {
    [
        Content::text("t"),
        Content::image(PNG_SIGNATURE.to_vec(), "image/png"),
        Content::audio(vec![1, 2, 3], "audio/wav"),
        Content::resource_text("file:///a.txt", "text/plain", "a"),
        Content::resource_blob("file:///b.bin", "application/octet-stream", vec![0, 255]),
        Content::link("https://example.com/r", "report"),
    ]
}

/// OXP carries content alone as its `value` in MCP's shape of content blocks (docs/oxp.md): of
/// every kind, the same array as MCP's `content` for the same result, byte for byte.
#[tokio::test]
async fn oxp_content_of_every_kind_is_the_value_mcp_answers_as_its_content() {
    let tool = Tool::builder("T.Kinds", "1.0.0").handler(|_: NoInput, _: ToolContext| async {
        Ok::<_, ToolError>(ToolOutput::of(every_kind()))
    });
    let app = app_with(
        Registry::builder().tool(tool).build().unwrap(),
        test_config(),
    );
    let oxp = call(&app, json!({"request": {"tool_id": "T.Kinds"}})).await;
    let value = &oxp.json["result"]["value"];
    let kinds: Vec<&str> = value
        .as_array()
        .unwrap_or_else(|| panic!("{}", oxp.text))
        .iter()
        .map(|block| block["type"].as_str().unwrap())
        .collect();
    let every = [
        "text",
        "image",
        "audio",
        "resource",
        "resource",
        "resource_link",
    ];
    assert_eq!(kinds, every);
    assert_eq!(
        value[2],
        json!({"type": "audio", "data": "AQID", "mimeType": "audio/wav"})
    );
    assert_eq!(
        value[4]["resource"],
        json!({"uri": "file:///b.bin", "mimeType": "application/octet-stream", "blob": "AP8="})
    );
    let message = rpc(1, "tools/call", json!({"name": "T_Kinds", "arguments": {}}));
    let headers = [("mcp-protocol-version", "2025-06-18")];
    let (status, _, text) = post_mcp(&app, &message.to_string(), &headers).await;
    assert_eq!(status, 200, "{text}");
    let mcp: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value, &mcp["result"]["content"],
        "the same blocks on both protocols"
    );
}

#[tokio::test]
async fn mcp_content_items_are_content_blocks() {
    let (_, reply) = mcp(
        &example_app(),
        rpc(
            1,
            "tools/call",
            json!({"name": "Demo_Image", "arguments": {}}),
        ),
    )
    .await;
    let content = &reply["result"]["content"];
    assert_eq!(content.as_array().unwrap().len(), 2, "{reply}");
    assert_eq!(content[1]["type"], "image");
    assert_eq!(content[1]["mimeType"], "image/png");
    assert!(is_png(&content[1]["data"]));
    assert!(reply["result"].get("structuredContent").is_none());
}

/// The `tool_result` a RAP invocation of `tool` (listed as `operation`) delivers.
async fn delivered(tool: Tool, operation: &str) -> Value {
    let app = app_with(
        Registry::builder().tool(tool).build().unwrap(),
        test_config(),
    );
    let receiver = Receiver::ok().await;
    let invocation = json!({"operation": operation, "arguments": {}, "id": "c1",
                            "callback_url": receiver.url, "group_id": "t1"});
    let reply = post(&app, "/invoke", invocation.to_string()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    receiver.result().await
}

#[tokio::test]
async fn rap_content_items_and_display_segments_are_delivered() {
    let tool = Tool::builder("T.Edit", "1.0.0").raw_output_handler(
        json!({"type": "object"}),
        Some(json!({"type": "object"})),
        |_, _| async {
            Ok(ToolOutput::new(json!({"changed": 1}))
                .content(Content::text("Edited a.rs"))
                .content(Content::image(PNG_SIGNATURE.to_vec(), "image/png"))
                .display(oxp_lambda::DisplaySegment::Diff {
                    path: "a.rs".into(),
                    patch: "@@ -1 +1 @@".into(),
                })
                .display(oxp_lambda::DisplaySegment::Text {
                    text: "a.rs: 1 change".into(),
                }))
        },
    );
    let result = delivered(tool, "T_Edit").await;
    assert_eq!(result["text"], r#"{"changed":1}"#);
    assert_eq!(
        result["content"][0],
        json!({"type": "text", "text": "Edited a.rs"})
    );
    assert_eq!(result["content"][1]["type"], "image");
    assert_eq!(result["content"][1]["mediaType"], "image/png");
    assert!(is_png(&result["content"][1]["data"]));
    assert_eq!(
        result["display_as"],
        json!([
            {"type": "diff", "content": {"path": "a.rs", "patch": "@@ -1 +1 @@"}},
            {"type": "text", "content": "a.rs: 1 change"}
        ])
    );
}

/// What RAP's content cannot carry (audio, resources, links) reaches the runtime as text items
/// (docs/rap.md), an image display segment as the published types read it, and `text`, with
/// content alone, is its items' text joined.
#[tokio::test]
async fn rap_content_of_every_kind_reaches_the_runtime_as_the_published_types_read_it() {
    let tool = Tool::builder("T.Kinds", "1.0.0").handler(|_: NoInput, _: ToolContext| async {
        Ok::<_, ToolError>(ToolOutput::of(every_kind()).display(
            oxp_lambda::DisplaySegment::Image {
                data: PNG_SIGNATURE.to_vec(),
                media_type: "image/png".into(),
            },
        ))
    });
    let sent = delivered(tool, "T_Kinds").await;
    let Ok(rap_protocol::RapCallback::ToolResult(result)) = serde_json::from_value(sent.clone())
    else {
        panic!("not a tool_result of the published types: {sent}");
    };
    let png = base64::engine::general_purpose::STANDARD.encode(PNG_SIGNATURE);
    let texts = [
        "[audio: audio/wav, 3 bytes]",
        "Resource file:///a.txt (text/plain):\na",
        "[resource file:///b.bin: application/octet-stream, 2 bytes]",
        "[report](https://example.com/r)",
    ];
    let mut expected = vec![
        json!({"type": "text", "text": "t"}),
        json!({"type": "image", "data": png, "mediaType": "image/png"}),
    ];
    expected.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
    assert_eq!(sent["content"], Value::Array(expected));
    assert_eq!(result.content.map(|c| c.len()), Some(6));
    let joined = format!(
        "t\n[image: image/png, {} base64 characters]\n{}",
        png.len(),
        texts.join("\n")
    );
    assert_eq!(result.text.as_deref(), Some(joined.as_str()));
    let display = result.display_as.unwrap();
    assert!(
        matches!(&display[..], [rap_protocol::DisplaySegment::Image(image)]
            if image.data == png && image.media_type == "image/png"),
        "{display:?}"
    );
}

#[tokio::test]
async fn agentcore_content_items_are_the_call_tool_results() {
    let context = json!({"custom": {"bedrockAgentCoreToolName": "t___Demo_Image"}}).to_string();
    let result = example_app()
        .handle_agentcore(b"{}", Some(context.as_bytes()))
        .await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["content"][1]["type"], "image");
    assert!(is_png(&result["content"][1]["data"]));
}

#[tokio::test]
async fn an_oversized_result_is_a_tool_error_never_a_truncated_blob() {
    let tool = Tool::builder("T.Huge", "1.0.0").raw_output_handler(
        json!({"type": "object"}),
        None,
        |_, _| async {
            let huge = vec![0u8; oxp_lambda::MAX_CONTENT_BYTES + 1];
            Ok(ToolOutput::new(Value::Null).content(Content::image(huge, "image/png")))
        },
    );
    let app = app_with(
        Registry::builder().tool(tool).build().unwrap(),
        test_config(),
    );
    let reply = call(&app, json!({"request": {"tool_id": "T.Huge"}})).await;
    let result = &reply.json["result"];
    assert_eq!(result["success"], false);
    assert_eq!(
        result["error"]["message"],
        "The tool returned an invalid result"
    );
    assert!(reply.text.len() < 4096, "no blob in the answer");
}

#[tokio::test]
async fn rap_toolsets_carry_annotations_in_the_published_names() {
    let github = Tool::builder("T.Repo", "1.0.0")
        .destructive()
        .authorization("github", ["repo"])
        .raw_handler(json!({"type": "object"}), None, |_, _| async {
            Ok(Value::Null)
        });
    let registry = Registry::builder()
        .tools(example_tools::tools())
        .tool(github)
        .build()
        .unwrap();
    let app = app_with(registry, test_config());
    let toolset = get(&app, "/.well-known/rap-toolset").await.json;
    let tool = |name: &str| {
        toolset["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        tool("Demo_Sleep")["annotations"],
        json!({"readOnly": true, "destructive": false, "idempotent": true, "longRunning": true})
    );
    assert_eq!(
        tool("T_Repo")["annotations"],
        json!({"requiresAuth": "github", "readOnly": false, "destructive": true})
    );
    assert!(tool("Calculator_Add").get("annotations").is_none());
}

#[tokio::test]
async fn mcp_refusals_carry_the_user_message_never_the_developer_detail() {
    let (_, reply) = mcp(
        &example_app(),
        rpc(
            1,
            "tools/call",
            json!({"name": "SMS_Send", "arguments": {"to": "1", "message": "m"}}),
        ),
    )
    .await;
    let error = text_json(&reply["result"]);
    assert_eq!(
        error["message"],
        "This tool requires the secret 'TWILIO_API_KEY', which was not provided"
    );
    assert!(!reply.to_string().contains("context.secrets"), "{reply}");
}

#[test]
fn demo_images_png_is_the_drawing_it_describes() {
    let decoder = png::Decoder::new(std::io::Cursor::new(example_tools::IMAGE_PNG));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let side = example_tools::IMAGE_SIDE;
    assert_eq!((frame.width, frame.height), (side, side));
    assert_eq!(frame.color_type, png::ColorType::Rgb);
    let at = |x: u32, y: u32| {
        let i = ((y * side + x) * 3) as usize;
        &pixels[i..i + 3]
    };
    // An orange disc in the middle, on a gradient from blue (left) to green (right).
    assert_eq!(at(side / 2, side / 2), [255, 140, 0]);
    assert_eq!(at(0, 0), [20, 0, 255]);
    assert_eq!(at(side - 1, side - 1), [20, 255, 0]);
}

/// The content kinds each MCP revision's `CallToolResult` schema allows.
fn kinds_of(revision: &str) -> &'static [&'static str] {
    if revision < "2025-06-18" {
        &["text", "image", "audio", "resource"]
    } else {
        &["text", "image", "audio", "resource", "resource_link"]
    }
}

#[tokio::test]
async fn mcp_content_is_of_the_kinds_each_revision_knows_a_link_is_text_before_2025_06_18() {
    let tool = Tool::builder("T.Kinds", "1.0.0").raw_output_handler(
        json!({"type": "object"}),
        None,
        |_, _| async {
            let output = ToolOutput::new(Value::Null)
                .content(Content::text("t"))
                .content(Content::image(PNG_SIGNATURE.to_vec(), "image/png"))
                .content(Content::audio(vec![1, 2, 3], "audio/wav"))
                .content(Content::resource_text("file:///a.txt", "text/plain", "a"))
                .content(Content::link("https://example.com/r", "report"));
            Ok(output)
        },
    );
    let app = app_with(
        Registry::builder().tool(tool).build().unwrap(),
        test_config(),
    );
    let message = rpc(1, "tools/call", json!({"name": "T_Kinds", "arguments": {}}));
    for revision in ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"] {
        let reply = if revision == "2026-07-28" {
            common::tasks::call(&app, "T_Kinds", json!({}), false).await
        } else {
            // 2025-03-26 sends no version header; later revisions always do.
            let headers: &[(&str, &str)] = match revision {
                "2025-03-26" => &[],
                _ => &[("mcp-protocol-version", revision)],
            };
            let (status, _, text) = post_mcp(&app, &message.to_string(), headers).await;
            assert_eq!(status, 200, "{revision}: {text}");
            serde_json::from_str::<Value>(&text).unwrap()["result"].clone()
        };
        let content = reply["content"].as_array().unwrap();
        let kinds: Vec<&str> = content
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        for kind in &kinds {
            assert!(
                kinds_of(revision).contains(kind),
                "{revision}: {kind} in {reply}"
            );
        }
        assert_eq!(kinds.len(), 5, "{revision}: every item is shown: {reply}");
        let link = &content[4];
        if revision < "2025-06-18" {
            assert_eq!(link["text"], "report: https://example.com/r", "{revision}");
        } else {
            assert_eq!(link["type"], "resource_link", "{revision}");
            assert_eq!(link["uri"], "https://example.com/r");
            assert_eq!(link["name"], "report");
        }
    }
}
