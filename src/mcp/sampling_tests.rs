//! A tool's request to the client's model and the model's answer, against rmcp's own types for
//! them (`CreateMessageRequestParams`, `CreateMessageResult`): what is sent is what the SDK reads,
//! whole, and what a client answers in the SDK's shape reaches the tool whole.

// rmcp marks sampling's types deprecated with the revision (SEP-2577); the server still serves
// sampling for the clients that use it, so its types stay the reference here.
#![allow(deprecated)]

use super::*;
use oxp_lambda_core::sample::ModelPreferences;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};

#[test]
fn a_request_to_the_model_is_a_create_message_request_rmcp_reads_whole() {
    let sample = Sample::new(100)
        .system("Be brief.")
        .user("What is in the picture?")
        .message(Role::User, Content::image(vec![1, 2, 3], "image/png"))
        .message(Role::User, Content::audio(vec![4], "audio/wav"))
        .assistant("A disc.")
        .temperature(0.5)
        .stop("END")
        .preferences(ModelPreferences {
            hints: vec!["claude".into()],
            cost_priority: Some(0.25),
            speed_priority: None,
            intelligence_priority: Some(1.0),
        });
    let sent = sample_params(&sample);
    let read: CreateMessageRequestParams = serde_json::from_value(sent.clone()).unwrap();
    assert_eq!(read.messages.len(), 4);
    assert_eq!(read.max_tokens, 100);
    assert_eq!(read.temperature, Some(0.5));
    assert_eq!(
        read.stop_sequences.as_deref(),
        Some(&["END".to_owned()][..])
    );
    // rmcp writes back what it read: every member sent was one it knows, in its shape.
    assert_eq!(serde_json::to_value(&read).unwrap(), sent);
    assert_eq!(
        sent["messages"][1]["content"],
        json!({"type": "image", "data": "AQID", "mimeType": "image/png"})
    );
    assert_eq!(
        sent["modelPreferences"],
        json!({"hints": [{"name": "claude"}], "costPriority": 0.25, "intelligencePriority": 1.0})
    );
}

#[test]
fn a_models_answer_of_text_images_and_audio_reaches_the_tool_whole() {
    let answer = json!({"role": "assistant", "model": "m-1", "stopReason": "endTurn",
    "content": [
        {"type": "text", "text": "A disc"},
        {"type": "image", "data": "AQID", "mimeType": "image/png"},
        {"type": "audio", "data": "BA==", "mimeType": "audio/wav"},
    ]});
    // The shape rmcp's clients answer in.
    serde_json::from_value::<CreateMessageResult>(answer.clone()).unwrap();
    let kept = read_sampled(answer.as_object().unwrap()).unwrap();
    let sampled = sampled_of(&kept).unwrap();
    assert_eq!(
        sampled,
        Sampled {
            role: Role::Assistant,
            content: vec![
                Content::text("A disc"),
                Content::image(vec![1, 2, 3], "image/png"),
                Content::audio(vec![4], "audio/wav"),
            ],
            model: "m-1".into(),
            stop_reason: Some("endTurn".into()),
        }
    );
    // One block, not in a list, as earlier revisions send it.
    let one = json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}});
    let sampled = sampled_of(&read_sampled(one.as_object().unwrap()).unwrap()).unwrap();
    assert_eq!(sampled.text(), "x");
    assert_eq!(sampled.stop_reason, None);
}

#[test]
fn an_answer_the_model_did_not_give_is_refused_or_declined() {
    let read = |answer: Value| read_sampled(answer.as_object().unwrap());
    assert!(read(json!({"role": "assistant", "model": "m"})).is_err());
    let resource = json!({"type": "resource", "resource": {"uri": "file:///a", "text": "a"}});
    assert!(read(json!({"role": "assistant", "model": "m", "content": [resource]})).is_err());
    let nameless = json!({"role": "assistant", "content": [{"type": "text", "text": "x"}]});
    assert_eq!(
        read(nameless).unwrap_err(),
        "a CreateMessageResult names its model"
    );
    let unreadable = json!({"role": "assistant", "model": "m",
        "content": [{"type": "image", "data": "not base64!", "mimeType": "image/png"}]});
    let kept = read(unreadable).unwrap();
    assert_eq!(sampled_of(&kept), Err(TalkError::InvalidAnswer));
    // At the handshake revisions a client refuses with an error, kept as a form's `decline`.
    assert_eq!(
        sampled_of(&json!({"action": "decline"})),
        Err(TalkError::Declined)
    );
    assert_eq!(
        sampled_of(&json!({"action": "accept", "content": {}})),
        Err(TalkError::InvalidAnswer)
    );
}
