//! The showcase tools, for what the specification's examples do not show:
//! - `Demo.Sleep@1.0.0`: waits `ms` milliseconds unless cancelled (or stopped at its deadline)
//!   and answers `{"slept_ms", "cancelled"}`: watch cancellation and deadlines on each protocol.
//!   It reports its progress at each tenth of its run and publishes the view `sleep`
//!   (`{"slept_ms"}`) where the protocol carries them.
//! - `Demo.Watch@1.0.0`: subscribes to `topic` of the webhook event source `demo` (its events
//!   are signed with the secret `DEMO_WEBHOOK_SECRET`); the call answers at once, naming the
//!   subscription, and each event follows (the `max_events`-th is the last).
//! - `Demo.Confirm@1.0.0`: asks the user to choose one of `choices` and answers
//!   `{"selected", "choice"}`.
//! - `Demo.Image@1.0.0`: answers a PNG it draws and a text item describing it: content items.
//! - `Demo.Summarize@1.0.0`: asks the client's model to summarize `text` and answers
//!   `{"summary"}` (MCP sampling; over OXP and RAP an `unsupported` error).
//! - `Demo.Profile@1.0.0` (feature `oauth`, served when `OXP_OAUTH_PROVIDERS` names `demo`):
//!   needs the user's authorization with provider `demo` and a user id; answers what the
//!   provider's userinfo endpoint (`OXP_OAUTH_DEMO_USERINFO_URL`, read when the tools are built)
//!   says of the user. A client may still send the token itself (`context.authorization`).
//!
//! [`tools.rs`](tools.rs) registers them beside the specification's.

use oxp_lambda::{
    Ask, Content, ModelPreferences, NoInput, Sample, Subscribe, ToolContext, ToolError, ToolOutput,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Input of `Demo.Sleep`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SleepInput {
    /// How long to wait, in milliseconds.
    #[schemars(range(max = 600_000))]
    pub ms: u32,
}

/// Output of `Demo.Sleep`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Slept {
    /// How long it waited, in milliseconds.
    pub slept_ms: u64,
    /// Whether it stopped because the call was cancelled.
    pub cancelled: bool,
}

/// `Demo.Sleep`: waits unless cancelled, reporting its progress at each tenth of the wait, and
/// publishes the view `sleep`. At the call's deadline the server stops it and answers that it
/// did not finish in time.
pub async fn sleep(input: SleepInput, ctx: ToolContext) -> Result<Slept, ToolError> {
    let start = Instant::now();
    let total = u64::from(input.ms);
    let mut cancelled = false;
    for tenth in 1..=10u64 {
        let until = start + Duration::from_millis(total * tenth / 10);
        tokio::select! {
            () = tokio::time::sleep_until(until.into()) => {}
            () = ctx.cancelled() => {
                cancelled = true;
                break;
            }
        }
        if total > 0 {
            let done = total * tenth / 10;
            ctx.progress(
                done as f64,
                Some(total as f64),
                &format!("slept {done} of {total} ms"),
            )
            .await;
        }
    }
    let slept_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    ctx.view("sleep", serde_json::json!({"slept_ms": slept_ms}))
        .await;
    Ok(Slept {
        slept_ms,
        cancelled,
    })
}

/// Input of `Demo.Watch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WatchInput {
    /// The topic of the `demo` event source to receive events of.
    #[schemars(length(min = 1, max = 128))]
    pub topic: String,
    /// After this many events the subscription ends (the last says so).
    #[schemars(range(min = 1))]
    pub max_events: Option<u32>,
}

/// Output of `Demo.Watch`: the subscription that follows the answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Watching {
    /// The subscription's id.
    pub subscription: String,
    /// The topic it receives.
    pub topic: String,
    /// What happens next, for the model.
    pub message: String,
}

/// `Demo.Watch`: opens a subscription to `topic` of the `demo` event source; its events follow
/// this answer.
pub async fn watch(input: WatchInput, ctx: ToolContext) -> Result<Watching, ToolError> {
    let subscription = ctx
        .subscribe(Subscribe {
            source: "demo".into(),
            topic: input.topic.clone(),
            max_events: input.max_events,
        })
        .await?;
    Ok(Watching {
        message: format!(
            "Subscribed to '{}' of the demo event source (subscription {}); its events follow.",
            input.topic, subscription.id
        ),
        subscription: subscription.id,
        topic: input.topic,
    })
}

/// Input of `Demo.Confirm`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConfirmInput {
    /// What the user is asked.
    #[schemars(length(min = 1, max = 1024))]
    pub prompt: String,
    /// The choices' labels.
    #[schemars(length(min = 1, max = 32))]
    pub choices: Vec<String>,
    /// The index of the choice taken when the user dismisses the question.
    pub default: usize,
}

/// Output of `Demo.Confirm`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Confirmed {
    /// The index the user chose.
    pub selected: usize,
    /// Its label.
    pub choice: String,
}

/// `Demo.Confirm`: asks the user and answers what they chose.
pub async fn confirm(input: ConfirmInput, ctx: ToolContext) -> Result<Confirmed, ToolError> {
    let choice = ctx
        .ask(Ask::new(input.prompt, input.choices).default(input.default))
        .await?;
    Ok(Confirmed {
        selected: choice.index,
        choice: choice.label,
    })
}

/// Input of `Demo.Summarize`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SummarizeInput {
    /// The text to summarize.
    #[schemars(length(min = 1, max = 20000))]
    pub text: String,
}

/// What `Demo.Summarize` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Summary {
    /// The summary, as the client's model wrote it.
    pub summary: String,
}

/// `Demo.Summarize`: the client's model summarizes `text`; the server holds no model key.
pub async fn summarize(input: SummarizeInput, ctx: ToolContext) -> Result<Summary, ToolError> {
    let fast = ModelPreferences {
        speed_priority: Some(0.8),
        ..ModelPreferences::default()
    };
    let request = Sample::new(300)
        .system("Summarize the user's text in one or two sentences.")
        .user(input.text)
        .preferences(fast);
    let summary = ctx.sample(request).await?.text();
    Ok(Summary { summary })
}

/// Side of the square `Demo.Image` draws, in pixels.
pub const IMAGE_SIDE: u32 = 64;

/// The picture `Demo.Image` answers: an orange disc on a blue-to-green gradient, a PNG made
/// once (tests/content.rs decodes it and checks the drawing), so that no binary links a PNG
/// encoder for one example.
pub const IMAGE_PNG: &[u8] = include_bytes!("disc.png");

/// `Demo.Image`: its PNG and a text item describing it.
pub async fn image(_input: NoInput, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let description = format!(
        "A {IMAGE_SIDE}x{IMAGE_SIDE} PNG: an orange disc on a blue-to-green gradient ({} bytes).",
        IMAGE_PNG.len()
    );
    Ok(ToolOutput::of([
        Content::text(description),
        Content::image(IMAGE_PNG.to_vec(), "image/png"),
    ]))
}

/// Where `Demo.Profile` reads the user's profile.
#[cfg(feature = "oauth")]
#[derive(Debug, Clone)]
pub struct UserInfoUrl(pub Option<String>);

/// `Demo.Profile`: the provider's userinfo answer for the user's token (bounded, 64 KiB).
#[cfg(feature = "oauth")]
pub async fn profile(_input: NoInput, ctx: ToolContext) -> Result<serde_json::Value, ToolError> {
    let token = ctx
        .authorization
        .get("demo")
        .ok_or_else(|| ToolError::new("No token for 'demo'"))?;
    let url = ctx
        .state::<UserInfoUrl>()
        .and_then(|u| u.0.clone())
        .ok_or_else(|| {
            ToolError::new("The profile service is not configured")
                .developer_message("set OXP_OAUTH_DEMO_USERINFO_URL")
        })?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(ToolError::internal)?;
    let answer = client
        .get(&url)
        .bearer_auth(token.expose())
        .send()
        .await
        .map_err(|e| {
            ToolError::new("The profile service did not answer")
                .developer_message(e.without_url().to_string())
                .retry_after(Duration::from_secs(1))
        })?;
    // Refused (the user revoked the access, the provider ended the grant): the server forgets
    // the token and asks the user to authorize again, as a first call does.
    if answer.status() == reqwest::StatusCode::UNAUTHORIZED {
        return Err(ToolError::token_refused("demo").developer_message("userinfo answered 401"));
    }
    if !answer.status().is_success() {
        return Err(ToolError::new("The profile service failed")
            .developer_message(format!("userinfo answered {}", answer.status())));
    }
    let body = answer.bytes().await.map_err(ToolError::internal)?;
    if body.len() > 64 * 1024 {
        return Err(ToolError::new("The profile is too large"));
    }
    serde_json::from_slice(&body)
        .map_err(|_| ToolError::new("The profile service answered something else than JSON"))
}

/// `Demo.Profile`, which reads its userinfo URL from the registry's [`UserInfoUrl`].
#[cfg(feature = "oauth")]
pub fn profile_tool() -> oxp_lambda::Tool {
    oxp_lambda::Tool::builder("Demo.Profile", "1.0.0")
        .description(
            "Answers the user's profile at the demo identity provider. Needs the user's \
                 authorization: the first call may answer with a link for the user to open.",
        )
        .title("My profile")
        .read_only()
        .authorization("demo", ["openid"])
        .requires_user_id()
        .handler(profile)
}
