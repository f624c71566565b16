//! What a tool asks of the client itself, as MCP carries it: a request to its model
//! (`sampling/createMessage`) and its roots (`roots/list`); what their answers say, read and
//! bounded like every other answer ([`super::questions::read_response`], which refuses an
//! answer for the reason these give).

use oxp_lambda_core::content::Content;
use oxp_lambda_core::sample::{Role, Root, Sample, Sampled};
use oxp_lambda_core::talk::TalkError;
use serde_json::{Map, Value, json};

/// Most roots an answer lists.
const MAX_ROOTS: usize = 64;

/// A `CreateMessageResult` as a state keeps it: its role, model, stop reason and content
/// blocks (text, image, audio), as a list.
pub(crate) fn read_sampled(object: &Map<String, Value>) -> Result<Value, &'static str> {
    let role = match object.get("role").and_then(Value::as_str) {
        Some(role @ ("assistant" | "user")) => role,
        _ => {
            return Err(
                "an input response is an ElicitResult, a CreateMessageResult or a ListRootsResult",
            );
        }
    };
    let blocks = match object.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(block @ Value::Object(_)) => vec![block.clone()],
        _ => return Err("a CreateMessageResult carries content"),
    };
    for block in &blocks {
        let shaped = match block["type"].as_str() {
            Some("text") => block["text"].is_string(),
            Some("image" | "audio") => block["data"].is_string() && block["mimeType"].is_string(),
            _ => false,
        };
        if !shaped {
            return Err("a CreateMessageResult's content is text, images or audio");
        }
    }
    let text = |key: &str| object.get(key).and_then(Value::as_str);
    Ok(json!({
        "role": role,
        "content": blocks,
        "model": text("model").ok_or("a CreateMessageResult names its model")?,
        "stopReason": text("stopReason"),
    }))
}

/// A `ListRootsResult` as a state keeps it: each root's URI and name.
pub(crate) fn read_roots(object: &Map<String, Value>) -> Result<Value, &'static str> {
    let roots = object["roots"]
        .as_array()
        .filter(|r| r.len() <= MAX_ROOTS)
        .ok_or("a ListRootsResult lists at most 64 roots")?;
    let roots = roots
        .iter()
        .map(|root| match (root["uri"].as_str(), &root["name"]) {
            (Some(uri), Value::Null) => Ok(json!({"uri": uri})),
            (Some(uri), Value::String(name)) => Ok(json!({"uri": uri, "name": name})),
            _ => Err("a root has a URI and may have a name"),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({"roots": roots}))
}

/// What the client's model said, from an answer (as
/// [`read_response`](super::questions::read_response) keeps it).
pub(crate) fn sampled_of(answer: &Value) -> Result<Sampled, TalkError> {
    not_a_form_answer(answer)?;
    let blocks = answer["content"]
        .as_array()
        .ok_or(TalkError::InvalidAnswer)?;
    let content = blocks
        .iter()
        .map(|block| {
            let data = || {
                use base64::Engine as _;
                let text = block["data"].as_str().unwrap_or_default();
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .map_err(|_| TalkError::InvalidAnswer)
            };
            let media_type = block["mimeType"].as_str().unwrap_or_default().to_owned();
            Ok(match block["type"].as_str() {
                Some("text") => Content::text(block["text"].as_str().unwrap_or_default()),
                Some("image") => Content::Image {
                    data: data()?,
                    media_type,
                },
                Some("audio") => Content::Audio {
                    data: data()?,
                    media_type,
                },
                _ => return Err(TalkError::InvalidAnswer),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Sampled {
        role: match answer["role"].as_str() {
            Some("user") => Role::User,
            _ => Role::Assistant,
        },
        content,
        model: answer["model"].as_str().unwrap_or_default().to_owned(),
        stop_reason: answer["stopReason"].as_str().map(str::to_owned),
    })
}

/// The client's roots, from an answer (as
/// [`read_response`](super::questions::read_response) keeps it).
pub(crate) fn roots_of(answer: &Value) -> Result<Vec<Root>, TalkError> {
    not_a_form_answer(answer)?;
    let roots = answer["roots"].as_array().ok_or(TalkError::InvalidAnswer)?;
    Ok(roots
        .iter()
        .map(|root| Root {
            uri: root["uri"].as_str().unwrap_or_default().to_owned(),
            name: root["name"].as_str().map(str::to_owned),
        })
        .collect())
}

/// An answer to the client's model or roots carries no `action`: one that does is the client's
/// error (the handshake revisions' way to refuse: declined) or another kind of answer under the
/// request's key.
fn not_a_form_answer(answer: &Value) -> Result<(), TalkError> {
    match answer.get("action").map(Value::as_str) {
        None => Ok(()),
        Some(Some("decline" | "cancel")) => Err(TalkError::Declined),
        Some(_) => Err(TalkError::InvalidAnswer),
    }
}

/// The `sampling/createMessage` params of `sample`.
pub(crate) fn sample_params(sample: &Sample) -> Value {
    use base64::Engine as _;
    let encode = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
    let messages: Vec<Value> = sample
        .messages
        .iter()
        .map(|m| {
            let content = match &m.content {
                Content::Image { data, media_type } => {
                    json!({"type": "image", "data": encode(data), "mimeType": media_type})
                }
                Content::Audio { data, media_type } => {
                    json!({"type": "audio", "data": encode(data), "mimeType": media_type})
                }
                Content::Text { text } => json!({"type": "text", "text": text}),
                // Refused by `Sample::check` before a protocol sees it.
                _ => json!({"type": "text", "text": ""}),
            };
            json!({"role": m.role.as_str(), "content": content})
        })
        .collect();
    let mut params = json!({"messages": messages, "maxTokens": sample.max_tokens});
    let set = |params: &mut Value, key: &str, value: Value| {
        params[key] = value;
    };
    if let Some(system) = &sample.system {
        set(&mut params, "systemPrompt", json!(system));
    }
    if let Some(temperature) = sample.temperature {
        set(&mut params, "temperature", json!(temperature));
    }
    if !sample.stop.is_empty() {
        set(&mut params, "stopSequences", json!(sample.stop));
    }
    let p = &sample.preferences;
    if !p.hints.is_empty()
        || p.cost_priority.is_some()
        || p.speed_priority.is_some()
        || p.intelligence_priority.is_some()
    {
        let hints: Vec<Value> = p.hints.iter().map(|h| json!({"name": h})).collect();
        let mut preferences = json!({"hints": hints});
        for (key, value) in [
            ("costPriority", p.cost_priority),
            ("speedPriority", p.speed_priority),
            ("intelligencePriority", p.intelligence_priority),
        ] {
            if let Some(value) = value {
                preferences[key] = json!(value);
            }
        }
        set(&mut params, "modelPreferences", preferences);
    }
    params
}

#[cfg(test)]
#[path = "sampling_tests.rs"]
mod tests;
