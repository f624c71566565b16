//! The one naming rule every protocol shares: a tool's listing name (`Calculator_Add`) is its
//! dotted name (`Calculator.Add`) with each `.` as `_`, because model-facing tool names may not
//! contain dots. The registry resolves both forms. And the one rule for showing a caller's text
//! back in an error ([`shown`]).

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

#[cfg(test)]
mod tests {
    use super::*;

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
