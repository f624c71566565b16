//! The local text line's fields, as `tracing_subscriber`'s default formatter writes them, with
//! one shortcut: a string that needs no escaping is written as it is, in quotes, instead of
//! through `str`'s `Debug`, which escapes it character by character. That `Debug` call was the
//! largest single cost of the call line in a profile (the call line is four such strings and a
//! number). Anything else, and any string with a quote, a backslash or a byte outside printable
//! ASCII, goes through the default visitor, so the bytes written are the same (tested below).
//!
//! One difference: what the default visitor writes of a value by its `Display` (a library's
//! `%field`, as rmcp logs a JSON-RPC request's id, or a message's arguments) has its control
//! characters escaped as `str`'s `Debug` escapes them (`\n`, `\u{1b}`), so that no value, the
//! caller's text or not, can end the line and start a forged one, or write a terminal escape.

use std::fmt;
use tracing::field::{Field, Visit};
use tracing_subscriber::field::{RecordFields, VisitOutput};
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{DefaultVisitor, Writer};

/// The text line's field formatter.
#[derive(Debug, Default)]
pub(crate) struct TextFields;

impl<'w> FormatFields<'w> for TextFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut visitor = Visitor {
            writer,
            empty: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct Visitor<'w> {
    writer: Writer<'w>,
    empty: bool,
    result: fmt::Result,
}

/// Whether `{:?}` of `s` is `s` in quotes.
fn plain(s: &str) -> bool {
    s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        let name = field.name();
        if self.result.is_err() || name == "message" || name.starts_with("r#") || !plain(value) {
            return self.record_debug(field, &value);
        }
        let w = &mut self.writer;
        self.result = (|| {
            if !self.empty {
                w.write_char(' ')?;
            }
            w.write_str(name)?;
            w.write_str("=\"")?;
            w.write_str(value)?;
            w.write_char('"')
        })();
        self.empty = false;
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.record_default(field, value, true);
    }

    // A number or a flag holds no control character: written as the default visitor writes it,
    // without the escaping's pass over each piece (the call line's duration is one).
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.record_default(field, &value, false);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.record_default(field, &value, false);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.record_default(field, &value, false);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.record_default(field, &value, false);
    }
}

impl Visitor<'_> {
    /// `value` as the default visitor writes it, its control characters escaped if `escape`.
    fn record_default(&mut self, field: &Field, value: &dyn fmt::Debug, escape: bool) {
        if self.result.is_err() {
            return;
        }
        let mut escaping = Escaping(&mut self.writer);
        let writer = match escape {
            true => Writer::new(&mut escaping),
            false => escaping.0.by_ref(),
        };
        let mut default = DefaultVisitor::new(writer, self.empty);
        default.record_debug(field, value);
        self.result = default.finish();
        self.empty = false;
    }
}

/// Writes through to the line, each control character (and each Unicode line or paragraph
/// separator) escaped as `str`'s `Debug` escapes it.
struct Escaping<'a, 'w>(&'a mut Writer<'w>);

impl fmt::Write for Escaping<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // As almost every value is: printable ASCII, written as it is.
        if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return self.0.write_str(s);
        }
        let mut written = 0;
        for (at, c) in s.char_indices() {
            if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
                self.0.write_str(&s[written..at])?;
                write!(self.0, "{}", c.escape_debug())?;
                written = at + c.len_utf8();
            }
        }
        self.0.write_str(&s[written..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logging::Captured;

    fn lines(fast: bool, emit: impl Fn()) -> String {
        let out = Captured::default();
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .without_time()
            .with_writer(out.clone());
        let subscriber: Box<dyn tracing::Subscriber + Send + Sync> = if fast {
            use tracing_subscriber::prelude::*;
            Box::new(tracing_subscriber::registry().with(layer.fmt_fields(TextFields)))
        } else {
            use tracing_subscriber::prelude::*;
            Box::new(tracing_subscriber::registry().with(layer))
        };
        tracing::subscriber::with_default(subscriber, emit);
        out.text()
    }

    #[test]
    fn lines_are_byte_for_byte_those_of_the_default_formatter() {
        let emit = || {
            let forged = "x\n2026-01-01T00:00:00Z  INFO oxp::call: outcome=\"success\"";
            tracing::info!(
                target: "oxp::call",
                protocol = "oxp",
                call_id = "123e4567-e89b-12d3-a456-426614174000",
                tool_id = forged,
                quoted = "say \"hi\" \\ é \u{1b}[31m",
                r#type = "raw",
                missing = None::<&str>,
                duration_ms = 0.25,
                count = 3u64,
                flag = true,
                "a message with \"quotes\""
            );
            tracing::warn!(target: "oxp::call", empty = "", "{}", "formatted message");
            let span = tracing::info_span!("call", tool = "Calculator.Add", call_id = "a\"b");
            let _in = span.enter();
            tracing::info!(outcome = "success");
        };
        let fast = lines(true, emit);
        assert_eq!(fast, lines(false, emit));
        assert!(
            !fast.lines().any(|l| l.starts_with("2026")),
            "a caller's newline starts no line: {fast}"
        );
        assert!(fast.contains(r#"protocol="oxp" call_id="123e4567-e89b-12d3-a456-426614174000""#));
    }

    #[test]
    fn a_value_written_by_display_or_a_message_cannot_end_its_line_or_write_an_escape() {
        // As rmcp logs a request it answered with an error: `warn!(%id, ?error, ...)`, the id
        // the caller's JSON-RPC id, whatever it holds.
        let id =
            "1\n2026-01-01T00:00:00Z  INFO oxp::call: outcome=\"success\"\u{0}\u{1b}[2J\u{2028}";
        let text = lines(true, || {
            tracing::warn!(id = %id, "response error");
            tracing::info!("{}", id);
            tracing::info_span!("serve", id = %id).in_scope(|| tracing::info!("inside"));
        });
        assert_eq!(text.lines().count(), 3, "one line each: {text}");
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && (c.is_control() || c == '\u{2028}')),
            "{text:?}"
        );
        assert!(
            text.contains(r#"id=1\n2026-01-01T00:00:00Z  INFO oxp::call: outcome="success"\0\u{1b}[2J\u{2028}"#),
            "escaped as str's Debug escapes them, the rest as it came: {text}"
        );
    }
}
