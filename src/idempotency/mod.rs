//! Where idempotency records live: in memory (the core's `MemoryStore`, the default), or as
//! records of the one state store ([`state`]): the embedded database, or a DynamoDB table shared
//! by every execution environment (feature `dynamodb`).

pub(crate) mod state;

use crate::settings::{ConfigError, Env, invalid};
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::idempotency::Idempotency;
use std::sync::Arc;
use std::time::Duration;

/// Where idempotency records live.
#[derive(Debug, Clone, PartialEq)]
pub struct IdempotencyConfig {
    /// `OXP_IDEMPOTENCY`: `memory` (default), `state`, `dynamodb` (default when a table is set)
    /// or `off`.
    pub mode: IdempotencyMode,
    /// `OXP_IDEMPOTENCY_TABLE`: the DynamoDB table (the state table's schema; may be that table).
    pub table: Option<String>,
    /// `OXP_IDEMPOTENCY_TTL_SECS` (default 3600): how long a stored outcome answers repeats.
    pub ttl: Duration,
    /// `OXP_IDEMPOTENCY_MAX_BYTES` (default 64 MiB): bound of the memory the in-memory store's
    /// outcomes take, each weighed with its bookkeeping (claims in progress come on top, at most
    /// one per execution slot).
    pub max_bytes: u64,
    /// `OXP_IDEMPOTENCY_MAX_BYTES_PER_CALLER` (default a quarter of `max_bytes`; all of it
    /// with `OXP_AUTH=none`, where every call is the one anonymous caller's): of that, what one
    /// caller's outcomes may take; past it a caller's own oldest are evicted, not others'.
    pub max_bytes_per_caller: u64,
}

/// Kinds of idempotency store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdempotencyMode {
    /// In process memory (per execution environment in Lambda).
    Memory,
    /// Records of the state store (`OXP_STATE`): locally the embedded database, so outcomes
    /// outlive a restart.
    State,
    /// A DynamoDB table shared by every execution environment.
    DynamoDb,
    /// No idempotency: every call runs.
    Off,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        Self {
            mode: IdempotencyMode::Memory,
            table: None,
            ttl: Duration::from_secs(3600),
            max_bytes: 64 * 1024 * 1024,
            max_bytes_per_caller: 64 * 1024 * 1024,
        }
    }
}

impl IdempotencyConfig {
    /// Reads the settings; `anonymous`: callers are not told apart (`OXP_AUTH=none`).
    pub(crate) fn from_env(env: &Env<'_>, anonymous: bool) -> Result<Self, ConfigError> {
        let mut c = Self {
            table: env.get("OXP_IDEMPOTENCY_TABLE"),
            ..Self::default()
        };
        c.mode = match env.get("OXP_IDEMPOTENCY").as_deref().map(str::trim) {
            None if c.table.is_some() => IdempotencyMode::DynamoDb,
            None | Some("memory") => IdempotencyMode::Memory,
            Some("state") => IdempotencyMode::State,
            Some("dynamodb") if c.table.is_some() => IdempotencyMode::DynamoDb,
            Some("dynamodb") => {
                return Err(invalid(
                    "OXP_IDEMPOTENCY_TABLE",
                    "must be set for OXP_IDEMPOTENCY=dynamodb",
                ));
            }
            Some("off") => IdempotencyMode::Off,
            Some(_) => {
                return Err(invalid(
                    "OXP_IDEMPOTENCY",
                    "must be 'memory', 'state', 'dynamodb' or 'off'",
                ));
            }
        };
        if let Some(secs) = env.parsed("OXP_IDEMPOTENCY_TTL_SECS")? {
            c.ttl = Duration::from_secs(secs);
        }
        if let Some(n) = env.positive("OXP_IDEMPOTENCY_MAX_BYTES")? {
            c.max_bytes = n;
        }
        c.max_bytes_per_caller =
            match env.positive::<u64>("OXP_IDEMPOTENCY_MAX_BYTES_PER_CALLER")? {
                Some(n) => n.min(c.max_bytes),
                None if anonymous => c.max_bytes,
                None => (c.max_bytes / 4).max(1),
            };
        Ok(c)
    }
}

/// The store `config` describes (`None`: off); `state` is the state store (`OXP_STATE`), `sdk`
/// the AWS configuration, for DynamoDB.
pub(crate) fn build(
    config: &IdempotencyConfig,
    state: Option<&Arc<dyn StateStore>>,
    sdk: &crate::aws::SharedSdk,
) -> Result<Option<Idempotency>, String> {
    let store: Arc<dyn oxp_lambda_core::idempotency::IdempotencyStore> = match config.mode {
        IdempotencyMode::Off => return Ok(None),
        IdempotencyMode::Memory => Arc::new(
            oxp_lambda_core::idempotency::memory::MemoryStore::with_share(
                config.max_bytes,
                config.max_bytes_per_caller,
            ),
        ),
        IdempotencyMode::State => Arc::new(state::StateRecords::with_share(
            state
                .cloned()
                .ok_or("OXP_IDEMPOTENCY=state needs a state store (OXP_STATE is 'off')")?,
            config.max_bytes_per_caller,
        )),
        IdempotencyMode::DynamoDb => {
            let table = config.table.clone().unwrap_or_default();
            let store = crate::state::dynamodb::store(sdk, table)
                .map_err(|e| format!("OXP_IDEMPOTENCY_TABLE: {e}"))?;
            Arc::new(state::StateRecords::new(store))
        }
    };
    Ok(Some(Idempotency {
        store,
        keep: config.ttl,
    }))
}
