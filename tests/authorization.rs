//! Users' authorization as each protocol asks for it, in-process: a tool needing provider
//! `demo`'s token, a caller that sent none and a user who has not authorized yet. Making the
//! link needs no provider (the whole flow against a real one is tests/oauth_flow.rs).

use crate::common;

use common::jwt::{HS_KEY, JWT_KEY_ID, bearer, hs256_auth};
use common::mcp::{post_mcp, rpc};
use common::*;
use oxp_lambda::{App, Config, Registry};
use serde_json::{Value, json};
use std::collections::HashMap;

fn app() -> App {
    let mut vars: HashMap<&str, &str> = HashMap::from(common::DEMO_OAUTH);
    vars.extend([
        ("OXP_AGENTCORE_USER_ARGUMENT", "oxp_user_id"),
        ("OXP_OAUTH_PENDING_SECS", "2"),
        ("OXP_RAP_DELIVERY_ATTEMPTS", "1"),
    ]);
    let mut config = Config::from_vars(false, vars).unwrap();
    config.auth = hs256_auth(true);
    let registry = Registry::builder()
        .tools(example_tools::tools())
        .tool(example_tools::profile_tool())
        .tool(oxp_lambda::Tool::builder("Test.Echo", "1.0.0").handler(
            |input: serde_json::Map<String, Value>, ctx: oxp_lambda::ToolContext| async move {
                Ok::<_, oxp_lambda::ToolError>(json!({"input": input, "user_id": ctx.user_id}))
            },
        ))
        .state(example_tools::UserInfoUrl(None))
        .build()
        .unwrap();
    build(
        App::builder(registry)
            .config(config)
            .secret(JWT_KEY_ID, HS_KEY),
    )
}

async fn oxp_call(app: &App, sub: &str) -> Reply {
    let body = json!({"request": {"tool_id": "Demo.Profile", "context": {"user_id": sub}}});
    let request = axum::http::Request::post("/tools/call")
        .header("content-type", "application/json")
        .header("authorization", bearer(sub))
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    send(app, request).await
}

#[tokio::test]
async fn oxp_answers_a_400_whose_missing_requirements_list_the_authorization_challenge() {
    let app = app();
    let reply = oxp_call(&app, "alice").await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    let challenges = reply.json["missing_requirements"]["authorization"]
        .as_array()
        .unwrap();
    assert_eq!(challenges.len(), 1);
    let c = &challenges[0];
    assert_eq!(c["id"], "demo");
    let url = c["url"].as_str().unwrap();
    assert!(
        url.starts_with("https://tools.example.com/oauth/demo/start?t="),
        "{url}"
    );
    assert!(
        c["check_url"]
            .as_str()
            .unwrap()
            .starts_with("https://tools.example.com/oauth/demo/check?t=")
    );
    // The published `ToolAuthorizationChallenge` has exactly these fields.
    assert_eq!(c.as_object().unwrap().len(), 3);
    assert!(
        reply.json["message"].as_str().unwrap().contains(url),
        "the message gives the link too"
    );
    assert!(
        !reply.text.contains("alice"),
        "nothing the caller sent comes back: {}",
        reply.text
    );

    // The check URL answers for the link's user, without credentials of its own.
    let path = c["check_url"]
        .as_str()
        .unwrap()
        .trim_start_matches("https://tools.example.com");
    let check = send(
        &app,
        axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(check.json, json!({"authorized": false}));
    // An altered link answers nothing about anyone.
    let altered = format!("{}x", path);
    let check = send(
        &app,
        axum::http::Request::get(&altered)
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(check.status, 404);
    let forged = axum::http::Request::get("/oauth/demo/start?t=forged")
        .body(axum::body::Body::empty())
        .unwrap();
    let start = tower::ServiceExt::oneshot(app.clone(), forged)
        .await
        .unwrap();
    assert_eq!(start.status(), 400);
    assert_eq!(start.headers()["content-type"], "text/html; charset=utf-8");
}

#[tokio::test]
async fn the_start_route_redirects_to_the_provider_with_pkce_and_binds_the_flow_to_the_browser() {
    let app = app();
    let reply = oxp_call(&app, "alice").await;
    let url = reply.json["missing_requirements"]["authorization"][0]["url"]
        .as_str()
        .unwrap();
    let path = url.trim_start_matches("https://tools.example.com");
    let request = axum::http::Request::get(path)
        .body(axum::body::Body::empty())
        .unwrap();
    let response = tower::ServiceExt::oneshot(app.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), 302);
    let location = response.headers()["location"].to_str().unwrap();
    assert!(
        location.starts_with("https://idp.example/authorize?"),
        "{location}"
    );
    for part in [
        "response_type=code",
        "client_id=oxp-demo",
        "code_challenge_method=S256",
        "state=",
        "redirect_uri=https%3A%2F%2Ftools.example.com%2Foauth%2Fdemo%2Fcallback",
    ] {
        assert!(location.contains(part), "{part} in {location}");
    }
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("oxp_oauth_demo="), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Lax", "Secure"] {
        assert!(cookie.contains(attribute), "{attribute} in {cookie}");
    }
}

#[tokio::test]
async fn forgetting_needs_the_servers_authentication() {
    let app = app();
    let anonymous = send(
        &app,
        axum::http::Request::post("/oauth/demo/forget")
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(anonymous.status, 401);
    let request = axum::http::Request::post("/oauth/demo/forget")
        .header("authorization", bearer("alice"))
        .body(axum::body::Body::empty())
        .unwrap();
    assert_eq!(send(&app, request).await.json, json!({"forgotten": true}));
    // With binding on, nobody forgets someone else's tokens.
    let request = axum::http::Request::post("/oauth/demo/forget")
        .header("authorization", bearer("alice"))
        .body(axum::body::Body::from(r#"{"user_id":"bob"}"#))
        .unwrap();
    assert_eq!(send(&app, request).await.status, 403);
}

fn modern(capabilities: Value) -> Value {
    rpc(
        3,
        "tools/call",
        json!({"name": "Demo_Profile", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities
        }}),
    )
}

async fn mcp(app: &App, message: &Value, modern: bool) -> Value {
    let auth = bearer("erin");
    let mut headers = vec![("authorization", auth.as_str())];
    if modern {
        headers.extend([
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "Demo_Profile"),
        ]);
    }
    let (status, _, text) = post_mcp(app, &message.to_string(), &headers).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn a_2026_07_28_client_that_declared_url_elicitation_is_asked_to_open_the_link() {
    // The revision's way (mrtr): an input_required result with a URL-mode elicitation; the
    // 2025-11-25 error -32042 is not part of it.
    let app = app();
    let answer = mcp(&app, &modern(json!({"elicitation": {"url": {}}})), true).await;
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let request = &result["inputRequests"]["authorize_demo"];
    assert_eq!(request["method"], "elicitation/create", "{answer}");
    let params = &request["params"];
    assert_eq!(params["mode"], "url");
    assert!(
        params["url"]
            .as_str()
            .unwrap()
            .starts_with("https://tools.example.com/oauth/demo/start?t=")
    );
    assert!(params["message"].as_str().unwrap().contains("demo"));
}

#[tokio::test]
async fn a_2025_11_25_client_whose_session_says_it_opens_links_gets_the_revisions_32042() {
    let app = app();
    let auth = bearer("erin");
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    let (status, headers, text) =
        post_mcp(&app, &init.to_string(), &[("authorization", auth.as_str())]).await;
    assert_eq!(status, 200, "{text}");
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let call = rpc(
        4,
        "tools/call",
        json!({"name": "Demo_Profile", "arguments": {}}),
    );
    let (status, _, text) = post_mcp(
        &app,
        &call.to_string(),
        &[
            ("authorization", auth.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-session-id", session.as_str()),
        ],
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let error = &answer["error"];
    assert_eq!(error["code"], -32042, "{answer}");
    let elicitation = &error["data"]["elicitations"][0];
    assert_eq!(elicitation["mode"], "url");
    assert!(!elicitation["elicitationId"].as_str().unwrap().is_empty());
    assert!(
        elicitation["url"]
            .as_str()
            .unwrap()
            .starts_with("https://tools.example.com/oauth/demo/start?t="),
        "{answer}"
    );
    // The same session presented by another caller opens nothing: the tool error.
    let other = bearer("frank");
    let (_, _, text) = post_mcp(
        &app,
        &call.to_string(),
        &[
            ("authorization", other.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-session-id", session.as_str()),
        ],
    )
    .await;
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
}

#[tokio::test]
async fn any_other_mcp_client_gets_a_tool_error_whose_text_gives_the_link() {
    let app = app();
    for (message, modern_revision) in [
        (modern(json!({})), true),
        (modern(json!({"elicitation": {"form": {}}})), true),
        (
            rpc(
                4,
                "tools/call",
                json!({"name": "Demo_Profile", "arguments": {}}),
            ),
            false,
        ),
    ] {
        let answer = mcp(&app, &message, modern_revision).await;
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("https://tools.example.com/oauth/demo/start?t="),
            "{text}"
        );
    }
}

#[tokio::test]
async fn bedrock_agents_get_a_failure_whose_text_gives_the_link_for_the_sessions_user() {
    let app = app();
    let event = json!({
        "messageVersion": "1.0",
        "agent": {"name": "a", "id": "A", "alias": "T", "version": "DRAFT"},
        "inputText": "who am I", "sessionId": "s-1", "actionGroup": "oxp-tools",
        "function": "Demo_Profile", "parameters": [],
        "sessionAttributes": {"user_id": "frank"}, "promptSessionAttributes": {}
    });
    let answer = app.handle_bedrock_agent(event.to_string().as_bytes()).await;
    let body = answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"]
        .as_str()
        .unwrap();
    assert!(
        body.contains("https://tools.example.com/oauth/demo/start?t="),
        "{answer}"
    );
    // Without a user in the session there is nobody to ask.
    let mut anonymous = event.clone();
    anonymous["sessionAttributes"] = json!({});
    let answer = app
        .handle_bedrock_agent(anonymous.to_string().as_bytes())
        .await;
    let body = answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"]
        .as_str()
        .unwrap();
    assert!(body.contains("user ID"), "{answer}");
}

#[tokio::test]
async fn no_tool_may_declare_the_sealing_key_or_a_client_secret() {
    for id in ["OAUTH_KEY", "oauth-demo-client-secret"] {
        let registry = Registry::builder()
            .tool(
                oxp_lambda::Tool::builder("Steal.Key", "1.0.0")
                    .secret(id)
                    .handler(
                        |_: oxp_lambda::NoInput, _ctx: oxp_lambda::ToolContext| async {
                            Ok::<_, oxp_lambda::ToolError>(json!(null))
                        },
                    ),
            )
            .build()
            .unwrap();
        let vars: HashMap<&str, &str> = HashMap::from([
            ("OXP_OAUTH_PROVIDERS", "demo"),
            ("OXP_OAUTH_DEMO_ISSUER", "https://idp.example"),
            ("OXP_OAUTH_DEMO_CLIENT_ID", "c"),
        ]);
        let config = Config::from_vars(false, vars).unwrap();
        let built = App::builder(registry).config(config).build().await;
        let error = built.map(|_| ()).unwrap_err().to_string();
        assert!(error.contains("tools never get it"), "{id}: {error}");
    }
}

#[tokio::test]
async fn the_agentcore_target_answers_a_tool_error_with_the_link_for_the_interceptors_user() {
    let app = app();
    let context = json!({"custom": {"bedrockAgentCoreToolName": "t___Demo_Profile"}}).to_string();
    let event = json!({"oxp_user_id": "hana"}).to_string();
    let answer = app
        .handle_agentcore(event.as_bytes(), Some(context.as_bytes()))
        .await;
    assert_eq!(answer["isError"], true, "{answer}");
    let text = answer["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("https://tools.example.com/oauth/demo/start?t="),
        "{text}"
    );
    // Without the interceptor's argument there is no user to ask.
    let answer = app.handle_agentcore(b"{}", Some(context.as_bytes())).await;
    assert!(
        answer["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("user ID"),
        "{answer}"
    );
    // The argument is taken out before the tool's input is checked: a tool with a closed
    // schema still accepts the call.
    let context = json!({"custom": {"bedrockAgentCoreToolName": "t___Calculator_Add"}}).to_string();
    let event = json!({"a": 1, "b": 2, "oxp_user_id": "hana"}).to_string();
    let answer = app
        .handle_agentcore(event.as_bytes(), Some(context.as_bytes()))
        .await;
    assert_eq!(answer["isError"], false, "{answer}");
}

#[tokio::test]
async fn a_rap_invocation_never_authorized_ends_in_an_error_result_after_the_pending_time() {
    let app = app();
    let receiver = common::receiver::Receiver::ok().await;
    let body = json!({"id": "inv-t", "group_id": "g", "operation": "Demo_Profile", "arguments": {},
                      "user_id": "ivy", "callback_url": receiver.url});
    let request = axum::http::Request::post("/invoke")
        .header("content-type", "application/json")
        .header("authorization", bearer("ivy"))
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    assert_eq!(send(&app, request).await.status, 200);
    let hits = receiver.wait_for(2).await;
    assert_eq!(hits[0].body["type"], "oauth", "{:?}", hits[0].body);
    assert!(
        hits[0].body["call_id"].is_null(),
        "echoed as the invocation had none"
    );
    let waited = hits[1].at.duration_since(hits[0].at);
    assert!(
        waited >= std::time::Duration::from_millis(1500),
        "{waited:?}"
    );
    let result = &hits[1].body;
    assert_eq!(result["type"], "tool_result");
    let text = result["text"].as_str().unwrap();
    assert!(text.contains(r#""kind":"authorization_timeout""#), "{text}");
    assert!(
        text.contains("was not completed within 2 seconds"),
        "{text}"
    );
}
