//! The authorization flow's unit tests: who the user is, by the provider's answer.
use super::*;

#[test]
fn the_user_is_named_by_a_configured_field_and_an_email_only_unless_unverified() {
    let fields = ["sub".to_owned(), "email".to_owned()];
    let info = serde_json::json!({"sub": "u-1", "email": "Alice@Example.com"});
    assert!(identifies(&info, &fields, "u-1"));
    assert!(identifies(&info, &fields, "alice@example.com"));
    assert!(!identifies(&info, &fields, "bob@example.com"));
    assert!(!identifies(&info, &fields[..1], "alice@example.com"));
    let unverified =
        serde_json::json!({"sub": "u-2", "email": "alice@example.com", "email_verified": false});
    assert!(!identifies(&unverified, &fields, "alice@example.com"));
    assert!(!identifies(&serde_json::json!({"sub": ""}), &fields, ""));
    let github = serde_json::json!({"id": 42, "login": "alice"});
    assert!(identifies(&github, &["id".to_owned()], "42"));
}

#[test]
fn granted_scopes_are_read_whether_comma_or_space_separated() {
    for (scope, expected) in [
        ("repo,gist", vec!["repo", "gist"]),
        ("openid offline_access", vec!["openid", "offline_access"]),
    ] {
        let answer: oauth2::basic::BasicTokenResponse = serde_json::from_value(
            serde_json::json!({"access_token": "t", "token_type": "bearer", "scope": scope}),
        )
        .unwrap();
        assert_eq!(granted(&answer, None).scopes.unwrap(), expected, "{scope}");
    }
}

#[test]
fn a_refresh_answer_without_a_new_refresh_token_keeps_the_old_one() {
    let answer: oauth2::basic::BasicTokenResponse = serde_json::from_value(
        serde_json::json!({"access_token": "t2", "token_type": "Bearer", "expires_in": 3600}),
    )
    .unwrap();
    let granted = granted(&answer, Some("r1"));
    assert_eq!(granted.refresh.as_deref(), Some("r1"));
    assert!(granted.expires.is_some() && granted.scopes.is_none());
}

#[tokio::test]
async fn a_provider_out_of_reach_is_said_by_what_failed_never_by_its_url() {
    // Nothing listens on port 9.
    let request = http::Request::post("http://127.0.0.1:9/token?client_secret=s3cr3t")
        .body(Vec::new())
        .unwrap();
    let Err(SendError(why)) = send(&reqwest::Client::new(), request).await else {
        panic!("sent")
    };
    assert!(why.contains("Connection refused"), "{why}");
    assert!(!why.contains("s3cr3t") && !why.contains("/token"), "{why}");
}
