//! The handshake revisions' questions: sessions, numbering, answers.
use super::*;
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::secrets::{ClientSecrets, Secrets};

fn trips(on_stream: bool) -> RoundTrips {
    let secrets = Secrets::new(None, Duration::from_secs(60), ClientSecrets::Unheld);
    let store: Arc<dyn StateStore> = Arc::new(crate::state::embedded::Embedded::new(None));
    let mut trips = RoundTrips::new(
        secrets,
        false,
        Some(Arc::new(crate::work::Questions::new(store))),
    );
    trips.on_stream = on_stream;
    trips
}

fn init() -> Message<'static> {
    Message::read(INIT.as_bytes()).unwrap()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#;

#[tokio::test]
async fn a_session_is_given_only_where_the_question_reaches_the_client_in_time() {
    // Lambda's buffered answers would hold the question until the call ended.
    assert!(trips(false).session_for(&init(), None).await.is_none());
    let trips = trips(true);
    let token = trips.session_for(&init(), Some("alice")).await.unwrap();
    assert!(trips.open_session(&token, Some("alice")).await.is_some());
    assert!(trips.open_session(&token, Some("bob")).await.is_none());
    assert!(trips.open_session(&token, None).await.is_none());
}

#[test]
fn only_a_response_or_an_error_is_an_answer() {
    let is_answer =
        |body: &'static str| Message::read(body.as_bytes()).is_ok_and(|m| m.is_answer());
    assert!(is_answer(
        r#"{"jsonrpc":"2.0","id":0,"result":{"action":"cancel"}}"#
    ));
    assert!(is_answer(
        r#"{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}"#
    ));
    assert!(!is_answer(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
    ));
    assert!(!is_answer(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
    ));
    assert!(!is_answer("[1, 2]"));
}
