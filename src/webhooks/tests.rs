//! Reading a source's events and its variables.

use super::*;
use crate::config::Vars;
use crate::settings::Env;

fn config(vars: &[(&str, &str)]) -> Result<WebhooksConfig, crate::settings::ConfigError> {
    let vars: Vars = vars.iter().copied().collect();
    WebhooksConfig::from_env(&Env::new(false, &vars))
}

#[test]
fn the_sources_are_demo_and_github_unless_the_variables_say_otherwise() {
    let c = config(&[]).unwrap();
    let ids: Vec<_> = c
        .sources
        .iter()
        .map(|s| (s.id.as_str(), s.kind, s.secret_id.as_str()))
        .collect();
    assert_eq!(
        ids,
        [
            ("demo", Kind::Demo, "DEMO_WEBHOOK_SECRET"),
            ("github", Kind::GitHub, "GITHUB_WEBHOOK_SECRET")
        ]
    );
    let c = config(&[
        ("OXP_WEBHOOK_SOURCES", "ci-events"),
        ("OXP_WEBHOOK_CI_EVENTS_KIND", "github"),
    ])
    .unwrap();
    assert_eq!(c.sources[0].secret_id, "CI_EVENTS_WEBHOOK_SECRET");
    assert_eq!(c.sources[0].kind, Kind::GitHub);
    for bad in [
        &[("OXP_WEBHOOK_SOURCES", "Demo")][..],
        &[("OXP_WEBHOOK_SOURCES", "other")],
    ] {
        assert_eq!(config(bad).unwrap_err().variable, "OXP_WEBHOOK_SOURCES");
    }
}

#[test]
fn a_demo_event_goes_to_its_topic_as_json_text() {
    let body = br#"{"topic": "builds", "event": {"status": "green", "n": 7}}"#;
    let events = Kind::Demo.events(&HeaderMap::new(), body).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].0, "builds");
    let text: serde_json::Value = serde_json::from_str(&events[0].1).unwrap();
    assert_eq!(text, json!({"status": "green", "n": 7}));
    for bad in [
        &b"not json"[..],
        br#"{"event": 1}"#,
        br#"{"topic": "", "event": 1}"#,
        br#"{"topic": "t"}"#,
    ] {
        assert!(Kind::Demo.events(&HeaderMap::new(), bad).is_err());
    }
}

#[test]
fn a_github_event_goes_to_its_repository_and_to_the_repository_and_event() {
    let mut headers = HeaderMap::new();
    headers.insert("x-github-event", HeaderValue::from_static("pull_request"));
    let body = br#"{"action": "opened", "repository": {"full_name": "acme/api"}}"#;
    let topics: Vec<String> = Kind::GitHub
        .events(&headers, body)
        .unwrap()
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    assert_eq!(topics, ["acme/api", "acme/api/pull_request"]);
    assert!(
        Kind::GitHub.events(&HeaderMap::new(), body).is_err(),
        "no event header"
    );
}
