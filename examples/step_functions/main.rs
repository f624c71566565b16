//! The example tools, served with a protocol of your own beside the built-in ones: AWS Step
//! Functions tasks ([`protocol`]), over HTTP (`POST /sfn/{tool}`) and as the Lambda role
//! `OXP_LAMBDA_ROLE=sfn`.
//!
//! ```sh
//! cargo run --example step_functions
//! curl -s localhost:8080/sfn/Calculator.Add -H 'content-type: application/json' -d '{"a": 1, "b": 2}'
//! # {"output":3.0}
//! ```

mod protocol;
#[path = "../spec_tools/tools.rs"]
mod tools;

use oxp_lambda::App;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    match tools::registry() {
        Ok(registry) => {
            oxp_lambda::run_app(App::builder(registry).protocol(protocol::StepFunctions)).await
        }
        Err(e) => {
            eprintln!("invalid tools: {e}");
            ExitCode::FAILURE
        }
    }
}
