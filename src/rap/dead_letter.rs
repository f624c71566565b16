//! Where results that could not be delivered are recorded, with the reason, so that none is
//! silently lost: a JSON-lines file locally, an SQS queue in Lambda.

use crate::rap::wire::ToolResult;
use serde::{Deserialize, Serialize};
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
    /// The message that was not delivered, ready to be sent again.
    pub(crate) message: ToolResult,
}

/// A dead-letter store.
#[derive(Debug)]
pub(crate) enum DeadLetters {
    /// Appends JSON lines to a file (created with owner-only permissions).
    File {
        /// The file.
        path: PathBuf,
        /// One writer at a time, so lines never interleave.
        lock: Mutex<()>,
    },
    /// Sends each letter as a message to an SQS queue.
    #[cfg(feature = "rap-sqs")]
    Sqs {
        /// The SQS client.
        client: aws_sdk_sqs::Client,
        /// The queue URL.
        queue_url: String,
    },
}

impl DeadLetters {
    /// A file store at `path`.
    pub(crate) fn file(path: impl Into<PathBuf>) -> Self {
        Self::File {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// Records `letter`; an error means it is not recorded and the caller must keep it.
    pub(crate) async fn record(&self, letter: &DeadLetter) -> Result<(), String> {
        let mut line = serde_json::to_vec(letter).map_err(|e| e.to_string())?;
        match self {
            Self::File { path, lock } => {
                line.push(b'\n');
                let _one_writer = lock.lock().await;
                let mut options = tokio::fs::OpenOptions::new();
                options.create(true).append(true);
                #[cfg(unix)]
                options.mode(0o600);
                let mut file = options
                    .open(path)
                    .await
                    .map_err(|e| format!("dead-letter file {}: {e}", path.display()))?;
                file.write_all(&line)
                    .await
                    .and(file.sync_data().await)
                    .map_err(|e| format!("dead-letter file {}: {e}", path.display()))
            }
            #[cfg(feature = "rap-sqs")]
            Self::Sqs { client, queue_url } => client
                .send_message()
                .queue_url(queue_url)
                .message_body(String::from_utf8(line).map_err(|e| e.to_string())?)
                .send()
                .await
                .map(drop)
                .map_err(|e| {
                    format!(
                        "dead-letter queue: {}",
                        aws_sdk_sqs::error::DisplayErrorContext(e)
                    )
                }),
        }
    }
}
