//! Event sources: `POST /webhooks/{source}` takes an event from an outside system, verifies it
//! came from there (an HMAC-SHA256 of the raw body with a server-held secret, in
//! `X-Hub-Signature-256: sha256=<hex>`, GitHub's convention), and hands it to every live
//! subscription of its topic through [`Events`], the public door every event source uses (a
//! program's own is written the same way: `tests/custom_source.rs`), which the call that
//! opened it keeps receiving as `subscription_event`s.
//!
//! | case | answer | delivered |
//! |---|---|---|
//! | signed, readable | 202 `{"accepted": n}` (n subscriptions took it) | to each, in order |
//! | the same signed body again within [`REPLAY_WINDOW`](crate::events::REPLAY_WINDOW) (a resend, or a replay with other headers) | 202 `{"accepted": 0}` | nothing more |
//! | a subscription's backlog is full | 429 with `Retry-After` (send it again: the others do not take it twice) | to the others |
//! | no signature, a wrong one, or no secret held for the source (or one shorter than [`MIN_KEY_BYTES`]) | 401 | nothing |
//! | over `OXP_WEBHOOK_MAX_BYTES` (at most what the store keeps, 256 KiB) | 413, before anything is marked | nothing |
//! | signed but not the source's shape | 400 | nothing |
//! | unknown source | 404 | nothing |
//! | subscriptions off (no durable state) | 503 | nothing |
//!
//! Two kinds of source: `demo`, whose body is `{"topic": string, "event": any JSON}`, and
//! `github`, whose events (`X-GitHub-Event`) go to the topics `<owner>/<repo>` and
//! `<owner>/<repo>/<event>` of their repository.
//!
//! An event is known by what its signature covers: the digest of its source and its body, never
//! a header (GitHub's `X-GitHub-Delivery` is not signed). A body taken once is not taken again
//! for [`REPLAY_WINDOW`](crate::events::REPLAY_WINDOW) from any subscription's point of view, and a subscription that
//! took it among its last 16 events does not take it again whenever it comes.

mod source;

pub use source::{Kind, Source, WebhooksConfig};

use crate::events::{Events, PublishError};
use crate::server::{ServerError, json, only};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::post;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use oxp_lambda_core::idempotency::lower_hex;
use oxp_lambda_core::secrets::Secrets;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The shortest signing key a source may have (an empty key signs nothing).
pub(crate) const MIN_KEY_BYTES: usize = 16;

/// What an event is known by: its source and the digest of its signed body.
fn event_digest(source: &str, body: &[u8]) -> String {
    let digest = Sha256::new()
        .chain_update(source.as_bytes())
        .chain_update([0])
        .chain_update(body)
        .finalize();
    lower_hex(&digest)
}

/// The event sources and what they need.
pub(crate) struct Webhooks {
    sources: Vec<Source>,
    secrets: Secrets,
    events: Option<Events>,
    max_bytes: usize,
}

impl Webhooks {
    pub(crate) fn new(config: &WebhooksConfig, secrets: Secrets, events: Option<Events>) -> Self {
        Self {
            sources: config.sources.clone(),
            secrets,
            events,
            max_bytes: config.max_bytes,
        }
    }
}

/// `POST /webhooks/{source}`.
pub(crate) fn router(webhooks: Arc<Webhooks>) -> Router {
    Router::new()
        .route(
            "/webhooks/{source}",
            only(post(receive), "POST", plumbing_refused),
        )
        .with_state(webhooks)
}

/// The paths the event sources are served under, whose refusals by the plumbing in front of
/// routing are answered in their shape ([`plumbing_refused`]).
pub(crate) const PATHS: [&str; 1] = ["/webhooks"];

/// What the plumbing refuses on `/webhooks/...` (a browser's request, another method, a body
/// that did not arrive), as the routes answer a refused event: `{"error": message}`.
pub(crate) fn plumbing_refused(refusal: &ServerError) -> Response {
    answer(
        refusal.status(),
        json!({"error": refusal.developer_message()}),
    )
}

/// An answer with `status` and `{"error": message}` (or the body given).
fn answer(status: StatusCode, body: serde_json::Value) -> Response {
    json(status, &body)
}

fn refused(status: StatusCode, why: &'static str, source: &str) -> Response {
    // The source's id is the route's, bounded and plain: never the body.
    tracing::info!(target: "oxp::webhooks", source, outcome = status.as_u16(), reason = why, "event refused");
    answer(status, json!({"error": why}))
}

async fn receive(
    State(webhooks): State<Arc<Webhooks>>,
    Path(source): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(source) = webhooks.sources.iter().find(|s| s.id == source) else {
        return refused(StatusCode::NOT_FOUND, "no such event source", "");
    };
    let id = source.id.as_str();
    let Ok(body) = axum::body::to_bytes(body, webhooks.max_bytes).await else {
        return refused(StatusCode::PAYLOAD_TOO_LARGE, "the event is too large", id);
    };
    match verify(&webhooks.secrets, source, &headers, &body).await {
        Ok(()) => {}
        Err(why) => return refused(StatusCode::UNAUTHORIZED, why, id),
    }
    let Some(events) = &webhooks.events else {
        return refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "subscriptions are off: the server keeps no durable state (OXP_STATE)",
            id,
        );
    };
    let topics = match source.kind.events(&headers, &body) {
        Ok(topics) => topics,
        Err(why) => return refused(StatusCode::BAD_REQUEST, why, id),
    };
    if topics.is_empty() {
        // Nothing could subscribe to it (GitHub's organization `ping`): taken, no mark spent.
        tracing::info!(target: "oxp::webhooks", source = id, accepted = 0, "event for no topic received");
        return answer(StatusCode::ACCEPTED, json!({"accepted": 0}));
    }
    // Known by what the signature covers: a resend, or a replay with fresh headers, is the same
    // event. Taken once within the window (a subscription opened since gets no old event), and
    // each subscription takes it once whenever it comes.
    let published = match events.publish(id, &event_digest(id, &body), &topics).await {
        Ok(published) => published,
        Err(PublishError::Invalid(why)) => return refused(StatusCode::BAD_REQUEST, why, id),
        Err(PublishError::SourceFull) => {
            let mut response = refused(
                StatusCode::TOO_MANY_REQUESTS,
                "the source sent too many events lately; send the event again later",
                id,
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("3600"));
            return response;
        }
        Err(_) => {
            return refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "the event could not be kept; send it again",
                id,
            );
        }
    };
    let (accepted, full) = (published.accepted, published.full);
    tracing::info!(target: "oxp::webhooks", source = id, accepted, full, replayed = published.replayed, "event received");
    if full > 0 {
        let mut response = answer(
            StatusCode::TOO_MANY_REQUESTS,
            json!({"error": "a subscription holds too many undelivered events; send the event again later", "accepted": accepted}),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
        return response;
    }
    answer(StatusCode::ACCEPTED, json!({"accepted": accepted}))
}

/// Checks `X-Hub-Signature-256` against the HMAC-SHA256 of `body` under the source's secret,
/// in constant time.
async fn verify(
    secrets: &Secrets,
    source: &Source,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<(), &'static str> {
    let signature = headers
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("sha256="))
        .and_then(|v| hex::decode(v.trim()).ok())
        .ok_or("no signature (X-Hub-Signature-256: sha256=<hex>)")?;
    let secret = match secrets.get(&source.secret_id).await {
        Ok(secret) => secret,
        Err(e) => {
            // For operators: the secret is missing or its source failed. Never its value.
            tracing::error!(target: "oxp::webhooks", source = source.id.as_str(), secret = source.secret_id.as_str(), error = %e.developer_message(), "no secret to verify events with");
            return Err("the event's signature cannot be checked");
        }
    };
    // An empty or short key (from Secrets Manager: a variable is checked at start) signs
    // nothing: whoever knows it is empty can sign.
    if secret.expose().len() < MIN_KEY_BYTES {
        tracing::error!(target: "oxp::webhooks", source = source.id.as_str(), secret = source.secret_id.as_str(), least = MIN_KEY_BYTES, "the source's signing key is too short: no event is taken");
        return Err("the event's signature cannot be checked");
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes())
        .map_err(|_| "the event's signature cannot be checked")?;
    mac.update(body);
    mac.verify_slice(&signature)
        .map_err(|_| "the signature does not match")
}

#[cfg(test)]
mod tests;
