//! The AWS configuration and SDK clients of the AWS parts, made at their first use.
//!
//! Loading the configuration reads the environment (and outside Lambda, with `aws-profile`, the
//! profile files and the rest of the SDK's default chain); building a client resolves its
//! endpoint rules. A cold start pays for
//! neither until a request needs AWS (a tool with a secret, a call with a `call_id`, an
//! async invocation), and a request that needs none never pays at all.

mod http;

use aws_config::SdkConfig;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use std::fmt;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The AWS configuration every AWS part shares: the one the embedding program gave, or the
/// one loaded from the environment by the first part that needs it.
#[derive(Clone, Default)]
pub(crate) struct SharedSdk {
    cell: Arc<OnceCell<SdkConfig>>,
    lambda: bool,
}

impl SharedSdk {
    /// `given` (with the server's HTTP client when it names none), or (`None`) the
    /// environment's, loaded at first use.
    pub(crate) fn new(given: Option<SdkConfig>) -> Self {
        let given = given.map(|sdk| match sdk.http_client() {
            Some(_) => sdk,
            None => sdk.into_builder().http_client(http_client()).build(),
        });
        Self {
            cell: Arc::new(OnceCell::new_with(given)),
            lambda: false,
        }
    }

    /// The environment's configuration loaded as Lambda gives it when `lambda` ([`load`]).
    pub(crate) fn in_lambda(mut self, lambda: bool) -> Self {
        self.lambda = lambda;
        self
    }

    async fn get(&self) -> &SdkConfig {
        self.cell.get_or_init(|| load(self.lambda)).await
    }
}

/// The environment's AWS configuration: outside Lambda, with feature `aws-profile` (a default
/// one), the SDK's whole default chain (profile files, IMDS, SSO, STS); in Lambda, or without
/// that feature, [`lambda_config`].
async fn load(lambda: bool) -> SdkConfig {
    if !lambda && let Some(sdk) = outside_lambda::load().await {
        return sdk;
    }
    lambda_config(&|name| std::env::var(name).ok())
}

/// Outside Lambda with feature `aws-profile`: the SDK's default chain.
#[cfg(feature = "aws-profile")]
mod outside_lambda {
    pub(super) async fn load() -> Option<aws_config::SdkConfig> {
        let loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(super::http_client());
        Some(loader.load().await)
    }
}

/// Without `aws-profile`: none of that chain's code; the environment's configuration, as in
/// Lambda.
#[cfg(not(feature = "aws-profile"))]
mod outside_lambda {
    pub(super) async fn load() -> Option<aws_config::SdkConfig> {
        None
    }
}

/// The configuration Lambda gives a function, from its environment (`var`): the region
/// (`AWS_REGION`), the credentials of [`lambda_credentials`], and the SDK's endpoint settings a
/// deployment may set (`AWS_ENDPOINT_URL`, `AWS_USE_FIPS_ENDPOINT`,
/// `AWS_USE_DUALSTACK_ENDPOINT`). Nothing is read from a file or the network here; the
/// credentials are resolved by the first request that signs.
fn lambda_config(var: &dyn Fn(&str) -> Option<String>) -> SdkConfig {
    let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
    let flag = |name: &str| var(name).map(|v| v.trim().eq_ignore_ascii_case("true"));
    let region = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION"));
    let mut sdk = SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(region.map(aws_config::Region::new))
        .http_client(http_client())
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(lambda_credentials()),
        );
    if let Some(url) = var("AWS_ENDPOINT_URL") {
        sdk = sdk.endpoint_url(url);
    }
    if let Some(fips) = flag("AWS_USE_FIPS_ENDPOINT") {
        sdk = sdk.use_fips(fips);
    }
    if let Some(dual_stack) = flag("AWS_USE_DUALSTACK_ENDPOINT") {
        sdk = sdk.use_dual_stack(dual_stack);
    }
    sdk.build()
}

/// The credentials Lambda gives: its environment variables, else the container endpoint
/// (Managed Instances: `AWS_CONTAINER_CREDENTIALS_FULL_URI`).
fn lambda_credentials() -> aws_config::meta::credentials::CredentialsProviderChain {
    use aws_config::environment::EnvironmentVariableCredentialsProvider;
    aws_config::meta::credentials::CredentialsProviderChain::first_try(
        "Environment",
        EnvironmentVariableCredentialsProvider::new(),
    )
    .or_else(
        "EcsContainer",
        // The provider's defaults (the environment, tokio's sleep for its retries) with the
        // server's HTTP client.
        aws_config::ecs::EcsCredentialsProvider::builder()
            .configure(
                &aws_config::provider_config::ProviderConfig::without_region()
                    .with_http_client(http_client()),
            )
            .build(),
    )
}

/// The HTTP client the server gives the AWS SDK: HTTP/1.1 over rustls, the one HTTP stack the
/// server's other clients use (its callbacks, JWKS, OAuth), shared by every SDK client of the
/// process, with connections of its own for each Tokio runtime that sends (so a suite of
/// `#[tokio::test]`s may share it). A configuration given to [`AppBuilder::aws_config`](crate::AppBuilder::aws_config)
/// without an HTTP client gets it; one built by hand may name it
/// (`aws_config::defaults(..).http_client(oxp_lambda::aws_http_client())`).
pub fn http_client() -> SharedHttpClient {
    http::shared()
}

impl fmt::Debug for SharedSdk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedSdk")
            .field("loaded", &self.cell.initialized())
            .field("lambda", &self.lambda)
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

    #[test]
    fn in_lambda_the_region_and_endpoint_come_from_the_environment_alone() {
        let env = |name: &str| match name {
            "AWS_REGION" => Some("eu-west-3".to_owned()),
            "AWS_DEFAULT_REGION" => Some("us-east-1".to_owned()),
            "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:5000".to_owned()),
            "AWS_USE_FIPS_ENDPOINT" => Some("TRUE".to_owned()),
            _ => None,
        };
        let sdk = lambda_config(&env);
        assert_eq!(sdk.region().map(|r| r.as_ref()), Some("eu-west-3"));
        assert_eq!(sdk.endpoint_url(), Some("http://127.0.0.1:5000"));
        assert_eq!(sdk.use_fips(), Some(true));
        assert_eq!(sdk.use_dual_stack(), None);
        assert!(sdk.credentials_provider().is_some());
        assert!(
            sdk.http_client().is_some(),
            "the server's, not the SDK's own"
        );
        let fallback = lambda_config(&|name: &str| {
            (name == "AWS_DEFAULT_REGION").then(|| "us-east-1".to_owned())
        });
        assert_eq!(fallback.region().map(|r| r.as_ref()), Some("us-east-1"));
        assert_eq!(fallback.endpoint_url(), None);
    }

    #[tokio::test]
    async fn a_given_configuration_without_an_http_client_gets_the_servers() {
        let given = SharedSdk::new(Some(SdkConfig::builder().build()));
        assert!(given.get().await.http_client().is_some());
    }

    #[tokio::test]
    async fn the_environments_configuration_waits_for_the_first_client() {
        let sdk = SharedSdk::new(None);
        assert!(!sdk.cell.initialized());
        let _client = AwsClient::lazy(&sdk, |_| ());
        assert!(
            !sdk.cell.initialized(),
            "making a lazy client loads nothing"
        );
    }
}
