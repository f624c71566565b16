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

/// A client whose user submits `values` for every form.
#[derive(Debug)]
struct Submits(Value);

impl Talk for Submits {
    fn protocol(&self) -> &'static str {
        "mcp"
    }

    fn fill(&self, _: Form, _: u32) -> TalkFuture<'_, Result<Filled, TalkError>> {
        let values = self.0.as_object().cloned().unwrap_or_default();
        Box::pin(std::future::ready(Ok(Filled::Accepted(values))))
    }
}

fn profile_form() -> Form {
    Form::new(
        "profile",
        "Who are you?",
        serde_json::json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "maxLength": 32},
            "age": {"type": "integer", "minimum": 0},
        }}),
    )
}

/// MCP: "Servers SHOULD validate received data matches the requested schema".
#[tokio::test]
async fn what_a_client_submits_for_a_form_reaches_the_tool_only_if_it_fits_the_form() {
    let submits = |values: Value| TalkBack::new(Arc::new(Submits(values)));
    let fits = serde_json::json!({"name": "Ada", "age": 36});
    let filled = submits(fits.clone()).fill(profile_form()).await.unwrap();
    assert_eq!(filled, Filled::Accepted(fits.as_object().unwrap().clone()));
    let unfit = serde_json::json!({"name": "SECRET-VALUE".repeat(10), "age": -4});
    let refused = submits(unfit).fill(profile_form()).await.unwrap_err();
    let TalkError::UnfitAnswer(fields) = &refused else {
        panic!("{refused:?}");
    };
    assert_eq!(fields["name"], "Must be at most 32 characters long");
    assert_eq!(fields["age"], "Must be at least 0");
    let missing = submits(serde_json::json!({"age": 1}))
        .fill(profile_form())
        .await;
    assert!(matches!(missing, Err(TalkError::UnfitAnswer(f)) if f["name"] == "Is required"));
    // The tool's error names the fields and what the form asks, never what was sent.
    let error = ToolError::from(refused);
    assert!(
        error.message.contains("not what the form asks for"),
        "{}",
        error.message
    );
    let detail = error.developer_message.unwrap_or_default();
    assert!(detail.contains("age: Must be at least 0"), "{detail}");
    assert!(
        !detail.contains("SECRET-VALUE") && !detail.contains("-4"),
        "{detail}"
    );
}

#[tokio::test]
async fn a_form_whose_schema_does_not_compile_is_refused_before_the_client_sees_it() {
    let talk = TalkBack::new(Arc::new(Submits(serde_json::json!({"name": "Ada"}))));
    let form = Form::new(
        "profile",
        "Who?",
        serde_json::json!({"type": "object", "properties": {"name": {"type": "string", "pattern": "("}}}),
    );
    assert!(matches!(talk.fill(form).await, Err(TalkError::Invalid(_))));
}

#[test]
fn a_server_not_set_up_for_it_fails_the_call_not_to_be_retried_naming_the_setting_to_the_developer()
{
    // No retry brings a setting; a server that failed for a moment is another error.
    let error = ToolError::from(TalkError::NotSetUp("set OXP_RAP_ENDPOINT".into()));
    assert_eq!(error.class, Some(ErrorClass::Unsupported));
    assert!(!error.can_retry);
    assert!(!error.message.contains("OXP_"), "{}", error.message);
    assert!(
        error
            .developer_message
            .as_deref()
            .is_some_and(|d| d.contains("OXP_RAP_ENDPOINT")),
        "{error:?}"
    );
    let failed = ToolError::from(TalkError::Unavailable("the store did not answer".into()));
    assert_eq!(failed.class, Some(ErrorClass::Unavailable));
    assert!(failed.can_retry);
}
