//! Test support for the AWS parts: moto's emulator, which the test command starts on loopback.
//! The unit tests use it as `crate::moto`, the integration tests as `common::aws` (the same file).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// moto's URL, from the test command.
pub(crate) fn moto_url() -> String {
    std::env::var("OXP_TEST_MOTO_URL")
        .expect("OXP_TEST_MOTO_URL is not set: run the tests with scripts/test, which starts moto")
}

/// AWS configuration for `endpoint` with dummy credentials.
pub(crate) async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(oxp_lambda::aws_http_client())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_credential_types::Credentials::new(
            "testing", "testing", None, None, "tests",
        ))
        .load()
        .await
}

/// A unique name prefix, so tests sharing one emulator never see each other's resources.
pub(crate) fn unique_prefix() -> String {
    format!("oxp-test-{}/", uuid::Uuid::new_v4().simple())
}

/// Creates secret `name` holding `value`.
#[cfg(feature = "aws-secrets")]
pub(crate) async fn create_secret(
    client: &aws_sdk_secretsmanager::Client,
    name: &str,
    value: &str,
) {
    client
        .create_secret()
        .name(name)
        .secret_string(value)
        .send()
        .await
        .expect("moto creates the secret");
}

/// Counts the HTTP requests a client sends.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestCounter(pub(crate) Arc<AtomicUsize>);

impl RequestCounter {
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(feature = "aws-secrets")]
mod intercept {
    use super::RequestCounter;
    use aws_sdk_secretsmanager::config::interceptors::BeforeTransmitInterceptorContextRef;
    use aws_sdk_secretsmanager::config::{ConfigBag, Intercept, RuntimeComponents};
    use std::sync::atomic::Ordering;

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
}

/// A table like the template's state table (partition key `pk`, sort key `sk`, TTL attribute
/// `expires_at`), and a client for it.
#[cfg(feature = "dynamodb")]
pub(crate) async fn state_table() -> (aws_sdk_dynamodb::Client, String) {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
        Projection, ProjectionType, ScalarAttributeType,
    };
    let client = aws_sdk_dynamodb::Client::new(&sdk_config(&moto_url()).await);
    let table = format!("oxp-state-{}", uuid::Uuid::new_v4().simple());
    let attribute = |name: &str, kind: ScalarAttributeType| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(kind)
            .build()
            .unwrap()
    };
    let key = |name: &str, kind: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .unwrap()
    };
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute("pk", ScalarAttributeType::S))
        .attribute_definitions(attribute("sk", ScalarAttributeType::S))
        .attribute_definitions(attribute("dpk", ScalarAttributeType::S))
        .attribute_definitions(attribute("due", ScalarAttributeType::N))
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        // As template.yaml has it: the items due by time, for the runner's sweep.
        .global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name("due")
                .key_schema(key("dpk", KeyType::Hash))
                .key_schema(key("due", KeyType::Range))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::All)
                        .build(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("moto creates the table");
    (client, table)
}
