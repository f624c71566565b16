//! `OXP_AUTH=apigateway`: the caller is who API Gateway's authorizer says, and only there.

use crate::common;

use common::auth::*;
use oxp_lambda::config::AuthConfig;
use serde_json::{Value, json};

async fn replay_with_authorizer(authorizer: Option<Value>, body: &Value) -> (u16, Value) {
    use lambda_http::request::LambdaRequest;
    use lambda_http::{Adapter, Context, LambdaEvent, Service};
    let mut event: Value = serde_json::from_str(
        &std::fs::read_to_string("events/apigw-http-call-success-stage.json").unwrap(),
    )
    .unwrap();
    event["body"] = Value::String(body.to_string());
    if let Some(authorizer) = authorizer {
        event["requestContext"]["authorizer"] = authorizer;
    }
    let request: LambdaRequest = serde_json::from_value(event).unwrap();
    let app = app(AuthConfig::ApiGateway { bind_user_id: true });
    let response = Adapter::from(app)
        .call(LambdaEvent::new(request, Context::default()))
        .await
        .unwrap();
    let response = serde_json::to_value(response).unwrap();
    let body = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
    (response["statusCode"].as_u64().unwrap() as u16, body)
}

#[tokio::test]
async fn apigateway_mode_trusts_the_authorizer_claims() {
    let whoami = json!({"request": {"tool_id": "Auth.WhoAmI"}});
    let jwt =
        json!({"jwt": {"claims": {"sub": "alice", "iss": "https://issuer.test/"}, "scopes": null}});
    let (status, body) = replay_with_authorizer(Some(jwt.clone()), &whoami).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["value"]["user_id"], "alice");
    let lambda_authorizer = json!({"lambda": {"sub": "bob"}});
    let (_, body) = replay_with_authorizer(Some(lambda_authorizer), &whoami).await;
    assert_eq!(body["result"]["value"]["user_id"], "bob");
    let impostor =
        json!({"request": {"tool_id": "Auth.WhoAmI", "context": {"user_id": "mallory"}}});
    let (status, _) = replay_with_authorizer(Some(jwt), &impostor).await;
    assert_eq!(status, 400);
    // A client-credentials token (no `sub`) is its client; one that names no one is refused.
    let client = json!({"jwt": {"claims": {"client_id": "svc-7"}, "scopes": null}});
    let (_, body) = replay_with_authorizer(Some(client), &whoami).await;
    assert_eq!(body["result"]["value"]["user_id"], "client:svc-7", "{body}");
    let no_one = json!({"jwt": {"claims": {"iss": "https://issuer.test/"}, "scopes": null}});
    let (status, _) = replay_with_authorizer(Some(no_one), &whoami).await;
    assert_eq!(status, 401, "claims that name no caller: not authenticated");
    let (status, body) = replay_with_authorizer(None, &whoami).await;
    assert_eq!(status, 401, "no authorizer context: not authenticated");
    assert_eq!(body["message"], "Authentication failed");
}

#[tokio::test]
async fn apigateway_mode_rejects_requests_outside_api_gateway() {
    let app = app(AuthConfig::ApiGateway {
        bind_user_id: false,
    });
    assert_rejected(&list_with(&app, None).await, "");
}
