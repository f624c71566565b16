//! The AWS emulator the test command starts (moto on loopback), and clients for it.

use aws_sdk_secretsmanager::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_secretsmanager::config::{ConfigBag, Intercept, RuntimeComponents};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// moto's URL, from the test command.
pub fn moto_url() -> String {
    std::env::var("OXP_TEST_MOTO_URL")
        .expect("OXP_TEST_MOTO_URL is not set: run the tests with scripts/test, which starts moto")
}

/// AWS configuration for `endpoint` with dummy credentials.
pub async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_secretsmanager::config::Credentials::new(
            "testing", "testing", None, None, "tests",
        ))
        .load()
        .await
}

/// Counts the HTTP requests a client sends.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(pub Arc<AtomicUsize>);

impl RequestCounter {
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), aws_sdk_secretsmanager::error::BoxError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A Secrets Manager client configured as the server configures its own, plus a request counter.
pub async fn secrets_client(
    endpoint: &str,
    timeout: std::time::Duration,
) -> (aws_sdk_secretsmanager::Client, RequestCounter) {
    let sdk = sdk_config(endpoint).await;
    let counter = RequestCounter::default();
    let config = oxp_lambda::secrets::secrets_manager_config(&sdk, timeout)
        .interceptor(counter.clone())
        .build();
    (aws_sdk_secretsmanager::Client::from_conf(config), counter)
}

/// A unique name prefix, so tests sharing one emulator never see each other's secrets.
pub fn unique_prefix() -> String {
    format!("oxp-test-{}/", uuid::Uuid::new_v4().simple())
}
