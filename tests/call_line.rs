//! The call line (target `oxp::call`) as an operator reads it during an incident: who called.

use crate::common;

use common::auth::*;
use common::*;
use jsonwebtoken::{Algorithm, EncodingKey};
use oxp_lambda::config::AuthConfig;
use serde_json::{Value, json};

/// The call line of call `call_id` among the lines captured.
fn line_of(captured: &Captured, call_id: &str) -> Value {
    captured
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["target"] == "oxp::call" && l["fields"]["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no call line for {call_id}"))
}

fn add(call_id: &str, b: Value) -> Value {
    json!({"request": {"call_id": call_id, "tool_id": "Calculator.Add", "input": {"a": 1, "b": b}}})
}

#[tokio::test]
async fn the_call_line_names_the_authenticated_caller_whether_its_call_ran_or_was_refused() {
    let captured = Captured::global();
    let authenticated = hs_app(false);
    let key = EncodingKey::from_secret(HS_KEY.as_bytes()).unwrap();
    let token = sign(Algorithm::HS256, None, &claims("who-called-7"), &key);
    let ran = uuid::Uuid::new_v4().to_string();
    let refused = uuid::Uuid::new_v4().to_string();
    call_with(&authenticated, &token, add(&ran, json!(2))).await;
    call_with(&authenticated, &token, add(&refused, json!("two"))).await;
    for (call_id, outcome) in [(&ran, "success"), (&refused, "invalid_input")] {
        let line = line_of(&captured, call_id);
        assert_eq!(line["fields"]["outcome"], outcome, "{line}");
        assert_eq!(line["fields"]["caller"], "who-called-7", "{line}");
    }
    // Without authentication there is no caller to name (the line has no such field).
    let anonymous = app(AuthConfig::None { explicit: true });
    let call_id = uuid::Uuid::new_v4().to_string();
    call(&anonymous, add(&call_id, json!(2))).await;
    let line = line_of(&captured, &call_id);
    assert!(line["fields"].get("caller").is_none(), "{line}");
}
