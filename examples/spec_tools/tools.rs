//! The example tools of the OXP specification, served by the `oxp-lambda` binary.
//!
//! - `Calculator.Add@1.0.0`: adds two numbers (`10 + 5 = 15`).
//! - `Doorbell.Ring@0.1.0`: rings doorbell `doorbell42` or `doorbell84`; no output. Any other id
//!   fails with retry guidance, as in the specification's tool execution error example.
//! - `System.GetTimestamp@1.0.0`: no input; the current time as RFC 3339.
//! - `SMS.Send@0.1.2`: requires secret `TWILIO_API_KEY`. **A demo: it sends nothing**; it checks
//!   that the secret reached it and answers `{"status": "sent"}`.
//!
//! Beside them, showcase tools for what the specification's examples do not show, in
//! [`demo.rs`](demo.rs): `Demo.Sleep` (progress, cancellation, deadlines, a view),
//! `Demo.Watch` (a subscription fed by signed webhooks), `Demo.Confirm` (asks the user),
//! `Demo.Image` (content items), `Demo.Summarize` (asks the client's model) and, with feature
//! `oauth`, `Demo.Profile` (the user's authorization).
//!
//! The `oxp-lambda` binary, the `spec_tools` example, the tests and the benches include this
//! file, so it uses the public API only.

// The path is this folder's, however this file is included (`#[path]` from the binary, the
// tests and the benches, `mod tools;` from the example).
#[path = "demo.rs"]
mod demo;
pub use demo::*;

use oxp_lambda::RegistryError;
use oxp_lambda::{NoInput, Registry, Tool, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use std::time::{Duration, SystemTime};

/// Input of `Calculator.Add`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddInput {
    /// The first number to add.
    pub a: Number,
    /// The second number to add.
    pub b: Number,
}

/// The sum of the two numbers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Sum(pub Number);

/// `Calculator.Add`: integers add exactly (so `10 + 5` is `15`, not `15.0`), others as `f64`.
pub async fn add(input: AddInput, _ctx: ToolContext) -> Result<Sum, ToolError> {
    if let (Some(a), Some(b)) = (input.a.as_i64(), input.b.as_i64())
        && let Some(sum) = a.checked_add(b)
    {
        return Ok(Sum(sum.into()));
    }
    let (a, b) = (input.a.as_f64(), input.b.as_f64());
    a.zip(b)
        .and_then(|(a, b)| Number::from_f64(a + b))
        .map(Sum)
        .ok_or_else(|| {
            ToolError::new("The sum is too large to represent")
                .developer_message("the f64 sum is not finite")
        })
}

/// Input of `Doorbell.Ring`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RingInput {
    /// The ID of the doorbell to ring.
    pub doorbell_id: String,
}

/// The doorbells this demo knows.
pub const DOORBELLS: &[&str] = &["doorbell42", "doorbell84"];

/// `Doorbell.Ring`: no output; an unknown id is a retryable error listing the known ids.
pub async fn ring(input: RingInput, _ctx: ToolContext) -> Result<(), ToolError> {
    if DOORBELLS.contains(&input.doorbell_id.as_str()) {
        tracing::info!(doorbell_id = %input.doorbell_id, "ding dong");
        return Ok(());
    }
    Err(ToolError::new("Doorbell ID not found")
        .developer_message(format!(
            "The doorbell with ID '{}' does not exist.",
            input.doorbell_id
        ))
        .retry_after(Duration::from_millis(500))
        .additional_prompt_content(format!("ids: {}", DOORBELLS.join(","))))
}

/// Output of `System.GetTimestamp`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Timestamp {
    /// The current time (RFC 3339, UTC, seconds precision).
    #[schemars(extend("format" = "date-time"))]
    pub timestamp: String,
}

/// `System.GetTimestamp`: the current UTC time.
pub async fn get_timestamp(_input: NoInput, _ctx: ToolContext) -> Result<Timestamp, ToolError> {
    Ok(Timestamp {
        timestamp: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
    })
}

/// Input of `SMS.Send`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SmsInput {
    /// Recipient phone number in E.164 form.
    pub to: String,
    /// Text of the message.
    pub message: String,
}

/// Output of `SMS.Send`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SmsStatus {
    /// Delivery status.
    pub status: String,
}

/// `SMS.Send`: a demo that sends nothing. It shows how a tool reads a required secret.
pub async fn send_sms(input: SmsInput, ctx: ToolContext) -> Result<SmsStatus, ToolError> {
    // The server checks requirements before the tool runs, so the secret is always here.
    let key = ctx
        .secret("TWILIO_API_KEY")
        .ok_or_else(|| ToolError::internal("TWILIO_API_KEY missing from the context"))?;
    if key.is_empty() {
        return Err(
            ToolError::new("SMS is not configured").developer_message("TWILIO_API_KEY is empty")
        );
    }
    tracing::info!(
        to_len = input.to.len(),
        message_len = input.message.len(),
        "demo SMS not sent"
    );
    Ok(SmsStatus {
        status: "sent".into(),
    })
}

/// Every example tool but `Demo.Profile`.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::builder("Calculator.Add", "1.0.0")
            .description("Adds two numbers together.")
            .handler(add),
        Tool::builder("Doorbell.Ring", "0.1.0")
            .description("Rings a doorbell given a doorbell ID.")
            .handler(ring),
        Tool::builder("System.GetTimestamp", "1.0.0")
            .description("Returns the current system timestamp.")
            .not_idempotent()
            .handler(get_timestamp),
        Tool::builder("SMS.Send", "0.1.2")
            .description("Sends an SMS (demo: nothing is sent).")
            .secret("TWILIO_API_KEY")
            .handler(send_sms),
        Tool::builder("Demo.Sleep", "1.0.0")
            .description(
                "Waits the given number of milliseconds, unless the call is cancelled first; \
                 answers how long it waited and whether it was cancelled.",
            )
            .title("Sleep")
            .read_only()
            .idempotent_hint()
            .long_running()
            .open_world(false)
            .handler(sleep),
        Tool::builder("Demo.Image", "1.0.0")
            .description("Draws a small PNG image and describes it.")
            .title("Draw an image")
            .read_only()
            .open_world(false)
            .handler(image),
        Tool::builder("Demo.Summarize", "1.0.0")
            .description("Summarizes a text with the client's model (MCP sampling).")
            .title("Summarize")
            .read_only()
            .open_world(false)
            .handler(summarize),
        Tool::builder("Demo.Watch", "1.0.0")
            .description(
                "Subscribes to a topic of the demo event source: answers at once with the \
                 subscription, then each event of the topic follows (over RAP).",
            )
            .title("Watch a topic")
            .read_only()
            .handler(watch),
        Tool::builder("Demo.Confirm", "1.0.0")
            .description(
                "Asks the user to choose one of several options and answers the choice \
                 (over RAP).",
            )
            .title("Ask the user")
            .read_only()
            .open_world(false)
            .handler(confirm),
    ]
}

/// A registry of every example tool.
pub fn registry() -> Result<Registry, RegistryError> {
    let builder = Registry::builder().tools(tools());
    // Served once the server runs provider `demo`'s flow (OXP_OAUTH_PROVIDERS names it).
    #[cfg(feature = "oauth")]
    let builder = match std::env::var("OXP_OAUTH_PROVIDERS") {
        Ok(p) if p.split(',').any(|id| id.trim() == "demo") => {
            builder.tool(profile_tool()).state(UserInfoUrl(
                std::env::var("OXP_OAUTH_DEMO_USERINFO_URL")
                    .ok()
                    .filter(|u| !u.is_empty()),
            ))
        }
        _ => builder,
    };
    builder.build()
}
