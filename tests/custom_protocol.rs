//! A protocol written outside the crate plugs in as a value (`AppBuilder::protocol`), built
//! from the public API only: its routes behind the configured authentication, its calls
//! through the one invoker (validation, requirements, the log line), beside the built-in
//! protocols.

mod common;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use common::*;
use http::StatusCode;
use oxp_lambda::config::AuthConfig;
use oxp_lambda::invoke::{Principal, Target};
use oxp_lambda::{Assembly, Call, Contribution, Invoker, Protocol, StartError};
use serde_json::{Value, json};
use std::sync::Arc;

/// `POST /echo/{tool}` with the input as the body; answers `{"value"}` or `{"error"}`.
struct Echo;

async fn echo(
    State(invoker): State<Arc<Invoker>>,
    Path(tool): Path<String>,
    request: Request,
) -> Response {
    let principal = request.extensions().get::<Principal>().cloned();
    let Ok(body) = axum::body::to_bytes(request.into_body(), 64 * 1024).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut call = Call::new("echo", Target::Id(tool), input);
    call.principal = principal.unwrap_or_default();
    let answer = match invoker.invoke(call).await {
        Ok(outcome) => match outcome.result {
            Ok(output) => json!({"value": output.value}),
            Err(e) => json!({"error": e.message}),
        },
        Err(rejection) => json!({"error": rejection.user_message()}),
    };
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        answer.to_string(),
    )
        .into_response()
}

impl Protocol for Echo {
    fn build(&self, assembly: &Assembly<'_>) -> Result<Contribution, StartError> {
        let routes = Router::new()
            .route("/echo/{tool}", axum::routing::post(echo))
            .with_state(assembly.invoker().clone());
        let routes = assembly.authenticate(routes, |_: &Request| {
            StatusCode::UNAUTHORIZED.into_response()
        });
        Ok(Contribution::routes(routes))
    }
}

fn app(auth: AuthConfig) -> App {
    let mut config = test_config();
    config.auth = auth;
    build(
        App::builder(common::example_tools::registry().unwrap())
            .config(config)
            .secret("JWT_KEY", "a-signing-key-of-at-least-32-bytes!!")
            .protocol(Echo),
    )
}

#[tokio::test]
async fn a_protocol_of_your_own_calls_tools_through_the_one_invoker() {
    let app = app(AuthConfig::None { explicit: true });
    let reply = post(
        &app,
        "/echo/Calculator.Add",
        json!({"a": 2, "b": 3}).to_string(),
    )
    .await;
    assert_eq!(reply.json["value"].as_f64(), Some(5.0), "{}", reply.text);
    let reply = post(&app, "/echo/Calculator.Add", json!({"a": "x"}).to_string()).await;
    assert_eq!(
        reply.json["error"], "Some input parameters are invalid",
        "validated"
    );
    // The built-in protocols are still served beside it.
    let reply = call_oxp(&app).await;
    assert_eq!(reply.status, 200);
}

async fn call_oxp(app: &App) -> Reply {
    common::call(
        app,
        json!({"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 1}}}),
    )
    .await
}

#[tokio::test]
async fn its_routes_are_behind_the_configured_authentication() {
    let jwt = oxp_lambda::config::JwtConfig {
        keys: oxp_lambda::config::JwtKeys::Hs256 {
            secret_id: "JWT_KEY".into(),
        },
        issuer: None,
        audience: None,
        client_id: None,
        token_use: None,
        leeway_secs: 5,
        bind_user_id: false,
    };
    let app = app(AuthConfig::Jwt(jwt));
    let request = axum::http::Request::post("/echo/Calculator.Add")
        .header("content-type", "application/json")
        .body(axum::body::Body::from("{}"))
        .unwrap();
    let response = tower::ServiceExt::oneshot(app.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}
