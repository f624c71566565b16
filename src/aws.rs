//! The AWS configuration and SDK clients of the AWS parts, made at their first use.
//!
//! Loading the configuration reads the environment and the profile files and sets up the
//! credential chain; building a client resolves its endpoint rules. A cold start pays for
//! neither until a request needs AWS (a tool with a secret, a call with a `call_id`, an
//! async invocation), and a request that needs none never pays at all.

use aws_config::SdkConfig;
use std::fmt;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The AWS configuration every AWS part shares: the one the embedding program gave, or the
/// one loaded from the environment by the first part that needs it.
#[derive(Clone, Default)]
pub(crate) struct SharedSdk(Arc<OnceCell<SdkConfig>>);

impl SharedSdk {
    /// `given`, or (`None`) the environment's, loaded at first use.
    pub(crate) fn new(given: Option<SdkConfig>) -> Self {
        Self(Arc::new(OnceCell::new_with(given)))
    }

    async fn get(&self) -> &SdkConfig {
        self.0
            .get_or_init(|| aws_config::defaults(aws_config::BehaviorVersion::latest()).load())
            .await
    }
}

impl fmt::Debug for SharedSdk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedSdk")
            .field("loaded", &self.0.initialized())
            .finish()
    }
}

type Make<C> = Box<dyn Fn(&SdkConfig) -> C + Send + Sync>;

/// An SDK client, built from the shared configuration by its first call. Clones share it.
pub(crate) struct AwsClient<C>(Arc<Inner<C>>);

struct Inner<C> {
    sdk: SharedSdk,
    make: Make<C>,
    client: OnceCell<C>,
}

impl<C> AwsClient<C> {
    /// A client `make` builds from `sdk` when first asked for.
    pub(crate) fn lazy(
        sdk: &SharedSdk,
        make: impl Fn(&SdkConfig) -> C + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(Inner {
            sdk: sdk.clone(),
            make: Box::new(make),
            client: OnceCell::new(),
        }))
    }

    /// The client, built now if this is the first call.
    pub(crate) async fn get(&self) -> &C {
        let inner = &*self.0;
        inner
            .client
            .get_or_init(|| async { (inner.make)(inner.sdk.get().await) })
            .await
    }
}

impl<C> From<C> for AwsClient<C> {
    /// A client built already (tests give one pointed at the emulator).
    fn from(client: C) -> Self {
        Self(Arc::new(Inner {
            sdk: SharedSdk::default(),
            make: Box::new(|_| unreachable!("the client was given")),
            client: OnceCell::new_with(Some(client)),
        }))
    }
}

impl<C> Clone for AwsClient<C> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<C> fmt::Debug for AwsClient<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsClient")
            .field("built", &self.0.client.initialized())
            .finish()
    }
}

/// What the DynamoDB stores (idempotency records, the token vault) write and read alike.
#[cfg(feature = "dynamodb")]
pub(crate) mod dynamo {
    use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
    use aws_sdk_dynamodb::types::AttributeValue;
    use std::time::{SystemTime, UNIX_EPOCH};

    /// A number attribute.
    pub(crate) fn number(v: u64) -> AttributeValue {
        AttributeValue::N(v.to_string())
    }

    /// `t` in Unix seconds, as the tables' TTL attribute `expires_at` holds it (0 before 1970).
    pub(crate) fn epoch_secs(t: SystemTime) -> u64 {
        t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
    }

    /// An expiry `t` in Unix seconds for `expires_at`, rounded up: an item is never taken for
    /// expired before its time (rounded down, an item kept for a second could expire at once).
    pub(crate) fn expiry_secs(t: SystemTime) -> u64 {
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() + u64::from(d.subsec_nanos() > 0))
    }

    /// The service's error code for a failed request: never its message, which may echo a key.
    pub(crate) fn error_code<E: ProvideErrorMetadata>(e: &SdkError<E>) -> &str {
        e.code().unwrap_or("unreachable or timed out")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expiry_is_written_in_whole_seconds_rounded_up_so_an_item_never_expires_early() {
        let at = |ms| std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
        assert_eq!(dynamo::expiry_secs(at(1_500)), 2);
        assert_eq!(dynamo::expiry_secs(at(2_000)), 2);
        assert_eq!(dynamo::expiry_secs(at(2_001)), 3);
        assert_eq!(
            dynamo::epoch_secs(at(1_500)),
            1,
            "a time now is not rounded"
        );
    }

    #[tokio::test]
    async fn nothing_is_loaded_or_built_before_the_first_call_and_only_once_after() {
        let sdk = SharedSdk::new(Some(SdkConfig::builder().build()));
        let built = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = built.clone();
        let client = AwsClient::lazy(&sdk, move |_| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        });
        let shared = client.clone();
        assert_eq!(built.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(*client.get().await, 0);
        assert_eq!(*shared.get().await, 0, "clones share the one client");
        assert_eq!(built.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn the_environments_configuration_waits_for_the_first_client() {
        let sdk = SharedSdk::new(None);
        assert!(!sdk.0.initialized());
        let _client = AwsClient::lazy(&sdk, |_| ());
        assert!(!sdk.0.initialized(), "making a lazy client loads nothing");
    }
}
