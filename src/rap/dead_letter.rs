//! Where results that could not be delivered are recorded, with the reason, so that none is
//! silently lost: a JSON-lines file locally, an SQS queue in Lambda.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

/// One undeliverable result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct DeadLetter {
    /// Why delivery stopped.
    pub(crate) reason: String,
    /// Delivery attempts made.
    pub(crate) attempts: u32,
    /// The callback URL the message was for.
    pub(crate) callback_url: String,
    /// The operation, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) operation: Option<String>,
    /// When the invocation was acknowledged (RFC 3339).
    pub(crate) received_at: String,
    /// When delivery was given up (RFC 3339).
    pub(crate) failed_at: String,
    /// The message that was not delivered (a `tool_result`, a `subscription_event`), ready to
    /// be sent again.
    pub(crate) message: serde_json::Value,
}

/// A dead-letter store.
#[derive(Debug)]
pub(crate) enum DeadLetters {
    /// Appends JSON lines to a file (created with owner-only permissions). A file that would
    /// grow over `max_bytes` is first moved to `<file>.1`, so at most two files of about
    /// `max_bytes` are kept; the letters of a `<file>.1` it replaces are dropped, never
    /// silently: an error line counts them. Each caller's letters take at most `per_caller` of
    /// a file: past it they are not recorded, so the file fills (and rotates its oldest away)
    /// only from many callers within their shares.
    File {
        /// The file.
        path: PathBuf,
        /// The size at which the file is rotated.
        max_bytes: u64,
        /// What one caller's letters may take of the file.
        per_caller: u64,
        /// One writer at a time, so lines never interleave; the bytes each caller (by a hash of
        /// its key) wrote into the file since it was last rotated, as this process wrote them.
        lock: Mutex<HashMap<u64, u64>>,
        /// Letters dropped by rotation so far (each drop also logs an error line).
        dropped: std::sync::atomic::AtomicU64,
    },
    /// Sends each letter as a message to an SQS queue.
    Sqs {
        /// The SQS client.
        client: crate::sqs::Sqs,
        /// The queue URL.
        queue_url: String,
    },
}

impl DeadLetters {
    /// A file store at `path`, rotated at `max_bytes`, of which each caller's letters take at
    /// most `per_caller`.
    pub(crate) fn file(path: impl Into<PathBuf>, max_bytes: u64, per_caller: u64) -> Self {
        Self::File {
            path: path.into(),
            max_bytes,
            per_caller,
            lock: Mutex::default(),
            dropped: Default::default(),
        }
    }

    /// A file store as [`DeadLetters::file`], once `path` is found writable at start (not in a
    /// folder that is missing or the process may not write in, a read-only container's, nor a
    /// folder itself): a letter that cannot be written is a result lost, found out only when
    /// one is given up.
    pub(crate) fn file_in_place(
        path: &std::path::Path,
        max_bytes: u64,
        per_caller: u64,
    ) -> Result<Self, String> {
        let append = || std::fs::OpenOptions::new().append(true).clone();
        // Created to be written, then removed: a check leaves nothing behind (unless a server
        // starting beside it on the same file removed it first: then an empty one).
        let written = match append().create_new(true).open(path) {
            Ok(_) => std::fs::remove_file(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                append().create(true).open(path).map(drop)
            }
            Err(e) => Err(e),
        };
        let shown = path.display();
        written.map_err(|e| format!("OXP_RAP_DEAD_LETTER_FILE {shown} cannot be written: {e}"))?;
        Ok(Self::file(path, max_bytes, per_caller))
    }

    /// Letters a file store dropped by rotation so far.
    #[cfg(test)]
    fn dropped(&self) -> u64 {
        match self {
            Self::File { dropped, .. } => dropped.load(std::sync::atomic::Ordering::Relaxed),
            Self::Sqs { .. } => 0,
        }
    }

    /// Records `letter` of `caller` (its key: `crate::state::caller_key`); an error means it
    /// is not recorded.
    pub(crate) async fn record(&self, letter: &DeadLetter, caller: &str) -> Result<(), String> {
        let mut line = serde_json::to_string(letter).map_err(|e| e.to_string())?;
        match self {
            Self::File {
                path,
                max_bytes,
                per_caller,
                lock,
                dropped,
            } => {
                line.push('\n');
                let mut written = lock.lock().await;
                // A regular file only: /dev/null or a pipe is never rotated.
                if let Ok(meta) = tokio::fs::metadata(path).await
                    && meta.is_file()
                    && meta.len() + line.len() as u64 > *max_bytes
                {
                    rotate(path, dropped).await?;
                    written.clear();
                }
                // Counted once the file has room: a file full from many callers rotates
                // first, and every caller starts the new one with its whole share.
                let tag = {
                    use std::hash::{BuildHasher, RandomState};
                    static KEYS: std::sync::LazyLock<RandomState> =
                        std::sync::LazyLock::new(RandomState::new);
                    KEYS.hash_one(caller)
                };
                let theirs = written.get(&tag).copied().unwrap_or(0);
                if theirs + line.len() as u64 > *per_caller {
                    tracing::error!(
                        target: "oxp::rap",
                        caller,
                        file = %path.display(),
                        "a dead letter not recorded: its caller's letters fill their share of the file (OXP_RAP_DEAD_LETTER_MAX_BYTES_PER_CALLER)"
                    );
                    return Err("past its caller's share of the dead-letter file".into());
                }
                append(path, line.as_bytes())
                    .await
                    .map_err(|e| format!("dead-letter file {}: {e}", path.display()))?;
                *written.entry(tag).or_default() += line.len() as u64;
                Ok(())
            }
            Self::Sqs { client, queue_url } => client
                .send(queue_url, line)
                .await
                .map_err(|e| format!("dead-letter queue: {e}")),
        }
    }
}

/// Moves the file at `path` to `<path>.1`, replacing (and counting in `dropped`) the letters an
/// earlier rotation left there.
async fn rotate(
    path: &std::path::Path,
    dropped: &std::sync::atomic::AtomicU64,
) -> Result<(), String> {
    let mut rotated = path.to_path_buf().into_os_string();
    rotated.push(".1");
    // The bound means the oldest letters go; an operator must hear how many.
    if let Ok(old) = tokio::fs::read(&rotated).await {
        let count = old.iter().filter(|&&b| b == b'\n').count();
        dropped.fetch_add(count as u64, std::sync::atomic::Ordering::Relaxed);
        tracing::error!(
            target: "oxp::rap",
            dropped = count,
            file = %path.display(),
            "dead letters dropped by rotation: ship the file or raise OXP_RAP_DEAD_LETTER_MAX_BYTES"
        );
    }
    tokio::fs::rename(path, &rotated)
        .await
        .map_err(|e| format!("dead-letter file {}: {e}", path.display()))
}

/// Appends `line` to the file at `path` (made the owner's alone) and syncs it.
async fn append(path: &std::path::Path, line: &[u8]) -> std::io::Result<()> {
    let mut options = tokio::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.open(path).await?;
    // Letters hold results and callback URLs (which may carry tokens): a file an operator
    // made before, open to others, is made the owner's alone.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata().await.map(|m| m.permissions().mode());
        if mode.is_ok_and(|mode| mode & 0o077 != 0) {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .await?;
        }
    }
    // A disk that fills mid-line would leave part of it, and the next letter would run on
    // from it: two lines no reader can parse. What this letter wrote is taken back instead.
    let before = file.metadata().await?.len();
    // tokio's file writes in the background: its write error shows in `flush`, which
    // `sync_data` swallows (a letter the disk refused would be told recorded).
    let mut written = file.write_all(line).await;
    if written.is_ok() {
        written = file.flush().await;
    }
    if written.is_ok() {
        written = file.sync_data().await;
    }
    if written.is_err() {
        let _ = file.set_len(before).await;
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rap::wire::ReplyTo;

    fn letter(n: usize) -> DeadLetter {
        let to = ReplyTo {
            id: format!("call_{n}"),
            group_id: "g".into(),
            callback_url: "https://agent.example/cb".into(),
            call_id: None,
        };
        DeadLetter {
            reason: "unreachable".into(),
            attempts: 1,
            callback_url: to.callback_url.clone(),
            operation: None,
            received_at: "2026-01-01T00:00:00Z".into(),
            failed_at: "2026-01-01T00:00:01Z".into(),
            message: serde_json::to_value(crate::rap::wire::ToolResult::new(&to, "x".repeat(200)))
                .unwrap(),
        }
    }

    #[tokio::test]
    async fn the_dead_letter_file_is_rotated_before_it_grows_past_its_bound() {
        let dir = std::env::temp_dir().join(format!("oxp-dl-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("dead.jsonl");
        let store = DeadLetters::file(&path, 2048, 2048);
        for n in 0..40 {
            store.record(&letter(n), "alice").await.unwrap();
        }
        let current = std::fs::metadata(&path).unwrap().len();
        let rotated = std::fs::metadata(dir.join("dead.jsonl.1")).unwrap().len();
        assert!(
            current <= 2048 && rotated <= 2048,
            "{current} / {rotated} bytes"
        );
        let last = std::fs::read_to_string(&path).unwrap();
        assert!(last.contains("call_39"), "the newest letter is kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn an_existing_dead_letter_file_open_to_others_is_made_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("oxp-dl-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("dead.jsonl");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        DeadLetters::file(&path, 1 << 20, 1 << 20)
            .record(&letter(1), "alice")
            .await
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn one_callers_letters_past_its_share_never_rotate_another_callers_letters_away() {
        let dir = std::env::temp_dir().join(format!("oxp-dl-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("dead.jsonl");
        // A file of about eight letters, a quarter of it each caller's.
        let store = DeadLetters::file(&path, 4096, 1024);
        store.record(&letter(0), "bob").await.unwrap();
        let mut refused = 0;
        for n in 1..60 {
            refused += usize::from(store.record(&letter(n), "mallory").await.is_err());
        }
        assert!(
            refused >= 55,
            "mallory's letters past its share: {refused} refused"
        );
        store.record(&letter(60), "bob").await.unwrap();
        let file = std::fs::read_to_string(&path).unwrap();
        assert!(
            file.contains("call_0\"") && file.contains("call_60\""),
            "bob's letters are where they were written"
        );
        assert!(!dir.join("dead.jsonl.1").exists(), "nothing was rotated");
        assert_eq!(store.dropped(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Records letters at `path` until one is refused; every line left must be whole.
    async fn letters_until_one_is_refused(path: PathBuf) {
        let store = DeadLetters::file(&path, 1 << 20, 1 << 20);
        let mut n = 0;
        while store.record(&letter(n), "alice").await.is_ok() {
            n += 1;
            assert!(n < 100, "the limit never refused a letter");
        }
        let file = std::fs::read_to_string(&path).unwrap();
        assert!(n > 0 && file.ends_with('\n'), "{n} letters: {file:?}");
        for line in file.lines() {
            serde_json::from_str::<DeadLetter>(line).unwrap();
        }
        assert_eq!(file.lines().count(), n);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_letter_the_disk_cannot_take_whole_leaves_no_part_of_it_in_the_file() {
        const NAME: &str = "rap::dead_letter::tests::a_letter_the_disk_cannot_take_whole_leaves_no_part_of_it_in_the_file";
        // A full disk, in a child (this test run again): its files stop at 4 KiB (EFBIG, once
        // SIGXFSZ is ignored), so the letter that crosses it is written in part and refused.
        if let Ok(path) = std::env::var("OXP_TEST_DEAD_LETTER_FILE") {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            return runtime
                .unwrap()
                .block_on(letters_until_one_is_refused(path.into()));
        }
        let dir = std::env::temp_dir().join(format!("oxp-dl-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("dead.jsonl");
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 4; exec \"$0\" --exact --nocapture \"$1\"")
            .args([std::env::current_exe().unwrap().as_os_str(), NAME.as_ref()])
            .env("OXP_TEST_DEAD_LETTER_FILE", &path)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains("1 passed"),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(std::fs::metadata(&path).unwrap().len() < 4096);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn letters_dropped_by_rotation_are_counted() {
        // Counted in the store, not read back from a captured log: a subscriber set for one
        // test thread misses callsites another test thread registered at the same moment.
        let dir = std::env::temp_dir().join(format!("oxp-dl-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("dead.jsonl");
        let store = DeadLetters::file(&path, 1024, 1024);
        for n in 0..20 {
            store.record(&letter(n), "alice").await.unwrap();
        }
        let kept = [path.clone(), dir.join("dead.jsonl.1")]
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap().lines().count() as u64)
            .sum::<u64>();
        assert!(store.dropped() > 0);
        assert_eq!(
            store.dropped() + kept,
            20,
            "every letter is kept or counted"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
