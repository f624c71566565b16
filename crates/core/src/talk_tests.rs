//! The talk-back channel's unit tests.
use super::*;
use crate::{ErrorClass, ToolError};

#[tokio::test]
async fn a_protocol_without_a_channel_says_what_it_cannot_carry() {
    let talk = TalkBack::new(Arc::new(Silent("oxp")));
    assert_eq!(
        talk.progress(1.0, None, Some("x")).await,
        Reported::NotCarried
    );
    assert_eq!(talk.view("v", Value::Null).await, Reported::NotCarried);
    // Detaching is a place in the tool, not a demand: without it the call goes on.
    assert!(talk.detach().await.is_ok());
    let asked = talk.ask(Ask::new("Go?", ["Yes", "No"])).await.unwrap_err();
    assert!(matches!(
        asked,
        TalkError::NotCarried {
            protocol: "oxp",
            ..
        }
    ));
    let error = ToolError::from(asked);
    assert_eq!(error.class, Some(ErrorClass::Unsupported));
    assert!(
        error.message.contains("oxp protocol cannot carry"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn a_malformed_question_is_refused_before_the_protocol_sees_it() {
    let talk = TalkBack::default();
    for ask in [
        Ask::new("Go?", Vec::<String>::new()),
        Ask::new("Go?", ["Yes"]).default(1),
        Ask::new("Go?", [""]),
    ] {
        assert!(matches!(talk.ask(ask).await, Err(TalkError::Invalid(_))));
    }
    let bad = Subscribe {
        source: String::new(),
        topic: "t".into(),
        max_events: None,
    };
    assert!(matches!(
        talk.subscribe(bad).await,
        Err(TalkError::Invalid(_))
    ));
}
