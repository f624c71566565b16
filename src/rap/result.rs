//! A tool's output as a RAP `tool_result`: `text` always (the value, or the content as text),
//! `content` items when the tool gave content (text and image as the published spec defines
//! them; audio and resources degrade to text), and `display_as` segments when it set them; a
//! failed call's `text` (the error as the published spec's convention has it).

use crate::rap::job::{Job, error};
use crate::rap::wire::{ContentItem, ErrorBody, ErrorText, ReplyTo, Segment, ToolResult};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use oxp_lambda_core::content::{Content, DisplaySegment, ResourceBody, ToolOutput};
use oxp_lambda_core::invoke::Rejection;
use oxp_lambda_core::refusal::ErrorClass;
use oxp_lambda_core::schema::ParameterErrors;
use oxp_lambda_core::tool::ToolError;
use serde_json::Value;

/// The `tool_result` of a successful call.
pub(crate) fn success(to: &ReplyTo, output: ToolOutput<Value>) -> ToolResult {
    let mut items: Vec<ContentItem> = output.content.iter().map(item).collect();
    let value = (!output.value.is_null() || items.is_empty()).then(|| text_of(output.value));
    let text = match &value {
        Some(value) => value.clone(),
        None => items
            .iter()
            .map(|i| match i {
                ContentItem::Text { text } => text.clone(),
                ContentItem::Image { media_type, data } => {
                    format!("[image: {media_type}, {} base64 characters]", data.len())
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    if !items.is_empty()
        && let Some(value) = value
    {
        items.push(ContentItem::Text { text: value });
    }
    let mut message = ToolResult::new(to, text);
    message.content = (!items.is_empty()).then_some(items);
    message.display_as =
        (!output.display_as.is_empty()).then(|| output.display_as.iter().map(segment).collect());
    message
}

/// A string output is sent as it is; any other output JSON-encoded.
pub(crate) fn text_of(value: Value) -> String {
    match value {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

fn item(content: &Content) -> ContentItem {
    let text = |text: String| ContentItem::Text { text };
    match content {
        Content::Text { text } => ContentItem::Text { text: text.clone() },
        Content::Image { data, media_type } => ContentItem::Image {
            data: STANDARD.encode(data),
            media_type: media_type.clone(),
        },
        Content::Audio { data, media_type } => {
            text(format!("[audio: {media_type}, {} bytes]", data.len()))
        }
        Content::Resource {
            uri,
            media_type,
            body: ResourceBody::Text(body),
        } => text(format!(
            "Resource {uri} ({}):\n{body}",
            media_type.as_deref().unwrap_or("text")
        )),
        Content::Resource {
            uri,
            media_type,
            body: ResourceBody::Blob(data),
        } => text(format!(
            "[resource {uri}: {}, {} bytes]",
            media_type.as_deref().unwrap_or("application/octet-stream"),
            data.len()
        )),
        Content::Link {
            uri,
            name,
            description,
            ..
        } => match description {
            Some(d) => text(format!("[{name}]({uri}): {d}")),
            None => text(format!("[{name}]({uri})")),
        },
    }
}

fn segment(segment: &DisplaySegment) -> Segment {
    match segment {
        DisplaySegment::Text { text } => Segment::Text(text.clone()),
        DisplaySegment::Diff { path, patch } => Segment::Diff {
            path: path.clone(),
            patch: patch.clone(),
        },
        DisplaySegment::Image { data, media_type } => Segment::Image {
            data: STANDARD.encode(data),
            media_type: media_type.clone(),
        },
    }
}

/// The result of a call whose run ended unfinished (a shutdown, a crash): retryable.
pub(crate) fn interrupted_result(job: &Job) -> ToolResult {
    let why = "The tool server stopped before the call finished; it may be retried";
    retryable(job, "interrupted", why)
}

/// `job`'s error result of `kind`, saying `message`, which it may retry.
pub(crate) fn retryable(job: &Job, kind: &str, message: &str) -> ToolResult {
    let error = ErrorBody {
        can_retry: true,
        ..error(kind, message.into())
    };
    ToolResult::new(&job.reply_to, error_text(error))
}

/// The `text` of a failed call, as the published spec's convention has it: `Error: ` and the
/// message (with the retry hint), then on the next line the same error as JSON
/// (`{"error": {"kind", "message", ...}}`) for runtimes and models that read the detail.
pub(crate) fn error_text(error: ErrorBody) -> String {
    let mut text = format!("Error: {}", error.message);
    match (error.can_retry, error.retry_after_ms) {
        (true, Some(ms)) => text.push_str(&format!(" (retry after {ms} ms)")),
        (true, None) => text.push_str(" (it may be retried)"),
        _ => {}
    }
    text.push('\n');
    text.push_str(&serde_json::to_string(&ErrorText { error }).expect("errors serialize"));
    text
}

/// The error kind of a class, in RAP's words where they differ from the core's.
fn kind(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::InvalidInput => "invalid_arguments",
        ErrorClass::NotFound => "unknown_operation",
        ErrorClass::Conflict => "id_reused",
        other => other.as_str(),
    }
}

/// The error result of a call the invoker refused before the tool ran: the core's class,
/// user message and retry guidance, never its developer detail.
pub(crate) fn rejected(rejection: Rejection) -> ErrorBody {
    let class = rejection.class();
    let retry_after_ms = rejection
        .retry_after()
        .map(|after| u64::try_from(after.as_millis()).unwrap_or(u64::MAX));
    match rejection {
        Rejection::InvalidInput(errors) => invalid_arguments(errors),
        other => ErrorBody {
            can_retry: class.retryable(),
            retry_after_ms,
            ..error(kind(class), other.user_message())
        },
    }
}

fn invalid_arguments(parameter_errors: ParameterErrors) -> ErrorBody {
    ErrorBody {
        parameter_errors: Some(parameter_errors),
        additional_prompt_content: Some(
            "Fix the arguments listed in parameter_errors to match the operation's inputSchema and call it again.".into(),
        ),
        ..error("invalid_arguments", "Some arguments are invalid".into())
    }
}

/// A tool failure without its developer message: that may carry internal detail (a panic
/// text, a path), which results must not leak. It is in the call's log line instead.
pub(crate) fn tool_error(e: ToolError, class: ErrorClass) -> ErrorBody {
    ErrorBody {
        kind: kind(class).into(),
        message: e.message,
        can_retry: e.can_retry,
        retry_after_ms: e.retry_after_ms,
        additional_prompt_content: e.additional_prompt_content,
        parameter_errors: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn to() -> ReplyTo {
        ReplyTo {
            id: "c1".into(),
            group_id: "t1".into(),
            callback_url: "http://127.0.0.1:1/cb".into(),
            call_id: None,
        }
    }

    #[test]
    fn a_plain_value_is_text_only() {
        let m = success(&to(), ToolOutput::new(json!({"a": 1})));
        assert_eq!(m.text, r#"{"a":1}"#);
        assert_eq!(m.content, None);
        assert_eq!(m.display_as, None);
    }

    #[test]
    fn content_maps_to_items_with_others_degraded_to_text_and_the_value_last() {
        let output = ToolOutput::new(json!(7))
            .content(Content::text("A chart:"))
            .content(Content::image(vec![1u8, 2, 3], "image/png"))
            .content(Content::audio(vec![0u8; 10], "audio/wav"))
            .display(DisplaySegment::Diff {
                path: "a.rs".into(),
                patch: "@@".into(),
            });
        let m = serde_json::to_value(success(&to(), output)).unwrap();
        assert_eq!(m["text"], "7");
        assert_eq!(
            m["content"],
            json!([
                {"type": "text", "text": "A chart:"},
                {"type": "image", "data": "AQID", "mediaType": "image/png"},
                {"type": "text", "text": "[audio: audio/wav, 10 bytes]"},
                {"type": "text", "text": "7"}
            ])
        );
        assert_eq!(
            m["display_as"],
            json!([{"type": "diff", "content": {"path": "a.rs", "patch": "@@"}}])
        );
    }

    #[test]
    fn content_alone_gives_its_text_as_the_text() {
        let output = ToolOutput {
            value: Value::Null,
            content: vec![Content::text("one"), Content::text("two")],
            display_as: Vec::new(),
        };
        let m = success(&to(), output);
        assert_eq!(m.text, "one\ntwo");
        assert_eq!(m.content.as_ref().map(Vec::len), Some(2));
    }
}
