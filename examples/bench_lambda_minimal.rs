//! The cold-start baseline of `scripts/bench`: the smallest `lambda_runtime` function, which
//! answers every event with `{}`. The bench times it from process start to its first poll of a
//! Runtime API on loopback, beside the `oxp-lambda` bootstrap in each of its roles.

use lambda_http::lambda_runtime::{self, Error, LambdaEvent, service_fn};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(|_: LambdaEvent<Value>| async {
        Ok::<_, Error>(json!({}))
    }))
    .await
}
