//! The flow's routes (docs/authorization.md):
//!
//! | route | answer |
//! |---|---|
//! | `GET /oauth/{provider}/start?t=` | 302 to the provider, with PKCE and a sealed `state`; a cookie binds the flow to this browser |
//! | `GET /oauth/{provider}/callback` | the provider's redirect: `state` checked, the code exchanged, the token stored; a short page |
//! | `GET /oauth/{provider}/check?t=` | `{"authorized": bool}` for the link's user |
//! | `POST /oauth/{provider}/forget` | behind the server's authentication: forgets the caller's tokens |
//!
//! The pages say nothing the request carried, and no token or code is ever logged.

use super::{Broker, Link, flow, seal, unix};
use crate::server::json;
use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use oxp_lambda_core::principal::Principal;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// What the provider hands back as `state` (sealed for the provider).
#[derive(Debug, Serialize, Deserialize)]
struct FlowState {
    link: Link,
    /// The one-time nonce, also in this browser's cookie.
    n: String,
    /// The PKCE verifier.
    v: String,
}

/// The routes that need no authentication (a browser opens them) and the forget route, which
/// `guard` puts behind the server's.
pub(crate) fn router(broker: Arc<Broker>, guard: impl FnOnce(Router) -> Router) -> Router {
    let open = Router::new()
        .route("/oauth/{provider}/start", get(start))
        .route("/oauth/{provider}/callback", get(callback))
        .route("/oauth/{provider}/check", get(check))
        .with_state(broker.clone());
    let forget = Router::new()
        .route("/oauth/{provider}/forget", post(forget))
        .with_state(broker);
    open.merge(guard(forget))
}

/// The link token `t` of a query.
fn link_token(query: Option<String>) -> Option<String> {
    param(query.as_deref(), "t")
}

/// The first value of `name` in `query` (bounded: queries here are short).
fn param(query: Option<&str>, name: &str) -> Option<String> {
    let query = query.filter(|q| q.len() <= 8192)?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn cookie_name(provider: &str) -> String {
    format!("oxp_oauth_{provider}")
}

fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>{title}</title><h1>{title}</h1><p>{text}</p>"
    );
    let mut response = (status, Html(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'none'"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}

fn expired() -> Response {
    page(
        StatusCode::BAD_REQUEST,
        "Link not valid",
        "This authorization link is not valid or has expired. Ask the agent to try the tool again for a new one.",
    )
}

async fn start(
    State(broker): State<Arc<Broker>>,
    Path(provider): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let (Some(p), Some(t)) = (broker.provider(&provider), link_token(query)) else {
        return expired();
    };
    let Some(link) = broker.open_link(&provider, &t).await else {
        return expired();
    };
    if !broker.may_start(&link) {
        tracing::warn!(target: "oxp::oauth", provider = %provider, "start refused: the link is started too often");
        return page(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many attempts",
            "This link was opened too often. Wait a minute and open it again.",
        );
    }
    let (Ok(keys), Ok(http)) = (broker.keys().await, broker.http().await) else {
        return unavailable();
    };
    let endpoints = match p.endpoints(http).await {
        Ok(e) => e,
        Err(flow::Failed::Refused(why) | flow::Failed::Unavailable(why)) => {
            tracing::warn!(target: "oxp::oauth", provider = %provider, error = %why, "provider discovery failed");
            return unavailable();
        }
    };
    let nonce = seal::random_token();
    let verifier = seal::random_token();
    let scopes = link.s.clone();
    let state = FlowState {
        link,
        n: nonce.clone(),
        v: verifier.clone(),
    };
    let plain = serde_json::to_vec(&state).expect("state serializes");
    let sealed = keys.seal_text(&format!("state:{provider}"), &plain);
    let redirect = broker.redirect_url(&provider);
    let Ok(url) = p.authorize_url(endpoints, &redirect, sealed, &verifier, &scopes) else {
        return unavailable();
    };
    let secure = if broker.public_url.starts_with("https:") {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{}={nonce}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        cookie_name(&provider),
        broker.link_ttl.as_secs()
    );
    let mut response = StatusCode::FOUND.into_response();
    let headers = response.headers_mut();
    if let (Ok(location), Ok(cookie)) =
        (HeaderValue::from_str(&url), HeaderValue::from_str(&cookie))
    {
        headers.insert(header::LOCATION, location);
        headers.insert(header::SET_COOKIE, cookie);
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
        response
    } else {
        unavailable()
    }
}

/// How a callback that got a code ended, when not with the user's token stored.
enum Ended {
    /// The provider refused the code (used before, or expired).
    Refused(String),
    /// The link's flow completed before.
    Replayed,
    /// Someone other than the link's user consented.
    AnotherAccount,
    /// The provider, the secret source or the vault did not answer.
    Failed(String),
}

fn unavailable() -> Response {
    page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again later",
        "The authorization could not be started or finished right now. Try again in a moment.",
    )
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

async fn callback(
    State(broker): State<Arc<Broker>>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let query = query.as_deref();
    let (Some(p), Some(state)) = (broker.provider(&provider), param(query, "state")) else {
        return expired();
    };
    let Ok(keys) = broker.keys().await else {
        return unavailable();
    };
    let opened = keys
        .open_text(&format!("state:{provider}"), &state)
        .and_then(|plain| serde_json::from_slice::<FlowState>(&plain).ok())
        .filter(|s| s.link.p == provider && s.link.e > unix(SystemTime::now()));
    let Some(state) = opened else {
        tracing::warn!(target: "oxp::oauth", provider = %provider, "callback refused: state forged, altered or expired");
        return expired();
    };
    // The flow must end in the browser that started it: otherwise someone could have a user
    // finish a flow started for another account.
    if cookie(&headers, &cookie_name(&provider)).as_deref() != Some(state.n.as_str()) {
        tracing::warn!(target: "oxp::oauth", provider = %provider, "callback refused: not the browser that started the flow");
        return expired();
    }
    let user = state.link.u.clone();
    let code = param(query, "code").filter(|_| param(query, "error").is_none());
    let Some(code) = code else {
        // Denied at the provider: waiting async invocations end with an error result now.
        // Nothing is spent: a denial leaves no record (one per round would let a link holder
        // fill the vault).
        broker.completed(&provider, &user, false).await;
        tracing::info!(target: "oxp::oauth", provider = %provider, "authorization not granted");
        return page(
            StatusCode::OK,
            "Authorization not granted",
            "The access was not granted. You may close this page and return to the agent.",
        );
    };
    let completed = complete(&broker, p, &provider, &user, &code, &state).await;
    if let Err(ended) = completed {
        return not_completed(&broker, &provider, &user, ended).await;
    }
    tracing::info!(target: "oxp::oauth", provider = %provider, "authorization completed");
    broker.completed(&provider, &user, true).await;
    let mut response = page(
        StatusCode::OK,
        "Authorized",
        "You may close this page and return to the agent.",
    );
    if let Ok(clear) = HeaderValue::from_str(&format!(
        "{}=; Path=/; Max-Age=0",
        cookie_name(&p.config.id)
    )) {
        response.headers_mut().insert(header::SET_COOKIE, clear);
    }
    response
}

/// The flow of `user`'s link with `provider` (`p`) completed with `code`: the code exchanged,
/// the consenting account checked to be the link's user, the link spent, the grant kept.
async fn complete(
    broker: &Broker,
    p: &super::Provider,
    provider: &str,
    user: &str,
    code: &str,
    state: &FlowState,
) -> Result<(), Ended> {
    let secret = broker
        .client_secret(p)
        .await
        .map_err(|e| Ended::Failed(e.0))?;
    let http = broker.http().await.map_err(|e| Ended::Failed(e.0))?;
    let redirect = broker.redirect_url(provider);
    let granted = p
        .exchange(http, secret.expose(), &redirect, code, &state.v)
        .await
        .map_err(|e| match e {
            // A code used before (this callback replayed) or expired.
            flow::Failed::Refused(code) => Ended::Refused(code),
            flow::Failed::Unavailable(why) => Ended::Failed(why),
        })?;
    // The person who consented must be the one the link was made for: a link forwarded to
    // a colleague would otherwise give the user the colleague's account.
    if !p
        .is_user(http, &granted.access, user)
        .await
        .map_err(|e| match e {
            flow::Failed::Refused(why) | flow::Failed::Unavailable(why) => Ended::Failed(why),
        })?
    {
        return Err(Ended::AnotherAccount);
    }
    // Spent only now, once per link: the flow completes once.
    let until = SystemTime::now() + broker.link_ttl + Duration::from_secs(60);
    match broker
        .store
        .spend(&Broker::link_key(&state.link), until)
        .await
    {
        Ok(true) => {}
        Ok(false) => return Err(Ended::Replayed),
        Err(e) => return Err(Ended::Failed(e.0)),
    }
    let key = Broker::vault_key(provider, user);
    broker
        .store_record(&key, granted, &p.all_scopes(&state.link.s))
        .await
        .map_err(|e| Ended::Failed(e.0))
}

/// The page of a callback whose flow `ended` without completing (a failure also ends the
/// waiting invocations with an error result).
async fn not_completed(broker: &Broker, provider: &str, user: &str, ended: Ended) -> Response {
    match ended {
        Ended::Refused(code) => {
            // A replayed or stale callback: nothing changes for anyone.
            tracing::warn!(target: "oxp::oauth", provider = %provider, error = %format!("the provider refused the code: {code}"), "callback refused");
            expired()
        }
        Ended::Replayed => {
            tracing::warn!(target: "oxp::oauth", provider = %provider, "callback refused: the link was completed before");
            expired()
        }
        Ended::AnotherAccount => {
            tracing::warn!(target: "oxp::oauth", provider = %provider, "callback refused: another account than the link's user consented");
            page(
                StatusCode::FORBIDDEN,
                "Another account",
                "This link was made for someone else, or you signed in to the provider with another account than your own. Nothing was linked. Ask the agent for a link of your own.",
            )
        }
        Ended::Failed(why) => {
            tracing::warn!(target: "oxp::oauth", provider = %provider, error = %why, "authorization not completed");
            broker.completed(provider, user, false).await;
            page(
                StatusCode::BAD_GATEWAY,
                "Authorization failed",
                "The provider's answer could not be used. Ask the agent to try the tool again.",
            )
        }
    }
}

async fn check(
    State(broker): State<Arc<Broker>>,
    Path(provider): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(t) = link_token(query) else {
        return not_valid();
    };
    let Some(link) = broker.open_link(&provider, &t).await else {
        return not_valid();
    };
    match broker.holds(&provider, &link.u, &link.s).await {
        Ok(authorized) => json(StatusCode::OK, &json!({ "authorized": authorized })),
        Err(e) => {
            tracing::warn!(target: "oxp::oauth", provider = %provider, error = %e, "vault unavailable");
            json(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"error": "unavailable"}),
            )
        }
    }
}

fn not_valid() -> Response {
    json(
        StatusCode::NOT_FOUND,
        &json!({"error": "this authorization link is not valid or has expired"}),
    )
}

#[derive(Deserialize, Default)]
struct Forget {
    user_id: Option<String>,
}

async fn forget(
    State(broker): State<Arc<Broker>>,
    Path(provider): Path<String>,
    principal: Option<axum::Extension<Principal>>,
    body: axum::body::Bytes,
) -> Response {
    let principal = principal.map(|p| p.0).unwrap_or_default();
    let asked: Forget = if body.is_empty() {
        Forget::default()
    } else {
        match crate::server::object(&body) {
            Some(f) => f,
            None => {
                return json(
                    StatusCode::BAD_REQUEST,
                    &json!({"error": "the body must be {\"user_id\": string}"}),
                );
            }
        }
    };
    let Ok(bound) = principal.bind_user_id(asked.user_id) else {
        return json(
            StatusCode::FORBIDDEN,
            &json!({"error": "not this caller's user"}),
        );
    };
    let Some(user) = principal.token_owner(bound.as_deref()).map(str::to_owned) else {
        return json(
            StatusCode::BAD_REQUEST,
            &json!({"error": "name the user (user_id)"}),
        );
    };
    if broker.provider(&provider).is_none() {
        return not_valid();
    }
    match broker.forget(&provider, &user).await {
        Ok(()) => json(StatusCode::OK, &json!({"forgotten": true})),
        Err(e) => {
            tracing::warn!(target: "oxp::oauth", provider = %provider, error = %e, "vault unavailable");
            json(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"error": "unavailable"}),
            )
        }
    }
}

#[cfg(test)]
#[path = "routes_tests.rs"]
mod tests;
