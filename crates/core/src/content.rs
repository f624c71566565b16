//! What a tool returns besides its JSON value: content items (text, image, audio, resources) for
//! the model, and display segments for a person watching. Each protocol maps these to its own
//! shapes (MCP content blocks, RAP `content` and `display_as`, OXP `value`); the core only
//! carries and bounds them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most content items, and most display segments, one result may carry.
pub const MAX_CONTENT_ITEMS: usize = 64;
/// Most bytes (text, and binary data before base64) all content items and display segments of
/// one result may carry together: 3 MiB, so a result stays under Lambda's 6 MB response limit
/// once its binary data is base64-encoded.
pub const MAX_CONTENT_BYTES: usize = 3 * 1024 * 1024;

/// One item of a tool's result, for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// The image bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
        /// Its media type, e.g. `image/png`.
        media_type: String,
    },
    /// A sound.
    Audio {
        /// The audio bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
        /// Its media type, e.g. `audio/wav`.
        media_type: String,
    },
    /// A resource whose contents travel with the result.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its media type, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        /// Its contents.
        body: ResourceBody,
    },
    /// A link to a resource the client may fetch.
    Link {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its media type, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        /// What it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}

/// The contents of an embedded [`Content::Resource`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceBody {
    /// Text contents.
    Text(String),
    /// Binary contents.
    Blob(#[serde(with = "base64_bytes")] Vec<u8>),
}

impl Content {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image item of `media_type` (e.g. `image/png`).
    pub fn image(data: impl Into<Vec<u8>>, media_type: impl Into<String>) -> Self {
        Self::Image {
            data: data.into(),
            media_type: media_type.into(),
        }
    }

    /// An audio item of `media_type` (e.g. `audio/wav`).
    pub fn audio(data: impl Into<Vec<u8>>, media_type: impl Into<String>) -> Self {
        Self::Audio {
            data: data.into(),
            media_type: media_type.into(),
        }
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        media_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::Resource {
            uri: uri.into(),
            media_type: Some(media_type.into()),
            body: ResourceBody::Text(text.into()),
        }
    }

    /// An embedded binary resource.
    pub fn resource_blob(
        uri: impl Into<String>,
        media_type: impl Into<String>,
        data: impl Into<Vec<u8>>,
    ) -> Self {
        Self::Resource {
            uri: uri.into(),
            media_type: Some(media_type.into()),
            body: ResourceBody::Blob(data.into()),
        }
    }

    /// A link to the resource at `uri`, called `name`.
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::Link {
            uri: uri.into(),
            name: name.into(),
            media_type: None,
            description: None,
        }
    }

    /// The bytes this item carries (text, binary data, URIs and names).
    fn size(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Image { data, media_type } | Self::Audio { data, media_type } => {
                data.len() + media_type.len()
            }
            Self::Resource {
                uri,
                media_type,
                body,
            } => {
                let body = match body {
                    ResourceBody::Text(t) => t.len(),
                    ResourceBody::Blob(b) => b.len(),
                };
                uri.len() + media_type.as_ref().map_or(0, String::len) + body
            }
            Self::Link {
                uri,
                name,
                media_type,
                description,
            } => {
                uri.len()
                    + name.len()
                    + media_type.as_ref().map_or(0, String::len)
                    + description.as_ref().map_or(0, String::len)
            }
        }
    }
}

/// How a result is shown to a person (the model still gets the content): RAP's `display_as`.
/// A runtime shows the first segment it can render, so put the richest first and a short text
/// last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DisplaySegment {
    /// A line of text.
    Text {
        /// The text.
        text: String,
    },
    /// A unified diff of one file.
    Diff {
        /// The file the diff applies to.
        path: String,
        /// The unified diff (`---`/`+++`/`@@`).
        patch: String,
    },
    /// An image.
    Image {
        /// The image bytes.
        #[serde(with = "base64_bytes")]
        data: Vec<u8>,
        /// Its media type.
        media_type: String,
    },
}

impl DisplaySegment {
    fn size(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Diff { path, patch } => path.len() + patch.len(),
            Self::Image { data, media_type } => data.len() + media_type.len(),
        }
    }
}

/// A tool's result: its JSON value (typed `T`, checked against the output schema) and, beside
/// it, content items and display segments.
///
/// A handler may return `T` alone (the value), or `ToolOutput<T>` for more:
///
/// ```
/// use oxp_lambda_core::{Content, DisplaySegment, ToolOutput};
///
/// let chart: Vec<u8> = vec![0x89, b'P', b'N', b'G'];
/// let output = ToolOutput::new(42)
///     .content(Content::text("The chart of the last 42 days:"))
///     .content(Content::image(chart, "image/png"))
///     .display(DisplaySegment::Text { text: "Chart drawn".into() });
/// assert_eq!(output.value, 42);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[must_use]
pub struct ToolOutput<T = ()> {
    /// The value (`()`: none; the tool answers `null`).
    pub value: T,
    /// Content items for the model, in order.
    pub content: Vec<Content>,
    /// Display segments for a person, richest first.
    pub display_as: Vec<DisplaySegment>,
}

impl<T> ToolOutput<T> {
    /// An output with `value` and nothing else yet.
    pub fn new(value: T) -> Self {
        Self {
            value,
            content: Vec::new(),
            display_as: Vec::new(),
        }
    }

    /// Adds a content item.
    pub fn content(mut self, item: Content) -> Self {
        self.content.push(item);
        self
    }

    /// Adds a display segment.
    pub fn display(mut self, segment: DisplaySegment) -> Self {
        self.display_as.push(segment);
        self
    }
}

impl ToolOutput<()> {
    /// An output of content items only (no value).
    pub fn of(content: impl IntoIterator<Item = Content>) -> Self {
        Self {
            value: (),
            content: content.into_iter().collect(),
            display_as: Vec::new(),
        }
    }
}

impl From<Value> for ToolOutput<Value> {
    fn from(value: Value) -> Self {
        Self::new(value)
    }
}

/// What a typed handler may return: any `Serialize + JsonSchema` value, or a [`ToolOutput`] of
/// one. The output schema is generated from [`IntoToolOutput::Value`].
pub trait IntoToolOutput: Send + 'static {
    /// The type of the JSON value.
    type Value: Serialize + JsonSchema;
    /// The value with its content.
    fn into_output(self) -> ToolOutput<Self::Value>;
}

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolOutput for T {
    type Value = T;
    fn into_output(self) -> ToolOutput<T> {
        ToolOutput::new(self)
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> IntoToolOutput for ToolOutput<T> {
    type Value = T;
    fn into_output(self) -> ToolOutput<T> {
        self
    }
}

/// Why a result's content is refused: it is over a bound. Says which, never what it held.
pub(crate) fn check_bounds(output: &ToolOutput<Value>) -> Result<(), String> {
    if output.content.len() > MAX_CONTENT_ITEMS || output.display_as.len() > MAX_CONTENT_ITEMS {
        return Err(format!(
            "{} content items and {} display segments: at most {MAX_CONTENT_ITEMS} of each",
            output.content.len(),
            output.display_as.len()
        ));
    }
    let bytes: usize = output.content.iter().map(Content::size).sum::<usize>()
        + output
            .display_as
            .iter()
            .map(DisplaySegment::size)
            .sum::<usize>();
    if bytes > MAX_CONTENT_BYTES {
        return Err(format!(
            "content and display segments of {bytes} bytes: at most {MAX_CONTENT_BYTES}"
        ));
    }
    Ok(())
}

/// Binary data as base64 text in stored outcomes.
mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(data: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(data))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_round_trips_through_storage_with_binary_as_base64() {
        let items = vec![
            Content::text("hi"),
            Content::image(vec![0u8, 1, 2, 255], "image/png"),
            Content::resource_blob("file:///a", "application/octet-stream", vec![9u8]),
            Content::resource_text("file:///b", "text/plain", "b"),
            Content::link("https://example.com/x", "x"),
        ];
        let stored = serde_json::to_value(&items).unwrap();
        assert_eq!(stored[1]["data"], json!("AAEC/w=="));
        let back: Vec<Content> = serde_json::from_value(stored).unwrap();
        assert_eq!(back, items);
    }

    #[test]
    fn an_output_over_a_bound_is_refused_naming_sizes_only() {
        let big = ToolOutput::new(Value::Null).content(Content::image(
            vec![7u8; MAX_CONTENT_BYTES + 1],
            "image/png",
        ));
        let why = check_bounds(&big).unwrap_err();
        assert!(why.contains("at most"), "{why}");
        let many = ToolOutput {
            value: Value::Null,
            content: vec![Content::text("x"); MAX_CONTENT_ITEMS + 1],
            display_as: Vec::new(),
        };
        assert!(check_bounds(&many).is_err());
        assert!(check_bounds(&ToolOutput::new(Value::Null).content(Content::text("ok"))).is_ok());
    }
}
