//! `Ops.Watch`, served with an event source of your own beside the built-in protocols
//! ([`source`]): `POST /events/{topic}` feeds the subscriptions `Ops.Watch` opens over RAP.
//!
//! ```sh
//! cargo run --example event_source
//! # a RAP call subscribes (its callback receives the answer, then each event):
//! curl -s localhost:8080/invoke -H 'content-type: application/json' -d '{"operation":
//!   "Ops_Watch", "arguments": {"topic": "deploys"}, "id": "w1", "group_id": "t",
//!   "callback_url": "http://127.0.0.1:9000/callback"}'
//! curl -s localhost:8080/events/deploys -H 'content-type: application/json' \
//!   -H 'event-id: 1' -d '{"to": "prod"}'
//! # {"accepted":1}
//! ```

mod source;

use oxp_lambda::{App, Registry};
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    match Registry::builder().tool(source::watch_tool()).build() {
        Ok(registry) => {
            oxp_lambda::run_app(App::builder(registry).protocol(source::OpsEvents)).await
        }
        Err(e) => {
            eprintln!("invalid tools: {e}");
            ExitCode::FAILURE
        }
    }
}
