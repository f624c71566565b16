//! The local text line's fields, as `tracing_subscriber`'s default formatter writes them, with
//! one shortcut: a string that needs no escaping is written as it is, in quotes, instead of
//! through `str`'s `Debug`, which escapes it character by character. That `Debug` call was the
//! largest single cost of the call line in a profile (the call line is four such strings and a
//! number). Anything else, and any string with a quote, a backslash or a byte outside printable
//! ASCII, goes through the default visitor, so the bytes written are the same (tested below),
//! and a caller's newline still cannot start a forged line.

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
        if self.result.is_err() {
            return;
        }
        let mut default = DefaultVisitor::new(self.writer.by_ref(), self.empty);
        default.record_debug(field, value);
        self.result = default.finish();
        self.empty = false;
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
            tracing::warn!(target: "oxp::call", empty = "", "{}", "formatted\nmessage");
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
}
