//! The one naming rule every protocol shares: a tool's listing name (`Calculator_Add`) is its
//! dotted name (`Calculator.Add`) with each `.` as `_`, because model-facing tool names may not
//! contain dots. The registry resolves both forms. And the one rule for showing a caller's text
//! back in an error ([`shown`]), and for telling a caller its value did not fit a type without
//! repeating the value ([`unfit`]).

/// The listing name of dotted tool name `name`.
pub(crate) fn listing_name(name: &str) -> String {
    name.replace('.', "_")
}

/// The most characters of what a caller sent that an answer shows back (a tool id, a version).
pub const SHOWN: usize = 64;

/// `text` (the caller's) as an error may show it back: at most [`SHOWN`] characters, without
/// control characters, marked when cut. Every protocol's refusal shows a caller's value only
/// through this, so a 256-character id or a bell character never comes back as sent.
pub fn shown(text: &str) -> String {
    shown_at_most(text, SHOWN)
}

/// `text` as [`shown`] has it, at most `most` characters: for a message that quotes the
/// caller's values among words of its own.
pub fn shown_at_most(text: &str, most: usize) -> String {
    let mut kept = text.chars().filter(|c| !c.is_control());
    let mut shown: String = kept.by_ref().take(most).collect();
    if kept.next().is_some() {
        shown.push('…');
    }
    shown
}

/// serde's forms that quote what they found (the caller's) before what was expected, each with
/// the words an answer keeps of it.
const QUOTING: [(&str, &str); 5] = [
    ("invalid type: ", "invalid type"),
    ("invalid value: ", "invalid value"),
    ("invalid length ", "invalid length"),
    ("unknown variant `", "unknown variant"),
    ("unknown field `", "unknown field"),
];

/// What serde's `error` says of a value that did not fit a type, as serde says it (the kind of
/// misfit, then where, for text) but without the value: serde quotes what it found (`invalid
/// type: string "…"`, ``unknown variant `…` ``, ``integer `5` ``), which is the caller's. What
/// stays is serde's kind of misfit and what the type expected, a missing or repeated field's
/// name (the type's), or, for JSON that could not be read at all, serde_json's own words (which
/// quote nothing); and the position, when the error has one.
pub fn unfit(error: &serde_json::Error) -> String {
    let text = error.to_string();
    // The position serde_json adds, exactly (the caller's text may hold " at line ").
    let position = format!(" at line {} column {}", error.line(), error.column());
    let (message, at) = match text.strip_suffix(position.as_str()) {
        Some(message) => (message, position.as_str()),
        None => (text.as_str(), ""),
    };
    let told = match error.classify() {
        serde_json::error::Category::Data => misfit(message),
        _ => message.to_owned(),
    };
    format!("{told}{at}")
}

/// A data error's message without what was found. A message of any other form than serde's, a
/// type's own `Deserialize`'s, may quote anything: only that the value did not fit.
fn misfit(message: &str) -> String {
    let quoting = QUOTING.iter().find(|(form, _)| message.starts_with(form));
    // What was expected comes last (after whatever was found, which may hold the same words).
    let expected = quoting.and_then(|(_, kind)| {
        let (_, expected) = message.rsplit_once(", expected ")?;
        let none = expected.ends_with("there are no variants")
            || expected.ends_with("there are no fields");
        (!none).then(|| format!("{kind}, expected {expected}"))
    });
    let named = ["missing field `", "duplicate field `"].iter().any(|form| {
        message
            .strip_prefix(form)
            .and_then(|rest| rest.strip_suffix('`'))
            .is_some_and(|name| !name.contains('`'))
    });
    match expected {
        Some(expected) => expected,
        None if named => message.to_owned(),
        None => "a value of the wrong type or form".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "read to fail")]
    struct Input {
        small: Option<u8>,
        colour: Option<Colour>,
        list: Option<[u8; 2]>,
        needed: u8,
    }

    #[derive(Debug, Deserialize)]
    enum Colour {
        Red,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Nothing {}

    #[derive(Debug, Deserialize)]
    enum Never {}

    /// What serde found is the caller's: what it quotes never comes back, from a value or
    /// from text (whose errors keep their position).
    #[test]
    fn a_value_that_does_not_fit_is_told_by_what_was_expected_never_by_what_was_sent() {
        let sent = "sk_live, expected <script>` at line 1 column 2";
        let cases = [
            (
                json!({"needed": 1, "small": sent}),
                "invalid type, expected u8",
            ),
            (
                json!({"needed": 1, "colour": sent}),
                "unknown variant, expected `Red`",
            ),
            (
                json!({"needed": 1, sent: 1}),
                "unknown field, expected one of `small`, `colour`, `list`, `needed`",
            ),
            (
                json!({"needed": 1, "list": [1]}),
                "invalid length, expected an array of length 2",
            ),
            (
                json!({"needed": 1, "small": 300}),
                "invalid value, expected u8",
            ),
            (json!({"colour": "Red"}), "missing field `needed`"),
        ];
        for (input, told) in cases {
            let from_value = serde_json::from_value::<Input>(input.clone()).unwrap_err();
            let from_text = serde_json::from_str::<Input>(&input.to_string()).unwrap_err();
            assert_eq!(unfit(&from_value), told, "{from_value}");
            let at = format!(" at line 1 column {}", from_text.column());
            assert_eq!(unfit(&from_text), format!("{told}{at}"), "{from_text}");
        }
    }

    /// With nothing to expect, serde's message ends with what was found; a type's own message
    /// may quote anything: neither is passed on.
    #[test]
    fn a_message_that_ends_with_what_was_sent_or_of_a_types_own_is_not_passed_on() {
        let sent = "a, expected sk_live";
        let errors = [
            serde_json::from_value::<Nothing>(json!({ sent: 1 })).unwrap_err(),
            serde_json::from_value::<Never>(json!(sent)).unwrap_err(),
            <serde_json::Error as serde::de::Error>::custom(format!("bad {sent}")),
        ];
        for error in errors {
            assert_eq!(
                unfit(&error),
                "a value of the wrong type or form",
                "{error}"
            );
        }
    }

    /// JSON that could not be read at all is told in serde_json's words, which quote nothing.
    #[test]
    fn unreadable_json_is_told_in_serde_jsons_words() {
        let error = serde_json::from_str::<Input>("{\"needed\": sk_live}").unwrap_err();
        assert_eq!(unfit(&error), "expected value at line 1 column 12");
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let error = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
        assert_eq!(
            unfit(&error),
            "recursion limit exceeded at line 1 column 128"
        );
    }

    #[test]
    fn a_callers_text_is_shown_at_most_64_characters_without_control_characters_marked_when_cut() {
        assert_eq!(shown("Bad\u{7}\nName"), "BadName");
        // Characters, not bytes: 64 of a two-byte letter are shown whole and unmarked.
        assert_eq!(shown(&"é".repeat(64)), "é".repeat(64));
        assert_eq!(shown(&"é".repeat(65)), format!("{}…", "é".repeat(64)));
        // Control characters do not count against the 64.
        let spaced = format!("{}\n", "x".repeat(64));
        assert_eq!(shown(&spaced), "x".repeat(64));
    }
}
