//! Asking the client's model, and reading the client's roots: how a tool server without model
//! keys of its own summarizes, classifies or drafts (MCP's sampling), and learns where its user
//! works (MCP's roots). Protocol-free, like the rest of [`crate::talk`]: the protocol a call came
//! over carries them where it can, and a call over any other fails with
//! [`TalkError::NotCarried`](crate::talk::TalkError::NotCarried) (an `unsupported` tool error).
//!
//! ```
//! use oxp_lambda_core::sample::Sample;
//! use oxp_lambda_core::{ToolContext, ToolError};
//!
//! async fn summarize(text: String, ctx: ToolContext) -> Result<String, ToolError> {
//!     let sampled = ctx
//!         .sample(Sample::new(200).system("Summarize in one sentence.").user(text))
//!         .await?; // over OXP 1.0 or RAP: a clear `unsupported` error, never a hang
//!     Ok(sampled.text())
//! }
//! ```

use crate::content::Content;

/// Most messages one request to the client's model carries.
pub const MAX_MESSAGES: usize = 64;
/// Most bytes (text, and binary data before base64) of one request's messages, system prompt and
/// stop sequences together.
pub const MAX_SAMPLE_BYTES: usize = 256 * 1024;
/// Most model name hints.
pub const MAX_HINTS: usize = 8;

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user (what the model answers).
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// Its name on the wire (`user`, `assistant`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One message of the conversation the client's model continues.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What it says: [`Content::Text`], [`Content::Image`] or [`Content::Audio`].
    pub content: Content,
}

/// Which model the client should pick, as hints and priorities (each from 0 to 1); the client
/// decides.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelPreferences {
    /// Model names or families, most preferred first (`claude-3-5-sonnet`, `sonnet`).
    pub hints: Vec<String>,
    /// How much a low cost matters.
    pub cost_priority: Option<f64>,
    /// How much speed matters.
    pub speed_priority: Option<f64>,
    /// How much capability matters.
    pub intelligence_priority: Option<f64>,
}

/// A request to the client's model: a conversation to continue, at most `max_tokens` long.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The conversation, at least one message.
    pub messages: Vec<Message>,
    /// A system prompt the client may use (or not).
    pub system: Option<String>,
    /// The longest answer, in tokens.
    pub max_tokens: u32,
    /// How random the answer may be.
    pub temperature: Option<f64>,
    /// Where the model stops.
    pub stop: Vec<String>,
    /// Which model, as the tool would have it.
    pub preferences: ModelPreferences,
}

impl Sample {
    /// A request for an answer of at most `max_tokens` tokens; add its messages.
    pub fn new(max_tokens: u32) -> Self {
        Self {
            messages: Vec::new(),
            system: None,
            max_tokens,
            temperature: None,
            stop: Vec::new(),
            preferences: ModelPreferences::default(),
        }
    }

    /// Adds a text message from the user.
    #[must_use]
    pub fn user(self, text: impl Into<String>) -> Self {
        self.message(Role::User, Content::text(text))
    }

    /// Adds a text message from the model (an earlier turn).
    #[must_use]
    pub fn assistant(self, text: impl Into<String>) -> Self {
        self.message(Role::Assistant, Content::text(text))
    }

    /// Adds a message (text, an image or a sound).
    #[must_use]
    pub fn message(mut self, role: Role, content: Content) -> Self {
        self.messages.push(Message { role, content });
        self
    }

    /// The system prompt.
    #[must_use]
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// The temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Adds a stop sequence.
    #[must_use]
    pub fn stop(mut self, sequence: impl Into<String>) -> Self {
        self.stop.push(sequence.into());
        self
    }

    /// The model preferences.
    #[must_use]
    pub fn preferences(mut self, preferences: ModelPreferences) -> Self {
        self.preferences = preferences;
        self
    }

    /// Checks the request: 1 to [`MAX_MESSAGES`] messages of text, images or sounds, a token
    /// limit, priorities from 0 to 1, at most [`MAX_SAMPLE_BYTES`] in all.
    pub fn check(&self) -> Result<(), String> {
        let invalid = |why: &str| Err(why.to_owned());
        if self.messages.is_empty() || self.messages.len() > MAX_MESSAGES {
            return invalid("a request to the client's model needs 1 to 64 messages");
        }
        if self.max_tokens == 0 {
            return invalid("a request to the client's model needs a token limit");
        }
        let mut bytes = self.system.as_ref().map_or(0, String::len);
        bytes += self.stop.iter().map(String::len).sum::<usize>();
        for message in &self.messages {
            bytes += match &message.content {
                Content::Text { text } => text.len(),
                Content::Image { data, media_type } | Content::Audio { data, media_type } => {
                    data.len() + media_type.len()
                }
                _ => return invalid("a message is text, an image or a sound"),
            };
        }
        if bytes > MAX_SAMPLE_BYTES {
            return invalid("a request to the client's model carries at most 256 KiB");
        }
        let preferences = &self.preferences;
        let unit = |p: Option<f64>| p.is_none_or(|p| (0.0..=1.0).contains(&p));
        if preferences.hints.len() > MAX_HINTS
            || !unit(preferences.cost_priority)
            || !unit(preferences.speed_priority)
            || !unit(preferences.intelligence_priority)
            || self.temperature.is_some_and(|t| !t.is_finite())
        {
            return invalid("at most 8 model hints, priorities from 0 to 1, a finite temperature");
        }
        Ok(())
    }
}

/// The client's model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// Who says it (the model: [`Role::Assistant`]).
    pub role: Role,
    /// What it says: text, images or sounds.
    pub content: Vec<Content>,
    /// The model that answered, as the client names it.
    pub model: String,
    /// Why it stopped (`endTurn`, `maxTokens`, `stopSequence`, ...), when the client says.
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// Its text: the text parts, joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }
}

/// A root the client exposes: a directory or project its user works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Its URI (`file:///home/me/project`).
    pub uri: String,
    /// Its name, when the client gives one.
    pub name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_request_to_the_model_is_refused_before_any_protocol_sees_it() {
        let good = Sample::new(10).user("hi");
        assert!(good.check().is_ok());
        let link = Content::link("file:///x", "x");
        for bad in [
            Sample::new(10),
            Sample::new(0).user("hi"),
            Sample::new(10).message(Role::User, link),
            Sample::new(10).user("x".repeat(MAX_SAMPLE_BYTES + 1)),
            Sample::new(10).user("hi").preferences(ModelPreferences {
                cost_priority: Some(2.0),
                ..ModelPreferences::default()
            }),
            Sample::new(10).user("hi").temperature(f64::NAN),
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }
}
