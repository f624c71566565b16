//! A cold call's two waits side by side: the server-held secrets a tool needs are read (from
//! AWS, in Lambda) while the call's key is claimed (a conditional write), not one after the
//! other; and a call refused after its claim leaves its key free.

use oxp_lambda_core::idempotency::memory::MemoryStore;
use oxp_lambda_core::idempotency::{
    Claim, Idempotency, IdempotencyStore, StoreFuture, StoredOutcome,
};
use oxp_lambda_core::invoke::{Call, Invoker, Outcome, Target};
use oxp_lambda_core::refusal::{Missing, Rejection};
use oxp_lambda_core::secrets::{ClientSecrets, SecretFuture, Secrets};
use oxp_lambda_core::tool::Secret;
use oxp_lambda_core::{Registry, SecretError, SecretErrorKind, SecretSource, Tool};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// A secret source whose `API_KEY` is read only once the call's key was claimed (or, for
/// `MISSING`, is missing): a call that claims after reading its secrets never ends.
#[derive(Debug, Default)]
struct AfterTheClaim {
    claimed: Arc<Notify>,
}

impl SecretSource for AfterTheClaim {
    fn holds(&self, id: &str) -> bool {
        id == "API_KEY" || id == "MISSING"
    }
    fn fetch<'a>(&'a self, id: &'a str) -> SecretFuture<'a> {
        Box::pin(async move {
            self.claimed.notified().await;
            match id {
                "API_KEY" => Ok(Secret::new("k")),
                _ => Err(SecretError::new(id, SecretErrorKind::NotFound, "none")),
            }
        })
    }
}

/// The in-memory store, its claims announced and its releases counted.
#[derive(Debug)]
struct Announcing {
    store: MemoryStore,
    claimed: Arc<Notify>,
    releases: AtomicUsize,
}

impl IdempotencyStore for Announcing {
    fn claim<'a>(&'a self, key: &'a str, print: &'a str, hold: Duration) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            let claim = self.store.claim(key, print, hold).await;
            self.claimed.notify_one();
            claim
        })
    }
    fn complete<'a>(
        &'a self,
        key: &'a str,
        print: &'a str,
        outcome: &'a StoredOutcome,
        keep: Duration,
    ) -> StoreFuture<'a, ()> {
        self.store.complete(key, print, outcome, keep)
    }
    fn release<'a>(&'a self, key: &'a str, print: &'a str) -> StoreFuture<'a, ()> {
        self.releases.fetch_add(1, Ordering::SeqCst);
        self.store.release(key, print)
    }
}

fn invoker() -> (Invoker, Arc<Announcing>) {
    let needs = |secret: &str| {
        Tool::builder(format!("Test.Needs{secret}"), "1.0.0")
            .secret(secret)
            .raw_handler(
                json!({"type": "object"}),
                Some(json!({"type": "boolean"})),
                |_input, ctx| async move { Ok(json!(ctx.secret("API_KEY").is_some())) },
            )
    };
    let registry = Registry::builder()
        .tool(needs("API_KEY"))
        .tool(needs("MISSING"))
        .build()
        .unwrap();
    let claimed = Arc::new(Notify::new());
    let store = Arc::new(Announcing {
        store: MemoryStore::new(1 << 20),
        claimed: claimed.clone(),
        releases: AtomicUsize::new(0),
    });
    let source = Arc::new(AfterTheClaim { claimed });
    let invoker = Invoker::new(
        Arc::new(registry),
        Secrets::new(Some(source), Duration::ZERO, ClientSecrets::Unheld),
        Some(Idempotency {
            store: store.clone(),
            keep: Duration::from_secs(60),
        }),
        4,
        Some(Duration::from_secs(5)),
    );
    (invoker, store)
}

fn call(tool: &str, call_id: &str) -> Call {
    let mut call = Call::new("test", Target::Id(tool.into()), json!({}));
    call.call_id = Some(call_id.into());
    call
}

/// The call of `tool` with `call_id`, which ends only if the key is claimed while the secret
/// is read.
async fn invoke(invoker: &Invoker, tool: &str, call_id: &str) -> Result<Outcome, Rejection> {
    tokio::time::timeout(Duration::from_secs(5), invoker.invoke(call(tool, call_id)))
        .await
        .expect("the secret is read while the key is claimed, not after")
}

#[tokio::test]
async fn a_cold_call_claims_its_key_while_its_secrets_are_read() {
    let (invoker, _) = invoker();
    let answered = invoke(&invoker, "Test.NeedsAPI_KEY", "c1").await;
    assert_eq!(answered.unwrap().result.unwrap().value, json!(true));
}

#[tokio::test]
async fn a_call_refused_for_its_requirements_after_its_claim_leaves_its_key_free() {
    let (invoker, store) = invoker();
    let refused = invoke(&invoker, "Test.NeedsMISSING", "c2")
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Rejection::Missing(Missing::Unavailable(e)) if e.id == "MISSING"),
        "{refused:?}"
    );
    assert_eq!(store.releases.load(Ordering::SeqCst), 1, "its claim let go");
    // The same call id is free: another call with it runs, neither "in progress" nor a
    // conflict with the refused call's input.
    let next = invoke(&invoker, "Test.NeedsAPI_KEY", "c2").await;
    assert_eq!(next.unwrap().result.unwrap().value, json!(true));
}
