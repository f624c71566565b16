//! The event sources a server takes (`OXP_WEBHOOK_SOURCES`), and how each reads its events.

use crate::settings::{ConfigError, Env, invalid};
use http::HeaderMap;
use serde_json::Value;

/// The largest event a source may send: what the state store keeps of one value (an event
/// is kept whole until it is delivered), so an event taken is never one the store refuses.
pub(crate) const MAX_EVENT_BYTES: usize = crate::events::MAX_EVENT_BYTES;

/// Longest topic, in characters.
const MAX_TOPIC_CHARS: usize = 128;

/// The webhook event sources' settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhooksConfig {
    /// `OXP_WEBHOOK_SOURCES` (default `demo,github`): the sources `POST /webhooks/{source}`
    /// takes; `OXP_WEBHOOK_<ID>_KIND` (`demo` or `github`; default: the id) says how each reads
    /// its events, and its signing key is the server-held secret `<ID>_WEBHOOK_SECRET`.
    pub sources: Vec<Source>,
    /// `OXP_WEBHOOK_MAX_BYTES` (default and most: 256 KiB, what the state store keeps of one
    /// value): the largest event.
    pub max_bytes: usize,
}

/// One event source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Its id, the last segment of its URL.
    pub id: String,
    /// How it reads events.
    pub kind: Kind,
    /// The server-held secret that signs its events.
    pub secret_id: String,
}

/// How a source reads its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `{"topic": string, "event": any JSON}`: the event, JSON-encoded, to the topic.
    Demo,
    /// GitHub's webhooks (JSON, or the form GitHub sends by default): the payload to
    /// `<owner>/<repo>` and `<owner>/<repo>/<event>`; one of no repository to no topic.
    GitHub,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        Self {
            sources: ["demo", "github"]
                .into_iter()
                .map(|id| {
                    Source::new(
                        id,
                        if id == "demo" {
                            Kind::Demo
                        } else {
                            Kind::GitHub
                        },
                    )
                })
                .collect(),
            max_bytes: MAX_EVENT_BYTES,
        }
    }
}

impl Source {
    fn new(id: &str, kind: Kind) -> Self {
        Self {
            id: id.to_owned(),
            kind,
            secret_id: format!(
                "{}_WEBHOOK_SECRET",
                id.to_ascii_uppercase().replace('-', "_")
            ),
        }
    }
}

impl WebhooksConfig {
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mut config = Self::default();
        if env.get("OXP_WEBHOOK_SOURCES").is_some() {
            config.sources = Vec::new();
            for id in env.list("OXP_WEBHOOK_SOURCES") {
                if id.len() > 64
                    || !id
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                {
                    return Err(invalid(
                        "OXP_WEBHOOK_SOURCES",
                        "source ids are lowercase letters, digits and '-'",
                    ));
                }
                let variable = format!(
                    "OXP_WEBHOOK_{}_KIND",
                    id.to_ascii_uppercase().replace('-', "_")
                );
                let kind = match env.get(&variable).as_deref().map(str::trim).unwrap_or(&id) {
                    "demo" => Kind::Demo,
                    "github" => Kind::GitHub,
                    _ => {
                        return Err(invalid(
                            "OXP_WEBHOOK_SOURCES",
                            &format!(
                                "source '{id}' needs OXP_WEBHOOK_<ID>_KIND: 'demo' or 'github'"
                            ),
                        ));
                    }
                };
                config.sources.push(Source::new(&id, kind));
            }
        }
        if let Some(n) = env.positive("OXP_WEBHOOK_MAX_BYTES")? {
            if n > MAX_EVENT_BYTES {
                return Err(invalid(
                    "OXP_WEBHOOK_MAX_BYTES",
                    &format!("at most {MAX_EVENT_BYTES} (what the state store keeps of an event)"),
                ));
            }
            config.max_bytes = n;
        }
        Ok(config)
    }
}

fn topic_ok(topic: &str) -> bool {
    !topic.is_empty()
        && topic.chars().count() <= MAX_TOPIC_CHARS
        && !topic.chars().any(char::is_control)
}

impl Kind {
    /// The topics an event goes to, each with the event's text (JSON); `Err` says what is
    /// wrong with it.
    pub(crate) fn events(
        self,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Vec<(String, String)>, &'static str> {
        match self {
            Kind::Demo => {
                let value: Value =
                    serde_json::from_slice(body).map_err(|_| "the event is not JSON")?;
                let topic = value
                    .get("topic")
                    .and_then(Value::as_str)
                    .filter(|t| topic_ok(t))
                    .ok_or("the event has no topic (a string of 1 to 128 characters)")?;
                let event = value.get("event").ok_or("the event has no `event`")?;
                Ok(vec![(topic.to_owned(), event.to_string())])
            }
            Kind::GitHub => github_events(headers, body),
        }
    }
}

/// A GitHub delivery's topics: its repository, and its repository and event. Its payload is the
/// body, or (content type `application/x-www-form-urlencoded`, a webhook's default in GitHub's
/// settings) the form's `payload` field. One that names no repository (an organization's
/// hook: its `ping`, a `member` or `team` event) goes to no topic.
fn github_events(headers: &HeaderMap, body: &[u8]) -> Result<Vec<(String, String)>, &'static str> {
    let event = headers
        .get("x-github-event")
        .and_then(|v| v.to_str().ok())
        .filter(|e| topic_ok(e) && !e.contains('/'))
        .ok_or("the event has no X-GitHub-Event")?;
    let form = crate::server::media_type(headers)
        .is_some_and(|m| m.eq_ignore_ascii_case("application/x-www-form-urlencoded"));
    let text = if form {
        url::form_urlencoded::parse(body)
            .find(|(name, _)| name == "payload")
            .map(|(_, payload)| payload.into_owned())
            .ok_or("the form has no `payload`")?
    } else {
        String::from_utf8_lossy(body).into_owned()
    };
    let value: Value = serde_json::from_str(&text).map_err(|_| "the event is not JSON")?;
    let Some(repository) = value.get("repository") else {
        return Ok(Vec::new());
    };
    let repository = repository
        .get("full_name")
        .and_then(Value::as_str)
        .filter(|r| topic_ok(r))
        .ok_or("the event's repository has no full_name")?;
    let with_event = format!("{repository}/{event}");
    Ok(vec![
        (repository.to_owned(), text.clone()),
        (with_event, text),
    ])
}
