//! The messages a call sends to its callback besides its `tool_result`, as the published
//! server pages define them (hydro-project/infinity `docs/docs/rap/spec/server/`):
//! `user_choice` (and the selection the runtime POSTs back), `view_update` and
//! `subscription_event`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `user_choice`: the user is asked to choose; the runtime POSTs the selection to
/// `response_url`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct UserChoice {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) group_id: String,
    pub(crate) id: String,
    /// Echoed from the invocation (`null` when it had none).
    pub(crate) call_id: Option<String>,
    pub(crate) prompt: String,
    pub(crate) choices: Vec<String>,
    pub(crate) default: usize,
    pub(crate) response_url: String,
}

/// The runtime's answer to a [`UserChoice`], POSTed to its `response_url`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct ChoiceResponse {
    /// The tool call id: the `id` of the `user_choice`.
    pub(crate) id: String,
    /// The index chosen (any integer is read; one out of range ends the call with an error).
    pub(crate) selected: i64,
}

/// `view_update`: the latest content of a named view of the thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ViewUpdate {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) group_id: String,
    pub(crate) view_type: String,
    pub(crate) content: Map<String, Value>,
}

/// `subscription_event`: an event of a subscription the call with `tool_call_id` opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SubscriptionEvent {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) group_id: String,
    pub(crate) tool_call_id: String,
    /// The event, JSON-encoded.
    pub(crate) text: String,
    /// Injected inline into the subscribing thread rather than a child thread.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) associative: bool,
    /// The subscription's last event.
    #[serde(rename = "final", default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) last: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_messages_have_the_published_shape() {
        let choice = UserChoice {
            kind: "user_choice",
            group_id: "thread_xyz".into(),
            id: "call_abc123".into(),
            call_id: None,
            prompt: "Allow?".into(),
            choices: vec!["Yes".into(), "No".into()],
            default: 1,
            response_url: "http://127.0.0.1:8080/user_choice_response/t".into(),
        };
        assert_eq!(
            serde_json::to_value(&choice).unwrap(),
            json!({"type": "user_choice", "group_id": "thread_xyz", "id": "call_abc123",
                   "call_id": null, "prompt": "Allow?", "choices": ["Yes", "No"], "default": 1,
                   "response_url": "http://127.0.0.1:8080/user_choice_response/t"})
        );
        let event = SubscriptionEvent {
            kind: "subscription_event",
            group_id: "thread_xyz".into(),
            tool_call_id: "call_abc123".into(),
            text: "{}".into(),
            associative: false,
            last: true,
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"type": "subscription_event", "group_id": "thread_xyz",
                   "tool_call_id": "call_abc123", "text": "{}", "final": true})
        );
        let view = ViewUpdate {
            kind: "view_update",
            group_id: "g".into(),
            view_type: "sleep".into(),
            content: Map::from_iter([("slept_ms".to_owned(), json!(10))]),
        };
        assert_eq!(
            serde_json::to_value(&view).unwrap(),
            json!({"type": "view_update", "group_id": "g", "view_type": "sleep", "content": {"slept_ms": 10}})
        );
    }
}
