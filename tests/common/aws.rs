//! The AWS emulator the test command starts (moto on loopback), and configuration for it.

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
        .credentials_provider(aws_credential_types::Credentials::new(
            "testing", "testing", None, None, "tests",
        ))
        .load()
        .await
}

/// A unique name prefix, so tests sharing one emulator never see each other's resources.
pub fn unique_prefix() -> String {
    format!("oxp-test-{}/", uuid::Uuid::new_v4().simple())
}
