//! The local server's log writer: lines are appended to a shared buffer (a lock and a copy on
//! the request's thread) and a writer thread writes what gathered in one system call.
//!
//! Why not `tracing_appender::non_blocking`: its channel wakes the writer for every few lines,
//! and on a loaded 2-core machine the wake-ups (and the receiver's spinning before it parks)
//! cost more than formatting the line. Here the writer is woken once per batch: by the first
//! line into an empty buffer, after which it waits [`GATHER`] for more. Idle, it sleeps.
//!
//! Bounded and lossless: a buffer past [`HIGH_WATER`] is written by the line that filled it, so
//! a slow output slows the loggers (back-pressure) instead of growing memory or losing lines.
//! Lines keep their order: whoever writes a batch takes the output before letting go of the
//! buffer.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::Thread;
use std::time::Duration;

/// How long the writer waits after the first line of a batch for more to gather.
const GATHER: Duration = Duration::from_millis(5);

/// Bytes buffered at most before a logging thread writes them itself.
const HIGH_WATER: usize = 1024 * 1024;

struct Shared {
    buffer: Mutex<Buffer>,
    output: Mutex<Box<dyn Write + Send>>,
}

#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    stopping: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock (in a write) leaves nothing inconsistent to fear.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    /// Writes out what is buffered. The output is taken before the buffer is let go, so
    /// batches are written in the order they were taken.
    fn drain(&self, mut buffer: MutexGuard<'_, Buffer>, spare: &mut Vec<u8>) {
        if buffer.bytes.is_empty() {
            return;
        }
        std::mem::swap(&mut buffer.bytes, spare);
        let mut output = lock(&self.output);
        drop(buffer);
        // Nowhere to report a failed log write but the log itself.
        let _ = output.write_all(spare).and_then(|()| output.flush());
        spare.clear();
    }
}

/// Where each formatted line goes (a cheap clone per line).
#[derive(Clone)]
pub(crate) struct Lines {
    shared: Arc<Shared>,
    writer: Thread,
}

/// Writes out what is buffered and stops the writer thread when dropped; lines logged after
/// that are written in place.
pub(crate) struct Guard {
    shared: Arc<Shared>,
    writer: Thread,
}

/// A writer of lines to `output` and the guard that writes the last of them out.
pub(crate) fn lines(output: impl Write + Send + 'static) -> (Lines, Guard) {
    let shared = Arc::new(Shared {
        buffer: Mutex::new(Buffer::default()),
        output: Mutex::new(Box::new(output)),
    });
    let theirs = shared.clone();
    let writer = std::thread::Builder::new()
        .name("oxp-log".into())
        .spawn(move || {
            let mut spare = Vec::with_capacity(64 * 1024);
            loop {
                std::thread::park();
                if !lock(&theirs.buffer).stopping {
                    std::thread::sleep(GATHER);
                }
                let buffer = lock(&theirs.buffer);
                let stopping = buffer.stopping;
                theirs.drain(buffer, &mut spare);
                if stopping {
                    return;
                }
            }
        })
        .expect("the log writer thread starts")
        .thread()
        .clone();
    (
        Lines {
            shared: shared.clone(),
            writer: writer.clone(),
        },
        Guard { shared, writer },
    )
}

/// One line's writer: a borrow of [`Lines`], nothing cloned per line.
pub(crate) struct Line<'a>(&'a Lines);

impl Lines {
    /// A writer for one line.
    pub(crate) fn line(&self) -> Line<'_> {
        Line(self)
    }

    fn append(&self, line: &[u8]) {
        let mut buffer = lock(&self.shared.buffer);
        let first = buffer.bytes.is_empty();
        buffer.bytes.extend_from_slice(line);
        // After shutdown began, written in place (after what was buffered), never lost.
        if buffer.stopping || buffer.bytes.len() >= HIGH_WATER {
            let mut spare = Vec::new();
            self.shared.drain(buffer, &mut spare);
        } else if first {
            drop(buffer);
            self.writer.unpark();
        }
    }
}

impl Write for Line<'_> {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        self.0.append(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Write for Lines {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        self.append(line);
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let mut buffer = lock(&self.shared.buffer);
        buffer.stopping = true;
        self.shared.drain(buffer, &mut Vec::new());
        self.writer.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logging::Captured;

    #[test]
    fn lines_from_many_threads_are_all_written_whole_and_in_each_threads_order() {
        let out = Captured::default();
        let (lines, guard) = lines(out.clone());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mut lines = lines.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000 {
                        // Past the high-water mark several times: the loggers write too.
                        lines
                            .write_all(format!("t{t} line {i:06}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        drop(lines);
        drop(guard);
        let text = out.text();
        for t in 0..4 {
            let mine: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with(&format!("t{t} ")))
                .collect();
            assert_eq!(mine.len(), 20_000, "every line of thread {t}");
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "in order");
        }
    }

    #[test]
    fn a_line_alone_is_written_within_moments() {
        let out = Captured::default();
        let (mut lines, _guard) = lines(out.clone());
        lines.write_all(b"alone\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while out.text().is_empty() {
            assert!(std::time::Instant::now() < deadline, "never written");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(out.text(), "alone\n");
    }
}
