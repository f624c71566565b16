//! Every line held to [`MAX_LINE_BYTES`]: a longer one is cut and marked, a JSON line staying
//! one valid object, so one event can fill neither the writer's queue nor the log.

use tracing_subscriber::fmt;

/// Longest line written. A longer one (a tool's panic message quoting a large value, say) is
/// cut to this many bytes and marked, so one event can neither fill the queue nor the log.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024;

/// A writer that holds every line to [`MAX_LINE_BYTES`]: `tracing_subscriber` formats an
/// event into one buffer and writes it with one `write_all`, so each `write` is one line.
#[derive(Clone)]
pub(super) struct Capped<M> {
    pub(super) inner: M,
    pub(super) json: bool,
}

impl<'a, M: fmt::MakeWriter<'a>> fmt::MakeWriter<'a> for Capped<M> {
    type Writer = CappedWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        CappedWriter {
            inner: self.inner.make_writer(),
            json: self.json,
        }
    }
}

/// One line's writer of [`Capped`].
pub(super) struct CappedWriter<W> {
    inner: W,
    json: bool,
}

impl<W: std::io::Write> std::io::Write for CappedWriter<W> {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        // In a Lambda invocation, a JSON line carries the invocation's fields, spliced in as
        // one write (a line written in parts could interleave with another task's).
        if self.json
            && line.first() == Some(&b'{')
            && let Some(fields) = crate::observe::current_fields()
        {
            let mut whole = Vec::with_capacity(line.len() + fields.json.len() + 1);
            whole.push(b'{');
            whole.extend_from_slice(fields.json.as_bytes());
            whole.push(b',');
            whole.extend_from_slice(&line[1..]);
            self.write_line(&whole)?;
            return Ok(line.len());
        }
        self.write_line(line)?;
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: std::io::Write> CappedWriter<W> {
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<usize> {
        if line.len() <= MAX_LINE_BYTES {
            return self.inner.write_all(line).map(|()| line.len());
        }
        self.inner.write_all(cut(line, self.json).as_bytes())?;
        Ok(line.len())
    }
}

/// `line` cut to at most [`MAX_LINE_BYTES`], saying so: text keeps its head and a marker; a
/// JSON line becomes a JSON object whose `truncated_line` holds the head as a string, so the
/// log stays one valid object per line.
fn cut(line: &[u8], json: bool) -> String {
    let text = String::from_utf8_lossy(line);
    let marker = format!(" [line cut: {} bytes]", line.len());
    let room = MAX_LINE_BYTES - 64 - marker.len();
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if !json {
        return format!("{}{marker}\n", &text[..end]);
    }
    // A JSON string of the head: escaping may grow it, so shrink until it fits.
    loop {
        let head = serde_json::Value::String(text[..end].to_owned()).to_string();
        if head.len() + marker.len() + 64 <= MAX_LINE_BYTES {
            return format!(
                "{{\"level\":\"WARN\",\"target\":\"oxp::log\",\"truncated_line\":{head},\"bytes\":{}}}\n",
                line.len()
            );
        }
        end = end * 3 / 4;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through_capped(line: &[u8], json: bool) -> Vec<u8> {
        use std::io::Write;
        let mut out = Vec::new();
        let mut w = CappedWriter {
            inner: &mut out,
            json,
        };
        w.write_all(line).unwrap();
        out
    }

    #[test]
    fn a_line_over_the_bound_is_cut_and_marked_and_a_short_one_is_untouched() {
        let short = b"INFO oxp::call: outcome=ok\n";
        assert_eq!(through_capped(short, false), short);
        let long = format!("ERROR oxp::panic: {}é\n", "x".repeat(300 * 1024));
        let cut = String::from_utf8(through_capped(long.as_bytes(), false)).unwrap();
        assert!(cut.len() <= MAX_LINE_BYTES, "{}", cut.len());
        assert!(cut.starts_with("ERROR oxp::panic: xxx"));
        assert!(cut.ends_with(&format!(" [line cut: {} bytes]\n", long.len())));
        assert_eq!(cut.matches('\n').count(), 1, "still one line");
    }

    #[test]
    fn a_json_line_over_the_bound_stays_one_valid_json_object() {
        let value = "\"\u{1}".repeat(100 * 1024); // escaping doubles or sextuples it
        let long = format!(
            "{}\n",
            serde_json::json!({"level": "ERROR", "message": value})
        );
        let cut = through_capped(long.as_bytes(), true);
        assert!(cut.len() <= MAX_LINE_BYTES, "{}", cut.len());
        assert_eq!(cut.iter().filter(|b| **b == b'\n').count(), 1);
        let parsed: serde_json::Value = serde_json::from_slice(&cut).unwrap();
        assert_eq!(parsed["bytes"], long.len());
        assert!(
            parsed["truncated_line"]
                .as_str()
                .unwrap()
                .starts_with(r#"{"level":"ERROR""#)
        );
    }
}
