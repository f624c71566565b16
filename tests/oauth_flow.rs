//! Users' authorization run by the server, against a real OpenID Connect provider (npm
//! `oidc-provider`, tests/oauth_provider.mjs, on loopback with Node 22 from `node_modules`):
//! `Demo.Profile` needs the user's `demo` token; each protocol asks its own way, a test
//! "browser" (following redirects, keeping cookies) completes the flow, and the calls then
//! succeed with the token the server stored; refresh, refusals and replays too. Callers
//! authenticate with HS256 JWTs, so the token's owner is the caller's `sub`.

use crate::common;

use common::jwt::{HS_KEY, JWT_KEY_ID, bearer, hs256_auth};
use common::receiver::Receiver;
use oxp_lambda::{App, Config, Registry};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

/// A browser: follows redirects by hand (so each hop is visible), keeps cookies per host.
#[derive(Clone)]
struct Browser {
    http: reqwest::Client,
    cookies: HashMap<String, String>,
}

/// Where one request of a [`Browser`] led.
enum Hop {
    /// A redirect to this URL.
    To(String),
    /// A page: its status and body.
    Page(u16, String),
}

impl Browser {
    fn new() -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: HashMap::new(),
        }
    }

    /// Opens `url` as a user would, as `account` at the provider; the last page's status and
    /// body, and every URL visited.
    async fn open(&mut self, url: &str, account: &str) -> (u16, String, Vec<String>) {
        let mut url = url.to_owned();
        let mut visited = Vec::new();
        for _ in 0..12 {
            url = self.as_account(url, account);
            visited.push(url.clone());
            match self.hop(&url).await {
                Hop::To(next) => url = next,
                Hop::Page(status, page) => return (status, page, visited),
            }
        }
        panic!("too many redirects: {visited:?}");
    }

    /// Follows `url` as [`Self::open`] does up to the first URL holding `before`, which it
    /// returns unvisited.
    async fn open_until(&mut self, url: &str, account: &str, before: &str) -> String {
        let mut url = url.to_owned();
        for _ in 0..12 {
            url = self.as_account(url, account);
            match self.hop(&url).await {
                Hop::To(next) if next.contains(before) => return next,
                Hop::To(next) => url = next,
                Hop::Page(status, page) => panic!("never reached {before}: {status} {page}"),
            }
        }
        panic!("too many redirects");
    }

    /// At the provider's authorization endpoint the user says who they are.
    fn as_account(&self, mut url: String, account: &str) -> String {
        if url.contains("/auth?") && !url.contains("login_hint") {
            url.push_str(&format!("&login_hint={account}"));
        }
        url
    }

    /// One request of `url`, its cookies kept.
    async fn hop(&mut self, url: &str) -> Hop {
        let cookie: Vec<String> = self
            .cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let answer = self
            .http
            .get(url)
            .header("cookie", cookie.join("; "))
            .send()
            .await
            .unwrap();
        for set in answer.headers().get_all("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap();
            if let Some((k, v)) = pair.split_once('=') {
                self.cookies.insert(k.trim().into(), v.trim().into());
            }
        }
        let status = answer.status().as_u16();
        let location = answer
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_owned());
        match location {
            Some(next) if (300..400).contains(&status) => {
                let next = reqwest::Url::parse(url).unwrap().join(&next).unwrap();
                Hop::To(next.to_string())
            }
            _ => Hop::Page(status, answer.text().await.unwrap()),
        }
    }
}

struct Setup {
    base: String,
    issuer: String,
    _provider: common::Process,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn setup() -> Setup {
    let node = std::env::var("OXP_TEST_NODE").expect("OXP_TEST_NODE: run through scripts/test");
    let dir = env!("CARGO_MANIFEST_DIR");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let provider_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let issuer = format!("http://127.0.0.1:{provider_port}");
    let mut provider = Command::new(node);
    provider
        .arg(format!("{dir}/tests/oauth_provider.mjs"))
        .args([provider_port.to_string(), base.clone()])
        .current_dir(dir);
    let (provider, line) = common::Process::start("oidc-provider", provider);
    assert!(line.contains("listening"), "{line}");
    let vars: HashMap<&str, String> = HashMap::from([
        ("OXP_OAUTH_PROVIDERS", "demo".into()),
        ("OXP_OAUTH_DEMO_ISSUER", issuer.clone()),
        ("OXP_OAUTH_DEMO_CLIENT_ID", "oxp-demo".into()),
        ("OXP_OAUTH_DEMO_SCOPES", "openid offline_access".into()),
        ("OXP_PUBLIC_URL", base.clone()),
        ("OXP_OAUTH_PENDING_SECS", "60".into()),
        ("OXP_RAP_DELIVERY_ATTEMPTS", "1".into()),
    ]);
    let mut config = Config::from_vars(false, vars).unwrap();
    config.auth = hs256_auth(false);
    let registry = Registry::builder()
        .tools(common::example_tools::tools())
        .tool(common::example_tools::profile_tool())
        .state(common::example_tools::UserInfoUrl(Some(format!(
            "{issuer}/me"
        ))))
        .build()
        .unwrap();
    let app: App = common::build(
        App::builder(registry)
            .config(config)
            .secret(JWT_KEY_ID, HS_KEY)
            .secret("OAUTH_DEMO_CLIENT_SECRET", "oxp-demo-secret"),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.serve(listener, async move {
        let _ = stopped.await;
    }));
    Setup {
        base,
        issuer,
        _provider: provider,
        _stop: stop,
    }
}

/// How many refresh grants the provider has answered.
async fn refreshes(issuer: &str) -> u64 {
    let stats: Value = reqwest::get(format!("{issuer}/test-stats"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    stats["refreshes"].as_u64().unwrap()
}

async fn oxp_call(base: &str, sub: &str) -> (u16, Value) {
    let body = json!({"request": {"tool_id": "Demo.Profile", "context": {"user_id": sub}}});
    let answer = reqwest::Client::new()
        .post(format!("{base}/tools/call"))
        .header("authorization", bearer(sub))
        .json(&body)
        .send()
        .await
        .unwrap();
    (answer.status().as_u16(), answer.json().await.unwrap())
}

#[tokio::test]
#[ignore = "needs Node 22 and oidc-provider: scripts/test installs them (OXP_TEST_NODE) and runs this"]
async fn a_user_authorizes_once_over_oxp_and_later_calls_use_and_refresh_the_token() {
    let s = setup().await;
    let (status, refused) = oxp_call(&s.base, "alice").await;
    assert_eq!(status, 400, "{refused}");
    let challenge = &refused["missing_requirements"]["authorization"][0];
    assert_eq!(challenge["id"], "demo");
    let url = challenge["url"].as_str().unwrap();
    let check_url = challenge["check_url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/oauth/demo/start?t=", s.base)),
        "{url}"
    );
    assert!(
        !url.contains("alice"),
        "the link does not name the user in clear"
    );
    let check = reqwest::get(check_url)
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(check, json!({"authorized": false}));

    let mut browser = Browser::new();
    let (status, page, visited) = browser.open(url, "alice").await;
    assert_eq!(status, 200, "{page} {visited:?}");
    assert!(page.contains("return to the agent"), "{page}");
    assert!(
        visited
            .iter()
            .any(|u| u.starts_with(&s.issuer) && u.contains("code_challenge_method=S256")),
        "PKCE: {visited:?}"
    );
    let callback = visited.last().unwrap().clone();
    assert!(callback.contains("/oauth/demo/callback?"), "{visited:?}");
    assert!(!page.contains("code="), "the page says nothing of the code");
    let check = reqwest::get(check_url)
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(check, json!({"authorized": true}));

    let (status, answer) = oxp_call(&s.base, "alice").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["value"]["sub"], "alice", "{answer}");

    // The same callback again (a replay) is refused and changes nothing.
    let (status, _, _) = browser.open(&callback, "alice").await;
    assert_eq!(status, 400);
    // A forged state, and an altered one, are refused.
    let forged = format!(
        "{}/oauth/demo/callback?code=x&state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        s.base
    );
    assert_eq!(browser.open(&forged, "alice").await.0, 400);
    let altered = callback.replacen("state=", "state=A", 1);
    assert_eq!(browser.open(&altered, "alice").await.0, 400);

    // Another user never gets alice's token: bob is asked to authorize.
    let (status, bob) = oxp_call(&s.base, "bob").await;
    assert_eq!(status, 400, "{bob}");
    assert!(bob["missing_requirements"]["authorization"].is_array());

    // The access token lives 61 s and is refreshed 60 s ahead: two seconds on, the call
    // refreshes it at the provider and succeeds.
    let before = refreshes(&s.issuer).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (status, answer) = oxp_call(&s.base, "alice").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["value"]["sub"], "alice");
    let after = refreshes(&s.issuer).await;
    assert_eq!(after, before + 1, "one refresh");

    // The user forgets the token: the next call asks again.
    let forgot = reqwest::Client::new()
        .post(format!("{}/oauth/demo/forget", s.base))
        .header("authorization", bearer("alice"))
        .send()
        .await
        .unwrap();
    assert_eq!(forgot.status(), 200);
    assert_eq!(oxp_call(&s.base, "alice").await.0, 400);
}

#[tokio::test]
#[ignore = "needs Node 22 and oidc-provider: scripts/test installs them (OXP_TEST_NODE) and runs this"]
async fn a_link_forwarded_to_someone_else_links_nothing_and_stays_the_users() {
    let s = setup().await;
    let (status, refused) = oxp_call(&s.base, "alice").await;
    assert_eq!(status, 400, "{refused}");
    let url = refused["missing_requirements"]["authorization"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    // Alice sends her link to Bob, who consents at the provider as himself.
    let mut bobs_browser = Browser::new();
    let (status, page, _) = bobs_browser.open(&url, "bob").await;
    assert_eq!(status, 403, "{page}");
    assert!(page.contains("Nothing was linked"), "{page}");
    // Alice's calls do not act as Bob: she is still asked to authorize.
    let (status, answer) = oxp_call(&s.base, "alice").await;
    assert_eq!(status, 400, "{answer}");
    // The link is still hers to complete.
    let (status, page, _) = Browser::new().open(&url, "alice").await;
    assert_eq!(status, 200, "{page}");
    let (status, answer) = oxp_call(&s.base, "alice").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["value"]["sub"], "alice");
    // Completed once: opening it again completes nothing more.
    let (status, _, _) = Browser::new().open(&url, "alice").await;
    assert_eq!(status, 400);
}

/// Someone who copied the user's callback, its code and the browser's cookie, replays it after
/// the user: the provider refuses the used code and, as OAuth asks of it, revokes the tokens
/// that code gave. Nothing is linked to anyone; the user's next call finds its token refused,
/// and is asked to authorize again (the held token forgotten), not failed for good.
#[tokio::test]
#[ignore = "needs Node 22 and oidc-provider: scripts/test installs them (OXP_TEST_NODE) and runs this"]
async fn a_callback_replayed_with_its_code_links_nothing_and_the_revoked_token_is_asked_for_again()
{
    let s = setup().await;
    let (_, refused) = oxp_call(&s.base, "alice").await;
    let url = refused["missing_requirements"]["authorization"][0]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut browser = Browser::new();
    let callback = browser.open_until(&url, "alice", "/callback?").await;
    let copied = browser.clone();
    let (status, page, _) = browser.open(&callback, "alice").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(oxp_call(&s.base, "alice").await.0, 200);
    let (status, page, _) = copied.clone().open(&callback, "alice").await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("not valid or has expired"), "{page}");
    // The provider revoked the grant: the call asks for a new one, with a new link.
    let (status, asked) = oxp_call(&s.base, "alice").await;
    assert_eq!(status, 400, "{asked}");
    let again = asked["missing_requirements"]["authorization"][0]["url"]
        .as_str()
        .unwrap();
    assert_ne!(again, url, "a new link");
    let (status, page, _) = Browser::new().open(again, "alice").await;
    assert_eq!(status, 200, "{page}");
    let (status, answer) = oxp_call(&s.base, "alice").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["value"]["sub"], "alice");
}

#[tokio::test]
#[ignore = "needs Node 22 and oidc-provider: scripts/test installs them (OXP_TEST_NODE) and runs this"]
async fn a_rap_invocation_asks_with_an_oauth_message_and_delivers_its_result_once_authorized() {
    let s = setup().await;
    let receiver = Receiver::ok().await;
    let invoke = |id: &'static str, user: &'static str| {
        let body = json!({"id": id, "group_id": "thread-1", "call_id": "c-1", "operation": "Demo_Profile", "arguments": {}, "user_id": user, "callback_url": receiver.url});
        reqwest::Client::new()
            .post(format!("{}/invoke", s.base))
            .header("authorization", bearer(user))
            .json(&body)
            .send()
    };
    assert_eq!(invoke("inv-1", "carol").await.unwrap().status(), 200);
    let asked = receiver.wait_for(1).await.remove(0).body;
    assert_eq!(asked["type"], "oauth", "{asked}");
    assert_eq!(
        (
            asked["id"].as_str(),
            asked["group_id"].as_str(),
            asked["call_id"].as_str()
        ),
        (Some("inv-1"), Some("thread-1"), Some("c-1"))
    );
    let url = asked["auth_url"].as_str().unwrap();
    let (status, page, _) = Browser::new().open(url, "carol").await;
    assert_eq!(status, 200, "{page}");
    let result = receiver.wait_for(2).await.remove(1).body;
    assert_eq!(result["type"], "tool_result", "{result}");
    assert_eq!(result["id"], "inv-1");
    let value: Value = serde_json::from_str(result["text"].as_str().unwrap()).unwrap();
    assert_eq!(value["sub"], "carol");

    // Refused at the provider: an error result, at once.
    assert_eq!(invoke("inv-2", "dave").await.unwrap().status(), 200);
    let asked = receiver.wait_for(3).await.remove(2).body;
    assert_eq!(asked["type"], "oauth");
    let (status, page, _) = Browser::new()
        .open(asked["auth_url"].as_str().unwrap(), "deny")
        .await;
    assert_eq!(status, 200, "{page}");
    let result = receiver.wait_for(4).await.remove(3).body;
    assert_eq!(result["type"], "tool_result");
    let text = result["text"].as_str().unwrap();
    assert!(
        text.starts_with("Error: The authorization with 'demo' was not granted"),
        "{result}"
    );
    assert!(
        text.contains(r#""kind":"authorization_denied""#),
        "{result}"
    );
}

#[tokio::test]
#[ignore = "needs Node 22 and oidc-provider: scripts/test installs them (OXP_TEST_NODE) and runs this"]
async fn an_mcp_call_answers_a_tool_error_with_the_link_and_succeeds_once_authorized() {
    let s = setup().await;
    let call = || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "Demo_Profile", "arguments": {}}});
        reqwest::Client::new()
            .post(format!("{}/mcp", s.base))
            .header("authorization", bearer("erin"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body)
            .send()
    };
    let answer: Value = call().await.unwrap().json().await.unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    let start = text.find("http://").unwrap();
    let url: String = text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '\\')
        .collect();
    let (status, page, _) = Browser::new().open(&url, "erin").await;
    assert_eq!(status, 200, "{page}");
    let answer: Value = call().await.unwrap().json().await.unwrap();
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap()["sub"],
        "erin",
        "{answer}"
    );

    // A 2026-07-28 client that declares URL-mode elicitation is asked with an input_required
    // result instead, and the URL it opens completes the flow the same way.
    let modern = || {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}}
        });
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "Demo_Profile", "arguments": {}, "_meta": meta}});
        reqwest::Client::new()
            .post(format!("{}/mcp", s.base))
            .header("authorization", bearer("gina"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "Demo_Profile")
            .json(&body)
            .send()
    };
    let answer: Value = modern().await.unwrap().json().await.unwrap();
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    let url = answer["result"]["inputRequests"]["authorize_demo"]["params"]["url"]
        .as_str()
        .unwrap();
    let (status, page, _) = Browser::new().open(url, "gina").await;
    assert_eq!(status, 200, "{page}");
    let answer: Value = modern().await.unwrap().json().await.unwrap();
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap()["sub"],
        "gina",
        "{answer}"
    );
}
