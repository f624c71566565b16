//! Where state that outlives a call lives ([`StateStore`]): subscriptions, questions waiting
//! for the user, cancellation marks and the local queue's acknowledged jobs. Locally an embedded
//! database on disk ([`embedded`], redb: no set-up, opened by the first request that needs it);
//! in Lambda a DynamoDB table every execution environment shares ([`dynamodb`]).

pub(crate) mod books;
#[cfg(feature = "dynamodb")]
pub(crate) mod dynamodb;
#[cfg(not(feature = "dynamodb"))]
#[path = "dynamodb_off.rs"]
pub(crate) mod dynamodb;
#[cfg(feature = "embedded-state")]
pub(crate) mod embedded;
#[cfg(not(feature = "embedded-state"))]
#[path = "embedded_off.rs"]
pub(crate) mod embedded;
pub(crate) mod large;
pub(crate) mod record;
pub(crate) mod share;

use crate::settings::{ConfigError, Env, invalid};
use oxp_lambda_core::durable::StateStore;
use std::path::PathBuf;
use std::sync::Arc;

/// Where durable state lives (`OXP_STATE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateConfig {
    /// An embedded database: the file `OXP_STATE_PATH` (default `./oxp-state.redb` for the
    /// binary), or (`None`) memory only, for a configuration not read from the environment.
    Embedded {
        /// The database file.
        path: Option<PathBuf>,
        /// The most memory the database's page cache takes (`OXP_STATE_CACHE_BYTES`, default
        /// [`DEFAULT_CACHE_BYTES`]).
        cache_bytes: usize,
    },
    /// The DynamoDB table `OXP_STATE_TABLE`, shared by every execution environment.
    DynamoDb {
        /// The table.
        table: String,
    },
    /// None: asking the user and subscriptions are unavailable (the default in Lambda without
    /// `OXP_STATE_TABLE`, where no disk outlives the environment).
    Off,
}

impl Default for StateConfig {
    /// Memory only: a configuration built in code writes no file.
    fn default() -> Self {
        Self::Embedded {
            path: None,
            cache_bytes: DEFAULT_CACHE_BYTES,
        }
    }
}

/// The embedded database's page cache when `OXP_STATE_CACHE_BYTES` is not set (redb's own
/// default is a GiB): the rows a busy server reads again stay in memory; the rest of the file
/// is read through the system's page cache, which the kernel gives back when memory is short.
pub const DEFAULT_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// The binary's database file when `OXP_STATE_PATH` is not set.
pub(crate) const DEFAULT_PATH: &str = "oxp-state.redb";

impl StateConfig {
    /// `file_default`: the file an embedded store uses when `OXP_STATE_PATH` is not set (the
    /// binary's configuration has one; a configuration built in code keeps to memory).
    pub(crate) fn from_env(env: &Env<'_>, file_default: bool) -> Result<Self, ConfigError> {
        let table = env.get("OXP_STATE_TABLE").map(|t| t.trim().to_owned());
        let cache_bytes = env
            .positive("OXP_STATE_CACHE_BYTES")?
            .unwrap_or(DEFAULT_CACHE_BYTES);
        let path = env
            .get("OXP_STATE_PATH")
            .map(|p| PathBuf::from(p.trim()))
            .or_else(|| file_default.then(|| PathBuf::from(DEFAULT_PATH)));
        match (env.get("OXP_STATE").as_deref().map(str::trim), table) {
            (None | Some("dynamodb"), Some(table)) => Ok(Self::DynamoDb { table }),
            (Some("dynamodb"), None) => Err(invalid(
                "OXP_STATE_TABLE",
                "must be set for OXP_STATE=dynamodb",
            )),
            (None, None) if env.in_lambda() => Ok(Self::Off),
            (None | Some("embedded"), _) => Ok(Self::Embedded { path, cache_bytes }),
            (Some("off"), _) => Ok(Self::Off),
            (Some(_), _) => Err(invalid(
                "OXP_STATE",
                "must be 'embedded', 'dynamodb' or 'off'",
            )),
        }
    }
}

/// The first 160 bits of the SHA-256 of `parts` (each length-prefixed, so no two lists of
/// parts share a key), in hex: how records name a caller, a thread or a call, never by the ids
/// themselves.
pub(crate) fn key_of(parts: &[&str]) -> String {
    use oxp_lambda_core::idempotency::lower_hex;
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    lower_hex(&hash.finalize()[..20])
}

/// The one key of a caller (its authenticated subject; every caller without one is the same
/// one), whatever the protocol: its share of work and of subscriptions, its turns of the runner,
/// the owner of its MCP tasks.
pub(crate) fn caller_key(subject: Option<&str>) -> String {
    key_of(&[subject.unwrap_or_default()])
}

/// Opens `path` for reading and writing, creating it readable and writable by its owner only
/// (0600), and tightening a file an earlier version left open to others: the state holds
/// questions, answers and the calls' callbacks.
pub(crate) fn private_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        let file = options.open(path)?;
        if file.metadata()?.permissions().mode() & 0o077 != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        Ok(file)
    }
    #[cfg(not(unix))]
    options.open(path)
}

/// Where a local server keeps a key of its own (MCP's sealing key when `MCP_STATE_KEY` is not
/// held): beside the embedded database file, in a file of its own readable by its owner only
/// (`oxp-state.key` for `oxp-state.redb`), never inside the database it protects. `None` for
/// any other store (in memory, or DynamoDB, where the key must be a shared secret).
pub(crate) fn key_file(config: &StateConfig) -> Option<PathBuf> {
    match config {
        StateConfig::Embedded {
            path: Some(path), ..
        } => Some(path.with_extension("key")),
        _ => None,
    }
}

/// The key held in `file` (a [`key_file`]), or `fresh` written there (0600) when it holds none.
/// A file that holds no key of `fresh`'s length is an error, never overwritten: it may be an
/// operator's.
pub(crate) fn key_in(file: &std::path::Path, fresh: Vec<u8>) -> Result<Vec<u8>, String> {
    use std::io::{Read, Write};
    let mut opened =
        private_file(file).map_err(|e| format!("the sealing key file {}: {e}", file.display()))?;
    let mut held = Vec::new();
    opened
        .read_to_end(&mut held)
        .map_err(|e| format!("the sealing key file {}: {e}", file.display()))?;
    match held.len() {
        0 => {
            opened
                .write_all(&fresh)
                .and_then(|()| opened.sync_all())
                .map_err(|e| format!("the sealing key file {}: {e}", file.display()))?;
            Ok(fresh)
        }
        n if n == fresh.len() => Ok(held),
        _ => Err(format!(
            "the sealing key file {} does not hold a {}-byte key",
            file.display(),
            fresh.len()
        )),
    }
}

/// The store `config` describes (`None`: off); `sdk` is the AWS configuration, for DynamoDB.
pub(crate) fn build(
    config: &StateConfig,
    sdk: &crate::aws::SharedSdk,
) -> Result<Option<Arc<dyn StateStore>>, String> {
    match config {
        StateConfig::Off => Ok(None),
        StateConfig::Embedded { path, cache_bytes } => {
            embedded::store_cached(path.clone(), *cache_bytes).map(Some)
        }
        StateConfig::DynamoDb { table } => dynamodb::store(sdk, table.clone())
            .map(Some)
            .map_err(|e| format!("OXP_STATE_TABLE: {e}")),
    }
}

#[cfg(test)]
#[path = "conformance.rs"]
pub(crate) mod conformance;
#[cfg(test)]
pub(crate) mod counting;
