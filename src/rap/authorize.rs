//! An invocation whose tool needs the user's authorization (published spec, `server/oauth.md`):
//! the worker POSTs an `oauth` message with the link to the callback, waits for the user to
//! authorize, then runs the call again and delivers its `tool_result`. It never waits in
//! silence: a refusal at the provider, or no authorization within `OXP_OAUTH_PENDING_SECS` of
//! the invocation's arrival, ends in an error `tool_result`.
//!
//! The wait is a question of the one question service (`crate::work::questions`): asked once
//! per invocation and provider (its `oauth` message sent once, however often the invocation
//! runs), listed under the provider and the user, and answered when the user's authorization
//! completes (the OAuth callback's hook, `UserTokens::when_completed`, in whichever process the
//! browser reached) for every invocation waiting on it; the waiting call wakes by the
//! service's one policy, and one parked past its executor's deadline (Lambda) is woken as work.

use crate::rap::deliver::Deliverer;
use crate::rap::job::{Job, Kept, error};
use crate::rap::toolset::ServedToolset;
use crate::rap::wire::ErrorBody;
use crate::state::key_of;
use crate::work::Questions;
use crate::work::questions::Waited as Answered;
use oxp_lambda_core::content::ToolOutput;
use oxp_lambda_core::durable::Item;
use oxp_lambda_core::tokens::{Authorized, Challenge, UserTokens};
use serde::Serialize;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The waits of each provider and user: question tokens, the caller each was asked for.
fn waiting(provider: &str, user: &str) -> String {
    format!("oauth-wait#{}", key_of(&[provider, user]))
}

/// The users' authorizations, for the worker.
#[derive(Debug, Clone)]
pub(crate) struct Authorizing {
    pub(crate) broker: Arc<dyn UserTokens>,
    /// How long after its arrival an invocation waits for the user.
    pub(crate) timeout: Duration,
    pub(crate) questions: Arc<Questions>,
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
    /// The worker's own deadline came first: the call parks until the user answers.
    Deadline,
}

impl Authorizing {
    /// Answers every invocation waiting on `provider`'s authorization of `user` (the OAuth
    /// callback's hook): registered with the broker.
    pub(crate) fn answer_waits(&self) {
        let (questions, store) = (self.questions.clone(), self.questions.store().clone());
        self.broker
            .when_completed(Arc::new(move |done: Authorized| {
                let (questions, store) = (questions.clone(), store.clone());
                Box::pin(async move {
                    let waits = waiting(&done.provider, &done.user);
                    let Ok(open) = store.list(&waits, None, 1000).await else {
                        return;
                    };
                    for (token, item) in open {
                        let caller = String::from_utf8_lossy(&item.value).into_owned();
                        let caller = (!caller.is_empty()).then_some(caller.as_str());
                        let answer = json!({"granted": done.granted});
                        let _ = questions.answer(&token, caller, |_| true, answer).await;
                        let _ = store.delete(&waits, &token).await;
                    }
                })
            }));
    }

    /// Asks `job`'s user (its work woken by the answer) through its callback, once, and waits.
    pub(crate) async fn wait(
        &self,
        deliverer: &Deliverer,
        job: &Job,
        challenge: &Challenge,
        scopes: &[String],
        deadline: Option<Instant>,
    ) -> Waited {
        let provider = challenge.provider.as_str();
        let Some(user) = user_of(job) else {
            return Waited::Ended(error(
                "missing_requirement",
                "This tool requires a user ID".into(),
            ));
        };
        let caller = job.principal.subject.as_deref();
        let arrived = UNIX_EPOCH + Duration::from_millis(job.received_at_ms);
        let give_up = arrived + self.timeout;
        let left = give_up
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        let call = key_of(&[
            "oauth",
            caller.unwrap_or_default(),
            &job.reply_to.group_id,
            &job.reply_to.id,
            provider,
        ]);
        let keep = left + Duration::from_secs(60);
        let asked = self
            .questions
            .ask(
                &call,
                caller,
                json!({"provider": provider}),
                keep,
                Some(&job.work),
            )
            .await;
        let Ok(asked) = asked else {
            return unavailable();
        };
        // Waited on from before the user is sent the link: an authorization completed before
        // the wait begins is handed to it.
        let expected = self.questions.expect(&asked.token, asked.written);
        // Listed where the completion finds it, until the wait would end anyway.
        let listed = Item::new(
            caller.unwrap_or_default().as_bytes().to_vec(),
            Some(SystemTime::now() + keep),
        );
        let store = self.questions.store();
        if store
            .put(&waiting(provider, &user), &asked.token, listed)
            .await
            .is_err()
        {
            return unavailable();
        }
        if asked.new && !self.ask(deliverer, job, challenge, deadline).await {
            return Waited::Ended(error(
                "missing_requirement",
                format!(
                    "This tool requires authorization with '{provider}', and the request to authorize could not be delivered"
                ),
            ));
        }
        // Authorized between the challenge and the question: no answer will come.
        if let Ok(true) = self.broker.holds(provider, &user, scopes).await {
            return Waited::Granted;
        }
        self.questions.waits(&job.work, false).await;
        let give_up = Instant::now() + left;
        let until = deadline.map_or(give_up, |d| d.min(give_up));
        let answered = expected
            .wait(until.into(), None, std::future::pending())
            .await;
        self.waited(answered, provider, until < give_up)
    }

    /// What the wait for `provider`'s authorization came to: `answered`, or the executor's
    /// end (`deadline_first`: it came before the authorization's own time ran out).
    fn waited(
        &self,
        answered: Result<serde_json::Value, Answered>,
        provider: &str,
        deadline_first: bool,
    ) -> Waited {
        match answered {
            Ok(answer) if answer["granted"] == true => Waited::Granted,
            Ok(_) => Waited::Ended(error(
                "authorization_denied",
                format!(
                    "The authorization with '{provider}' was not granted. Try again and grant the requested access."
                ),
            )),
            Err(Answered::Until) if deadline_first => Waited::Deadline,
            Err(Answered::Until | Answered::Gone | Answered::Cancelled) => Waited::Ended(error(
                "authorization_timeout",
                format!(
                    "The authorization with '{provider}' was not completed within {} seconds; call the tool again to get a new link",
                    self.timeout.as_secs()
                ),
            )),
            Err(Answered::Unavailable(_)) => unavailable(),
        }
    }

    /// Sends `job`'s callback the `oauth` message with the link; whether it was delivered.
    async fn ask(
        &self,
        deliverer: &Deliverer,
        job: &Job,
        challenge: &Challenge,
        deadline: Option<Instant>,
    ) -> bool {
        let message = OAuthMessage {
            kind: "oauth",
            group_id: &job.reply_to.group_id,
            id: &job.reply_to.id,
            call_id: job.reply_to.call_id.as_deref(),
            auth_url: &challenge.url,
        };
        let sent = deliverer.send(job, &message, deadline).await;
        tracing::info!(target: "oxp::rap::audit", id = job.reply_to.id.as_str(), group_id = job.reply_to.group_id.as_str(), provider = challenge.provider.as_str(), delivery = if sent.is_ok() { "delivered" } else { "failed" }, reason = sent.as_ref().err(), "authorization asked");
        sent.is_ok()
    }

    /// Runs `job` (each attempt through `attempt`), asking its user to authorize (once) and
    /// waiting whenever its tool needs a token the user has not granted yet; `deadline`: when
    /// the worker must stop waiting (the call then parks).
    pub(crate) async fn run<F, Fut>(
        &self,
        deliverer: &Deliverer,
        toolset: &ServedToolset,
        job: &Job,
        deadline: Option<Instant>,
        attempt: F,
    ) -> Ran
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Ran>,
    {
        loop {
            let challenge = match attempt().await {
                Err(Kept::Authorize(challenge)) => challenge,
                other => return other,
            };
            let scopes = scopes_of(toolset, job, &challenge.provider);
            let waited = self
                .wait(deliverer, job, &challenge, &scopes, deadline)
                .await;
            match waited {
                Waited::Granted => {}
                Waited::Ended(error) => return Ok(Err(error)),
                Waited::Deadline => return Err(Kept::AwaitingAuthorization),
            }
        }
    }
}

/// What one run of a job gives: the output or the error to report, or why it is not answered.
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

/// Whose tokens `job`'s call uses: its bound user, else its caller's own (`None`: no user).
fn user_of(job: &Job) -> Option<String> {
    let bound = job
        .principal
        .bind_user_id(job.user_id.clone())
        .ok()
        .flatten();
    job.principal
        .token_owner(bound.as_deref())
        .map(str::to_owned)
}

/// The wait could not be kept (the store did not answer).
fn unavailable() -> Waited {
    Waited::Ended(error(
        "unavailable",
        "The authorization could not be awaited; try again".into(),
    ))
}
