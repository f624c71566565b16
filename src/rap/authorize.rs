//! An invocation whose tool needs the user's authorization (published spec, `server/oauth.md`):
//! the worker POSTs an `oauth` message with the link to the callback, waits for the user to
//! authorize, then runs the call again and delivers its `tool_result`. It never waits in
//! silence: a refusal at the provider, or no authorization within `OXP_OAUTH_PENDING_SECS` of
//! the invocation's arrival, ends in an error `tool_result`.
//!
//! The wait watches the vault itself (every [`POLL`]), so it sees an authorization completed
//! in another process (in Lambda the provider's redirect reaches the HTTP function, the
//! invocation waits in the worker), and wakes at once on one completed in this process.

use crate::rap::deliver::{Deliverer, Delivery};
use crate::rap::job::Kept;
use crate::rap::job::{Job, error};
use crate::rap::toolset::ServedToolset;
use crate::rap::wire::ErrorBody;
use axum::body::Bytes;
use oxp_lambda_core::content::ToolOutput;
use oxp_lambda_core::tokens::{Challenge, UserTokens};
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often a waiting invocation looks for the user's token.
const POLL: Duration = Duration::from_secs(2);

/// The users' authorizations, for the worker.
#[derive(Debug, Clone)]
pub(crate) struct Authorizing {
    pub(crate) broker: Arc<dyn UserTokens>,
    /// How long after its arrival an invocation waits for the user.
    pub(crate) timeout: Duration,
}

/// The `oauth` callback message.
#[derive(Debug, Serialize)]
struct OAuthMessage<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    group_id: &'a str,
    id: &'a str,
    call_id: Option<&'a str>,
    auth_url: &'a str,
}

/// How a wait ended.
#[derive(Debug)]
pub(crate) enum Waited {
    /// The user authorized: run the call again.
    Granted,
    /// It ends with this error result.
    Ended(ErrorBody),
    /// The worker's own deadline came first: the job stays queued and waits again later.
    Deadline,
}

impl Authorizing {
    /// Asks the user through `job`'s callback (unless `asked` already) and waits.
    pub(crate) async fn wait(
        &self,
        deliverer: &Deliverer,
        job: &Job,
        challenge: &Challenge,
        scopes: &[String],
        asked: bool,
        deadline: Option<Instant>,
    ) -> Waited {
        let provider = challenge.provider.as_str();
        let user = job
            .principal
            .bind_user_id(job.user_id.clone())
            .ok()
            .flatten();
        let Some(user) = job
            .principal
            .token_owner(user.as_deref())
            .map(str::to_owned)
        else {
            return Waited::Ended(error(
                "missing_requirement",
                "This tool requires a user ID".into(),
            ));
        };
        let mut events = self.broker.completions();
        let arrived = UNIX_EPOCH + Duration::from_millis(job.received_at_ms);
        // Asked once per invocation, even when the queue delivers it again (SQS, after the
        // worker's time ran out while waiting).
        let marker = format!(
            "{}\n{}\n{}\n{provider}",
            job.principal.subject.as_deref().unwrap_or_default(),
            job.reply_to.group_id,
            job.reply_to.id
        );
        if !asked
            && self
                .broker
                .first_time(&marker, arrived + self.timeout)
                .await
        {
            let message = OAuthMessage {
                kind: "oauth",
                group_id: &job.reply_to.group_id,
                id: &job.reply_to.id,
                call_id: job.reply_to.call_id.as_deref(),
                auth_url: &challenge.url,
            };
            let body = Bytes::from(serde_json::to_vec(&message).expect("messages serialize"));
            let sent = deliverer
                .deliver(
                    &job.reply_to.callback_url,
                    body,
                    job.traceparent.as_deref(),
                    deadline,
                )
                .await;
            tracing::info!(target: "oxp::rap::audit", id = job.reply_to.id.as_str(), group_id = job.reply_to.group_id.as_str(), provider, delivery = if matches!(sent, Delivery::Delivered { .. }) { "delivered" } else { "failed" }, "authorization asked");
            if let Delivery::Failed { .. } = sent {
                return Waited::Ended(error(
                    "missing_requirement",
                    format!(
                        "This tool requires authorization with '{provider}', and the request to authorize could not be delivered"
                    ),
                ));
            }
        }
        let left = (arrived + self.timeout)
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        let give_up = Instant::now() + left;
        loop {
            let wake = deadline
                .map_or(give_up, |d| d.min(give_up))
                .min(Instant::now() + POLL);
            tokio::select! {
                event = events.recv() => {
                    if let Ok(event) = event
                        && event.provider == provider
                        && event.user == user
                        && !event.granted
                    {
                        return Waited::Ended(error(
                            "authorization_denied",
                            format!("The authorization with '{provider}' was not granted. Try again and grant the requested access."),
                        ));
                    }
                }
                () = tokio::time::sleep_until(wake.into()) => {}
            }
            match self.broker.holds(provider, &user, scopes).await {
                Ok(true) => return Waited::Granted,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(target: "oxp::rap", error = %e, "token vault unavailable while waiting")
                }
            }
            let now = Instant::now();
            if now >= give_up {
                return Waited::Ended(error(
                    "authorization_timeout",
                    format!(
                        "The authorization with '{provider}' was not completed within {} seconds; call the tool again to get a new link",
                        self.timeout.as_secs()
                    ),
                ));
            }
            if deadline.is_some_and(|d| now >= d) {
                return Waited::Deadline;
            }
        }
    }
}

impl Authorizing {
    /// Runs `job` (each attempt through `attempt`), asking its user to authorize (once) and
    /// waiting whenever its tool needs a token the user has not granted yet; `auth_deadline`:
    /// when the worker must stop waiting (the job then stays on its queue).
    pub(crate) async fn run<F, Fut>(
        &self,
        deliverer: &Deliverer,
        toolset: &ServedToolset,
        job: &Job,
        auth_deadline: Option<Instant>,
        attempt: F,
    ) -> Ran
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Ran>,
    {
        let mut asked = false;
        loop {
            let challenge = match attempt().await {
                Err(Kept::Authorize(challenge)) => challenge,
                other => return other,
            };
            let scopes = scopes_of(toolset, job, &challenge.provider);
            let waited = self
                .wait(deliverer, job, &challenge, &scopes, asked, auth_deadline)
                .await;
            match waited {
                Waited::Granted => asked = true,
                Waited::Ended(error) => return Ok(Err(error)),
                Waited::Deadline => return Err(Kept::AwaitingAuthorization),
            }
        }
    }
}

/// What one run of a job gives: the output or the error to report, or why it stays queued.
type Ran = Result<Result<ToolOutput<Value>, ErrorBody>, Kept>;

/// The scopes the job's tool declares for `provider`.
fn scopes_of(toolset: &ServedToolset, job: &Job, provider: &str) -> Vec<String> {
    toolset
        .get(job.operation.as_deref().unwrap_or_default())
        .and_then(|t| {
            t.requirements
                .authorization
                .iter()
                .find(|p| p.id == provider)
                .map(|p| p.scopes.clone())
        })
        .unwrap_or_default()
}
