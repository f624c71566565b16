//! The local text line's timestamp, as `tracing_subscriber`'s default (`SystemTime`) writes it
//! (`2026-11-24T08:14:49.123456Z`, UTC, microseconds), with the date and time of day rendered
//! once per second per thread: only the microseconds change between most lines, and rendering
//! the calendar date was the next largest cost of the call line in a profile.

use std::cell::RefCell;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

/// The text line's timer.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CachedUtc;

thread_local! {
    /// The second last rendered on this thread, and its `YYYY-MM-DDTHH:MM:SS.` prefix.
    static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

impl FormatTime for CachedUtc {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let now = SystemTime::now();
        let Ok(since) = now.duration_since(UNIX_EPOCH) else {
            // Before 1970: the default formatter knows how.
            return tracing_subscriber::fmt::time::SystemTime.format_time(w);
        };
        let (secs, micros) = (since.as_secs(), since.subsec_micros());
        SECOND.with(|cell| {
            let mut cell = cell.borrow_mut();
            if cell.0 != secs {
                let whole = humantime::format_rfc3339_seconds(now).to_string();
                cell.1.clear();
                cell.1.push_str(whole.trim_end_matches('Z'));
                cell.1.push('.');
                cell.0 = secs;
            }
            let mut digits = *b"000000Z";
            let mut n = micros;
            for d in digits[..6].iter_mut().rev() {
                *d = b'0' + (n % 10) as u8;
                n /= 10;
            }
            w.write_str(&cell.1)?;
            // Six ASCII digits and a `Z`.
            w.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(timer: &impl FormatTime) -> String {
        let mut s = String::new();
        timer.format_time(&mut Writer::new(&mut s)).unwrap();
        s
    }

    #[test]
    fn the_timestamp_is_the_default_formatters_to_the_microsecond_shape() {
        for _ in 0..3 {
            let (before, ours, after) = (
                render(&tracing_subscriber::fmt::time::SystemTime),
                render(&CachedUtc),
                render(&tracing_subscriber::fmt::time::SystemTime),
            );
            assert_eq!(ours.len(), before.len(), "{ours} vs {before}");
            assert!(
                before <= ours && ours <= after,
                "{before} <= {ours} <= {after}"
            );
            std::thread::sleep(std::time::Duration::from_millis(400));
        }
    }
}
