//! The idempotency books' unit tests: claims, fingerprints and the outcomes kept.
use super::*;
use serde_json::json;

fn outcome() -> StoredOutcome {
    StoredOutcome::new(&Ok(json!(15).into()), Duration::from_millis(2))
}

fn print(
    tool_id: &str,
    user_id: Option<&str>,
    input: Value,
    credentials: &[(&str, &str)],
) -> String {
    fingerprint(&Fingerprinted {
        tool_id,
        user_id,
        input: &input,
        credentials,
    })
}

#[test]
fn a_fingerprint_is_the_sha256_of_its_parts_in_lowercase_hex_as_stores_already_hold_it() {
    // Keys written by earlier versions stay found: the same bytes hashed, the same text.
    let digest = Sha256::digest(b"T@1.0.0\0u\0{\"a\":1}\0KEY\0s");
    let expected: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        print("T@1.0.0", Some("u"), json!({"a": 1}), &[("KEY", "s")]),
        expected
    );
    assert_eq!(lower_hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
}

#[test]
fn fingerprints_depend_on_tool_user_input_and_credentials_not_key_order() {
    let a = print("T@1.0.0", None, json!({"a": 1, "b": 2}), &[]);
    let reordered = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
    assert_eq!(a, print("T@1.0.0", None, reordered, &[]));
    assert_ne!(a, print("T@1.0.1", None, json!({"a": 1, "b": 2}), &[]));
    assert_ne!(a, print("T@1.0.0", Some("u"), json!({"a": 1, "b": 2}), &[]));
    assert_ne!(a, print("T@1.0.0", None, json!({"a": 1, "b": 3}), &[]));
    // A number is its value, however it is spelled (`1.0` was another call than `1`).
    let spelled = serde_json::from_str(r#"{"a":1.0,"b":2e0}"#).unwrap();
    assert_eq!(a, print("T@1.0.0", None, spelled, &[]));
    let zeros = |text: &str| print("T@1.0.0", None, serde_json::from_str(text).unwrap(), &[]);
    assert_eq!(zeros(r#"{"z":0}"#), zeros(r#"{"z":-0.0}"#));
    assert_ne!(zeros(r#"{"z":1.5}"#), zeros(r#"{"z":1}"#));
    assert_ne!(zeros(r#"{"z":1e300}"#), zeros(r#"{"z":1e299}"#));
    let with = print(
        "T@1.0.0",
        None,
        json!({}),
        &[("google", "t1"), ("KEY", "s")],
    );
    assert_eq!(
        with,
        print(
            "T@1.0.0",
            None,
            json!({}),
            &[("KEY", "s"), ("google", "t1")]
        )
    );
    assert_ne!(
        with,
        print(
            "T@1.0.0",
            None,
            json!({}),
            &[("google", "t2"), ("KEY", "s")]
        )
    );
}

#[test]
fn keys_are_scoped_by_protocol_and_caller() {
    assert_eq!(scoped_key("oxp", None, None, "c1"), "oxp:anon:c1");
    assert_ne!(
        scoped_key("oxp", None, None, "c1"),
        scoped_key("rap", None, None, "c1")
    );
    let alice = scoped_key("oxp", Some("alice"), None, "c1");
    assert_ne!(alice, scoped_key("oxp", Some("bob"), None, "c1"));
    assert!(alice.ends_with(":c1") && !alice.contains("alice"));
}

#[test]
fn a_keys_caller_tag_is_its_callers_whatever_the_scope_and_call_id() {
    let alice = caller_tag(&scoped_key("oxp", Some("alice"), None, "c1")).to_owned();
    assert_eq!(alice.len(), 16);
    for key in [
        scoped_key("rap", Some("alice"), Some("thread"), "c:2"),
        scoped_key("mcp", Some("alice"), None, "a:b:c"),
    ] {
        assert_eq!(caller_tag(&key), alice, "{key}");
    }
    assert_ne!(
        caller_tag(&scoped_key("oxp", Some("bob"), None, "c1")),
        alice
    );
    assert_eq!(caller_tag(&scoped_key("oxp", None, None, "c1")), "anon");
    assert_eq!(caller_tag("k1"), caller_tag("k:2"));
}

#[test]
fn a_call_id_in_one_scope_is_another_call_than_the_same_id_in_another() {
    let a = scoped_key("rap", None, Some("thread_A"), "call_1");
    assert_ne!(a, scoped_key("rap", None, Some("thread_B"), "call_1"));
    assert_eq!(a, scoped_key("rap", None, Some("thread_A"), "call_1"));
    assert!(a.ends_with(":call_1") && !a.contains("thread_A"), "{a}");
}

#[test]
fn a_key_is_the_text_stores_already_hold_protocol_caller_tag_scope_tag_and_call_id() {
    // Keys written by earlier versions stay found: each tag the first 8 bytes of the
    // SHA-256 of its text, in lowercase hex, between colons.
    let tag = |text: &str| -> String {
        Sha256::digest(text.as_bytes())[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    assert_eq!(
        scoped_key("oxp", Some("alice"), None, "c1"),
        format!("oxp:{}:c1", tag("alice"))
    );
    assert_eq!(
        scoped_key("rap", Some("alice"), Some("thread_A"), "c1"),
        format!("rap:{}:{}:c1", tag("alice"), tag("thread_A"))
    );
    assert_eq!(
        scoped_key("rap", None, Some("thread_A"), "c1"),
        format!("rap:anon:{}:c1", tag("thread_A"))
    );
}

#[test]
fn a_caller_without_a_subject_cannot_spell_another_callers_key() {
    let alice = scoped_key("oxp", Some("alice"), None, "c1");
    let (_, tagged) = alice.split_once(':').unwrap();
    assert_ne!(scoped_key("oxp", None, None, tagged), alice);
}

#[test]
fn outcomes_round_trip_without_retry_fields() {
    let err = ToolError::new("no").developer_message("d");
    let stored = StoredOutcome::new(&Err(err.clone()), Duration::from_millis(1));
    assert_eq!(stored.result().unwrap_err(), err);
    assert_eq!(outcome().result().unwrap().value, json!(15));
    let rich = ToolOutput::new(json!(1)).content(Content::image(vec![1u8, 2], "image/png"));
    let stored = StoredOutcome::new(&Ok(rich.clone()), Duration::ZERO);
    let json = serde_json::to_string(&stored).unwrap();
    let back: StoredOutcome = serde_json::from_str(&json).unwrap();
    assert_eq!(back.result().unwrap(), rich);
}
