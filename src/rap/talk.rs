//! How a RAP call talks back (the core's [`Talk`]): progress and views as `view_update`
//! messages (progress as the view `progress`: RAP has no message of its own for it), questions
//! as `user_choice` ([`super::choice`]), and subscriptions whose events follow the call's
//! answer as `subscription_event`s ([`crate::subscriptions`]).

use crate::rap::choice::{self, Ended};
use crate::rap::deliver::{Deliverer, Delivery};
use crate::rap::job::Job;
use crate::rap::messages::{UserChoice, ViewUpdate};
use crate::subscriptions::{Owner, Subscriptions};
use crate::work::Questions;
use crate::work::questions::park_at;
use oxp_lambda_core::durable::StateStore;
use oxp_lambda_core::talk::{
    Ask, Choice, Progress, Reported, Subscribe, Subscription, Talk, TalkError, TalkFuture, View,
};
use oxp_lambda_core::tool::Cancellation;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a progress or view message may take: a notification must not hold the call up.
const NOTIFY_WITHIN: Duration = Duration::from_secs(2);

/// What every RAP call's channel shares: the state store, the subscriptions, the one question
/// service, and how long a question waits.
#[derive(Debug)]
pub(crate) struct Talkback {
    pub(crate) state: Option<Arc<dyn StateStore>>,
    pub(crate) subscriptions: Option<Arc<Subscriptions>>,
    pub(crate) questions: Option<Arc<Questions>>,
    /// `OXP_RAP_CHOICE_TIMEOUT_SECS`: how long a question waits for the user at most.
    pub(crate) choice_timeout: Duration,
    /// Whether a call waiting past its executor's deadline is parked (the worker role), its
    /// answer waking it, rather than ended.
    pub(crate) parks: bool,
}

/// The owner a request names (no callback: what finds a call's or a thread's subscriptions).
fn addressed(caller: Option<&str>, thread: &str, call: &str) -> Owner {
    Owner {
        caller: caller.map(str::to_owned),
        group_id: thread.to_owned(),
        tool_call_id: call.to_owned(),
        callback_url: String::new(),
        traceparent: None,
    }
}

/// Cancellation marks, by call: how `/cancel_tool_call` reaches a call another process runs.
const CANCELLED: &str = "rap-cancel";
/// How long a cancellation mark is kept (a call cannot outlive a Lambda worker by more).
const CANCEL_KEEP: Duration = Duration::from_secs(3600);

impl Talkback {
    /// The subscriptions the call of `owner` opened (if any, its answer says
    /// `subscription: true`).
    pub(crate) async fn opened(&self, owner: &Owner) -> Vec<String> {
        let Some(subscriptions) = &self.subscriptions else {
            return Vec::new();
        };
        subscriptions.of_call(owner).await.unwrap_or_else(|e| {
            tracing::warn!(target: "oxp::rap", error = %e, "subscriptions of a call not read");
            Vec::new()
        })
    }

    /// After the answer of the call that opened subscriptions `ids` ([`Self::opened`]): they
    /// start when the answer confirmed them to the caller (the events they took meanwhile
    /// delivered now), and are dropped otherwise (an error, or an answer never delivered).
    pub(crate) async fn settle(&self, ids: Vec<String>, confirmed: bool) {
        let Some(subscriptions) = &self.subscriptions else {
            return;
        };
        let settled = if confirmed {
            subscriptions.activate(ids).await
        } else {
            subscriptions.discard(ids).await
        };
        if let Err(e) = settled {
            tracing::error!(target: "oxp::rap", error = %e, confirmed, "subscriptions of a call not settled");
        }
    }

    /// `/cancel_tool_call` for the call of `caller` in `thread`: marks it cancelled for the
    /// process that runs it, and ends the subscriptions it opened. Whether it had any.
    pub(crate) async fn cancel(&self, caller: Option<&str>, thread: &str, call: &str) -> bool {
        let key = crate::subscriptions::key_of(&[caller.unwrap_or_default(), thread, call]);
        if let Some(store) = &self.state {
            let mark = oxp_lambda_core::durable::Item::new(
                Vec::new(),
                Some(std::time::SystemTime::now() + CANCEL_KEEP),
            );
            if let Err(e) = store.put(CANCELLED, &key, mark).await {
                tracing::warn!(target: "oxp::rap", error = %e, "cancellation mark not written");
            }
        }
        let Some(subscriptions) = &self.subscriptions else {
            return false;
        };
        let owner = addressed(caller, thread, call);
        subscriptions.cancel_call(&owner).await.unwrap_or_else(|e| {
            tracing::warn!(target: "oxp::rap", error = %e, "subscriptions of a call not cancelled");
            false
        })
    }

    /// Whether the call `id` of `thread` by `caller` opened a subscription that is live.
    pub(crate) async fn subscribed(
        &self,
        caller: Option<&str>,
        thread: &str,
        id: &str,
    ) -> Result<bool, oxp_lambda_core::durable::StateError> {
        let Some(subscriptions) = &self.subscriptions else {
            return Ok(false);
        };
        let owner = addressed(caller, thread, id);
        subscriptions.live_of_call(&owner).await
    }

    /// `/close_thread`: ends every subscription opened in `thread` by `caller`; how many.
    pub(crate) async fn close(&self, caller: Option<&str>, thread: &str) -> usize {
        let Some(subscriptions) = &self.subscriptions else {
            return 0;
        };
        let owner = addressed(caller, thread, "");
        subscriptions.cancel_thread(&owner).await.unwrap_or_else(|e| {
            tracing::warn!(target: "oxp::rap", error = %e, "subscriptions of a thread not cancelled");
            0
        })
    }

    /// While a queued call runs (a worker), fires `cancellation` when a cancellation mark for
    /// it appears (within a [`POLL`](crate::work::questions::POLL), the one wake-up policy);
    /// the watch ends when the guard drops. Nothing to
    /// watch in the process that takes the cancellation itself.
    pub(crate) fn watch_cancel(
        &self,
        job: &Job,
        cancellation: Cancellation,
    ) -> Option<crate::work::watch::Watching> {
        let store = self.state.clone().filter(|_| self.parks)?;
        let key = crate::subscriptions::key_of(&[
            job.principal.subject.as_deref().unwrap_or_default(),
            &job.reply_to.group_id,
            &job.reply_to.id,
        ]);
        Some(crate::work::watch::cancel_when(
            cancellation,
            true,
            move || {
                let (store, key) = (store.clone(), key.clone());
                async move { matches!(store.get(CANCELLED, &key).await, Ok(Some(_))) }
            },
        ))
    }
}

/// The channel of one RAP call.
#[derive(Debug)]
pub(crate) struct RapTalk {
    parts: Arc<Talkback>,
    deliverer: Deliverer,
    /// The call's job, which knows the work it is run as.
    job: Arc<Job>,
    /// When the executor stops (the worker invocation's deadline).
    deadline: Option<Instant>,
    cancellation: Cancellation,
    parked: AtomicBool,
}

impl RapTalk {
    pub(crate) fn new(
        parts: Arc<Talkback>,
        deliverer: Deliverer,
        job: Arc<Job>,
        deadline: Option<Instant>,
        cancellation: Cancellation,
    ) -> Self {
        Self {
            parts,
            deliverer,
            job,
            deadline,
            cancellation,
            parked: AtomicBool::new(false),
        }
    }

    /// Whether the call parked, waiting for the user past its executor's deadline.
    pub(crate) fn parked(&self) -> bool {
        self.parked.load(Ordering::Relaxed)
    }

    /// The owner of the subscriptions this call opens.
    pub(crate) fn owner(job: &Job) -> Owner {
        Owner {
            caller: job.principal.subject.clone(),
            group_id: job.reply_to.group_id.clone(),
            tool_call_id: job.reply_to.id.clone(),
            callback_url: job.reply_to.callback_url.clone(),
            traceparent: job.traceparent.clone(),
        }
    }

    /// Delivers `message` to the call's callback, by `deadline`.
    async fn send(&self, message: &impl serde::Serialize, deadline: Option<Instant>) -> Delivery {
        self.deliverer.send(&self.job, message, deadline).await
    }

    async fn notify(&self, view_type: String, content: Map<String, Value>) -> Reported {
        let message = ViewUpdate {
            kind: "view_update",
            group_id: self.job.reply_to.group_id.clone(),
            view_type,
            content,
        };
        let until = Instant::now() + NOTIFY_WITHIN;
        let within = self.deadline.map_or(until, |d| d.min(until));
        match self.send(&message, Some(within)).await {
            Ok(()) => Reported::Sent,
            Err(_) => Reported::Failed,
        }
    }

    /// Sends question `seq` (`ask`, answered at `base`'s URL for `token`) to the callback.
    async fn send_choice(
        &self,
        ask: &Ask,
        seq: u32,
        base: &str,
        token: &str,
    ) -> Result<(), TalkError> {
        let reply_to = &self.job.reply_to;
        let message = UserChoice {
            kind: "user_choice",
            group_id: reply_to.group_id.clone(),
            id: reply_to.id.clone(),
            call_id: reply_to.call_id.clone(),
            prompt: ask.prompt.clone(),
            choices: ask.choices.clone(),
            default: ask.default,
            response_url: format!("{base}/user_choice_response/{token}"),
        };
        let sent = self.send(&message, self.deadline).await;
        tracing::info!(target: "oxp::rap::audit", id = reply_to.id.as_str(), group_id = reply_to.group_id.as_str(), seq, delivery = if sent.is_ok() { "delivered" } else { "failed" }, reason = sent.as_ref().err(), "user choice asked");
        sent.map_err(|_| {
            TalkError::Unavailable("the question could not be delivered to the callback".into())
        })
    }

    async fn ask_user(&self, ask: Ask, seq: u32) -> Result<Choice, TalkError> {
        let Some(questions) = &self.parts.questions else {
            return Err(TalkError::NotSetUp(
                "asking the user needs durable state (OXP_STATE)".into(),
            ));
        };
        let Some(base) = &self.job.base_url else {
            return Err(TalkError::NotSetUp(
                "this server's URL is unknown (set OXP_RAP_ENDPOINT)".into(),
            ));
        };
        let unavailable = |e: oxp_lambda_core::durable::StateError| TalkError::Unavailable(e.0);
        let reply_to = &self.job.reply_to;
        let caller = self.job.principal.subject.as_deref();
        // Waiting for a person: a takeover of the work resumes the call (its question and the
        // answer found again), whatever its tool. Marked beside the question's writes, both
        // done before the user is asked, in one commit of the embedded store: the mark goes
        // first (it takes longest to make) and its flush waits for the question's two writes
        // (which could otherwise find the writer, woken by the mark, committing it alone).
        let ((), asked) = tokio::join!(
            questions.waits(&self.job.work, true),
            choice::record(
                questions,
                (caller, &reply_to.group_id, &reply_to.id),
                seq,
                self.parts.choice_timeout + Duration::from_secs(3600),
                Some(&self.job.work),
            )
        );
        let asked = asked.map_err(unavailable)?;
        // Expected before the question is sent: an answer arriving before the wait begins is
        // handed to it, and written without a read.
        let waiting = questions.expect(&asked.token, asked.written);
        if asked.new {
            self.send_choice(&ask, seq, base, &asked.token).await?;
        }
        // The question's own limit counts from when the invocation arrived, so a call handed
        // over again does not wait anew.
        let arrived = std::time::UNIX_EPOCH + Duration::from_millis(self.job.received_at_ms);
        let limit = ask.within.unwrap_or(self.parts.choice_timeout);
        let left = (arrived + limit)
            .duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO);
        let give_up = Instant::now() + left;
        // Parked a margin before the executor's end: the call's deadline (the invoker ending
        // the tool with a timeout, kept as its result) must not win the race to it.
        let until = park_at(self.deadline).map_or(give_up, |d| d.min(give_up));
        let waited = choice::wait(waiting, &ask, until.into(), self.cancellation.cancelled()).await;
        match waited {
            Ok(choice) => Ok(choice),
            Err(Ended::Failed(e)) => Err(e),
            Err(Ended::Until) if until < give_up && self.parts.parks => {
                self.parked.store(true, Ordering::Relaxed);
                Err(TalkError::Parked)
            }
            Err(Ended::Until) => Err(TalkError::TimedOut),
        }
    }
}

impl Talk for RapTalk {
    fn protocol(&self) -> &'static str {
        "rap"
    }

    fn progress(&self, progress: Progress) -> TalkFuture<'_, Reported> {
        let mut content = Map::new();
        content.insert("done".into(), json!(progress.done));
        if let Some(total) = progress.total {
            content.insert("total".into(), json!(total));
        }
        if let Some(message) = progress.message {
            content.insert("message".into(), Value::String(message));
        }
        Box::pin(self.notify("progress".into(), content))
    }

    fn view(&self, view: View) -> TalkFuture<'_, Reported> {
        Box::pin(self.notify(view.view_type, view.content))
    }

    fn ask(&self, ask: Ask, seq: u32) -> TalkFuture<'_, Result<Choice, TalkError>> {
        Box::pin(self.ask_user(ask, seq))
    }

    fn subscribe(
        &self,
        subscribe: Subscribe,
        seq: u32,
    ) -> TalkFuture<'_, Result<Subscription, TalkError>> {
        Box::pin(async move {
            let Some(subscriptions) = &self.parts.subscriptions else {
                return Err(TalkError::NotSetUp(
                    "subscriptions need durable state (OXP_STATE)".into(),
                ));
            };
            subscriptions
                .open(&Self::owner(&self.job), &subscribe, seq)
                .await
                .map_err(|e| match e {
                    crate::subscriptions::NotOpened::CallerFull => TalkError::Full {
                        what: "subscriptions",
                    },
                    crate::subscriptions::NotOpened::Unavailable(e) => TalkError::Unavailable(e.0),
                })
        })
    }
}
