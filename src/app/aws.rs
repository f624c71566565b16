//! The AWS configuration the embedding program gives (feature `aws`).

use super::AppBuilder;

impl AppBuilder {
    /// The AWS configuration for the parts that talk to AWS, instead of the one loaded from
    /// the environment (for example a local emulator's endpoint).
    pub fn aws_config(mut self, sdk: aws_config::SdkConfig) -> Self {
        self.aws = crate::aws::SharedSdk::new(Some(sdk));
        self
    }
}
