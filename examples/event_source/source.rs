//! An event source written outside `oxp-lambda`, from its public API only: operators (or their
//! systems) post events to `POST /events/{topic}`, authenticated like every other route
//! (`OXP_AUTH`), and every live subscription of that topic of source `ops` takes each one, in
//! order, delivered by the protocol that opened it (RAP's `subscription_event`). `Ops.Watch`
//! ([`watch_tool`]) is a tool that opens such a subscription.
//!
//! An event is known by the caller and its `Event-Id` header: a resend of the same id is taken
//! once (202 `{"accepted": 0}`), and one caller cannot spend another's ids. Everything the
//! built-in webhooks do with subscriptions goes through the same door,
//! [`Assembly::events`]: the state store, the runner and the delivery are the server's.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use oxp_lambda::config::{Config, ConfigError, Env};
use oxp_lambda::protocol::{
    Assembly, CallContext, Contribution, Events, MAX_EVENT_ID_CHARS, Protocol, PublishError,
    Refused,
};
use oxp_lambda::{Subscribe, Tool, ToolContext, ToolError};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The source's name, as subscriptions name it.
pub const SOURCE: &str = "ops";

/// The event source: a value the app takes (`App::builder(registry).protocol(OpsEvents)`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpsEvents;

impl Protocol for OpsEvents {
    type Settings = ();

    fn name(&self) -> &'static str {
        "ops-events"
    }

    fn settings(&self, _env: &Env<'_>, _server: &Config) -> Result<(), ConfigError> {
        Ok(())
    }

    fn build(&self, _: (), assembly: &Assembly<'_>) -> Result<Contribution, String> {
        // No durable state, no subscriptions: the route says so rather than dropping events.
        let routes = Router::new()
            .route("/events/{topic}", post(receive))
            .with_state(assembly.events());
        let routes = assembly.json_only(routes, || {
            answer(StatusCode::UNSUPPORTED_MEDIA_TYPE, "the body must be JSON")
        });
        Ok(Contribution::routes(assembly.authenticate(
            routes,
            |_, refused| match refused {
                Refused::Unauthenticated => {
                    answer(StatusCode::UNAUTHORIZED, "send valid credentials")
                }
                _ => answer(StatusCode::FORBIDDEN, "the token lacks a required scope"),
            },
        )))
    }
}

/// A JSON answer.
fn json_answer(status: StatusCode, body: serde_json::Value) -> Response {
    let headers = [(axum::http::header::CONTENT_TYPE, "application/json")];
    (status, headers, body.to_string()).into_response()
}

fn answer(status: StatusCode, error: &str) -> Response {
    json_answer(status, json!({"error": error}))
}

async fn receive(
    State(events): State<Option<Events>>,
    context: CallContext,
    Path(topic): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(events) = events else {
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "no durable state: no subscriptions",
        );
    };
    let Some(event_id) = headers
        .get("event-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= MAX_EVENT_ID_CHARS)
    else {
        return answer(
            StatusCode::BAD_REQUEST,
            "an Event-Id header names the event",
        );
    };
    if serde_json::from_slice::<serde_json::Value>(&body).is_err() {
        return answer(StatusCode::BAD_REQUEST, "the event must be JSON");
    }
    // The caller's own id space: hashed with its subject, so ids never collide across callers.
    let caller = context.principal.subject.as_deref().unwrap_or_default();
    let id = hex(&Sha256::new()
        .chain_update(caller.as_bytes())
        .chain_update([0])
        .chain_update(event_id.as_bytes())
        .finalize());
    let text = String::from_utf8_lossy(&body);
    match events
        .publish(SOURCE, &id, &[(topic.as_str(), text.as_ref())])
        .await
    {
        Ok(published) if published.full > 0 => answer(
            StatusCode::TOO_MANY_REQUESTS,
            "a subscription holds too many undelivered events; send the event again later",
        ),
        Ok(published) => json_answer(
            StatusCode::ACCEPTED,
            json!({"accepted": published.accepted}),
        ),
        Err(PublishError::Invalid(why)) => answer(StatusCode::BAD_REQUEST, why),
        Err(_) => answer(
            StatusCode::SERVICE_UNAVAILABLE,
            "the event could not be kept; send it again",
        ),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `Ops.Watch {topic}`: subscribes the call to `topic` of this source; its events follow the
/// answer.
pub fn watch_tool() -> Tool {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Input {
        /// The topic to receive events of.
        #[schemars(length(min = 1, max = 128))]
        topic: String,
    }
    Tool::builder("Ops.Watch", "1.0.0")
        .description("Subscribes to a topic of the operators' events; its events follow.")
        .read_only()
        .handler(|input: Input, ctx: ToolContext| async move {
            let subscribe = Subscribe {
                source: SOURCE.into(),
                topic: input.topic,
                max_events: None,
            };
            let subscription = ctx.subscribe(subscribe).await?;
            Ok::<_, ToolError>(json!({"subscription": subscription.id}))
        })
}
