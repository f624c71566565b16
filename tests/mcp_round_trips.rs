//! A tool's question for the user at MCP 2026-07-28, as the revision's multi round-trip requests
//! page (`specification/2026-07-28/basic/patterns/mrtr`) has it: the call answers
//! `resultType: "input_required"` with an `elicitation/create` form and a `requestState`; the
//! client calls again (a new request id) with `inputResponses` and the state echoed, and the
//! call completes with the user's choice. The state is treated as attacker-controlled input:
//! altered, replayed, presented by another caller or for other arguments, it is refused and
//! runs nothing. A 2026-07-28 client that declared no form elicitation gets the revision's
//! missing-capability error; an earlier revision the tool error it got before.

use crate::common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use serde_json::{Value, json};

/// A 2026-07-28 `tools/call` of `name` with `arguments`, from a client declaring `elicitation`
/// (`None`: declaring none), continuing with `state` and `responses` when given.
fn call(
    id: u64,
    name: &str,
    arguments: Value,
    elicitation: Option<Value>,
    continued: Option<(&str, Value)>,
) -> Value {
    let mut capabilities = json!({});
    if let Some(e) = elicitation {
        capabilities["elicitation"] = e;
    }
    common::mcp::modern_call(id, name, arguments, capabilities, continued)
}

async fn post(app: &App, body: &Value, bearer: Option<&str>) -> Value {
    let name = body["params"]["name"].as_str().unwrap();
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name);
    if let Some(bearer) = bearer {
        request = request.header("authorization", bearer);
    }
    let reply = send(app, request.body(Body::from(body.to_string())).unwrap()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json
}

fn confirm() -> Value {
    json!({"prompt": "Deploy?", "choices": ["Yes", "No", "Later"], "default": 2})
}

fn accept(choice: &str) -> Value {
    json!({"ask_0": {"action": "accept", "content": {"choice": choice}}})
}

/// The first round's result: asserts its shape, answers the state.
fn asked(reply: &Value) -> String {
    let result = &reply["result"];
    assert_eq!(result["resultType"], "input_required", "{reply}");
    let request = &result["inputRequests"]["ask_0"];
    assert_eq!(request["method"], "elicitation/create", "{reply}");
    assert_eq!(request["params"]["mode"], "form");
    assert_eq!(request["params"]["message"], "Deploy?");
    let choice = &request["params"]["requestedSchema"]["properties"]["choice"];
    assert_eq!(choice["enum"], json!(["Yes", "No", "Later"]), "{reply}");
    assert_eq!(choice["default"], "Later");
    result["requestState"].as_str().unwrap().to_owned()
}

/// The first round of `Demo_Confirm` from a client that shows forms (as `bearer`): the
/// question is asked; its sealed state.
async fn first_round(app: &App, bearer: Option<&str>) -> String {
    let first = post(
        app,
        &call(1, "Demo_Confirm", confirm(), Some(json!({})), None),
        bearer,
    )
    .await;
    asked(&first)
}

fn chosen(reply: &Value) -> Value {
    let result = &reply["result"];
    assert_ne!(result["isError"], true, "{reply}");
    assert_ne!(result["resultType"], "input_required", "{reply}");
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn a_question_is_an_input_required_round_and_the_retry_completes_with_the_answer() {
    let app = example_app();
    let state = first_round(&app, None).await;
    let retry = call(
        2,
        "Demo_Confirm",
        confirm(),
        Some(json!({})),
        Some((&state, accept("No"))),
    );
    let done = post(&app, &retry, None).await;
    assert_eq!(chosen(&done), json!({"selected": 1, "choice": "No"}));
    // Declined: the question's default.
    let first = post(
        &app,
        &call(
            3,
            "Demo_Confirm",
            confirm(),
            Some(json!({"form": {}})),
            None,
        ),
        None,
    )
    .await;
    let state = asked(&first);
    let declined = json!({"ask_0": {"action": "decline"}});
    let retry = call(
        4,
        "Demo_Confirm",
        confirm(),
        Some(json!({})),
        Some((&state, declined)),
    );
    assert_eq!(
        chosen(&post(&app, &retry, None).await),
        json!({"selected": 2, "choice": "Later"})
    );
    // Retried without the answer: asked again.
    let first = post(
        &app,
        &call(5, "Demo_Confirm", confirm(), Some(json!({})), None),
        None,
    )
    .await;
    let state = asked(&first);
    let again = post(
        &app,
        &call(
            6,
            "Demo_Confirm",
            confirm(),
            Some(json!({})),
            Some((&state, json!({}))),
        ),
        None,
    )
    .await;
    asked(&again);
}

#[tokio::test]
async fn a_run_that_asks_is_logged_as_waiting_for_the_answer_not_as_a_tool_error() {
    let captured = Captured::global();
    let app = example_app();
    let trace = "00-7a1f0c2a0b3d4e6f8a9b0c1d2e3f4a5b-00f067aa0ba902b7-01";
    let mut first = call(1, "Demo_Confirm", confirm(), Some(json!({})), None);
    first["params"]["_meta"]["traceparent"] = json!(trace);
    let state = asked(&post(&app, &first, None).await);
    let answer = Some((state.as_str(), accept("Yes")));
    let mut retry = call(2, "Demo_Confirm", confirm(), Some(json!({})), answer);
    retry["params"]["_meta"]["traceparent"] = json!(trace);
    chosen(&post(&app, &retry, None).await);
    // One call line each: the round (its `errors` metric not counted: the core's metrics
    // tests), then the answered call.
    let outcomes: Vec<Value> = captured
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["target"] == "oxp::call" && l["fields"]["traceparent"] == trace)
        .map(|l| l["fields"]["outcome"].clone())
        .collect();
    assert_eq!(outcomes, [json!("waiting"), json!("success")]);
}

/// The JSON-RPC error of a refused retry: invalid params, naming the state, nothing run.
#[tokio::test]
async fn questions_asked_at_once_are_one_round_and_a_retry_may_answer_them_one_by_one() {
    let mut tools = example_tools::tools();
    tools.push(common::tasks::asking_twice());
    let app = app_with(
        oxp_lambda::Registry::builder()
            .tools(tools)
            .build()
            .unwrap(),
        test_config(),
    );
    let keys = |reply: &Value| -> Vec<String> {
        let result = &reply["result"];
        assert_eq!(result["resultType"], "input_required", "{reply}");
        result["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    let round = |id, continued| call(id, "Job_Pair", json!({}), Some(json!({})), continued);
    let first = post(&app, &round(1, None), None).await;
    assert_eq!(keys(&first), ["ask_0", "ask_1"]);
    let state = first["result"]["requestState"].as_str().unwrap();
    // One of the two answered: the other is the next round, alone.
    let answer = json!({"ask_1": common::tasks::choose("tonight")});
    let second = post(&app, &round(2, Some((state, answer))), None).await;
    assert_eq!(keys(&second), ["ask_0"]);
    let state = second["result"]["requestState"].as_str().unwrap();
    // A response to a question no longer open answers nothing: the first round's answer stands.
    let answers = json!({
        "ask_0": common::tasks::choose("us"),
        "ask_1": common::tasks::choose("now"),
    });
    let done = post(&app, &round(3, Some((state, answers))), None).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "pair: us tonight",
        "{done}"
    );
}

fn refused(reply: &Value) {
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("requestState"), "{message}");
}

#[tokio::test]
async fn a_replayed_altered_or_misapplied_state_and_malformed_responses_are_refused() {
    let app = example_app();
    let state = first_round(&app, None).await;
    // Another tool's arguments with this state: refused.
    let mut other = confirm();
    other["prompt"] = json!("Delete everything?");
    refused(
        &post(
            &app,
            &call(
                2,
                "Demo_Confirm",
                other,
                Some(json!({})),
                Some((&state, accept("Yes"))),
            ),
            None,
        )
        .await,
    );
    // Altered: refused.
    let middle = state.len() / 2;
    let swap = if &state[middle..=middle] == "A" {
        "B"
    } else {
        "A"
    };
    let altered = format!("{}{swap}{}", &state[..middle], &state[middle + 1..]);
    refused(
        &post(
            &app,
            &call(
                3,
                "Demo_Confirm",
                confirm(),
                Some(json!({})),
                Some((&altered, accept("Yes"))),
            ),
            None,
        )
        .await,
    );
    // Malformed responses: refused.
    for bad in [
        json!({"ask_0": "yes"}),
        json!({"ask_0": {"action": "accept"}}),
        json!({"ask_0": {"action": "maybe"}}),
    ] {
        refused(
            &post(
                &app,
                &call(
                    4,
                    "Demo_Confirm",
                    confirm(),
                    Some(json!({})),
                    Some((&state, bad)),
                ),
                None,
            )
            .await,
        );
    }
    // Responses under keys no question has are ignored: the question is asked.
    let mut unknown = call(5, "Demo_Confirm", confirm(), Some(json!({})), None);
    unknown["params"]["inputResponses"] = json!({"other": {"action": "accept", "content": {}}});
    asked(&post(&app, &unknown, None).await);
    // A forged state: refused.
    refused(
        &post(
            &app,
            &call(
                6,
                "Demo_Confirm",
                confirm(),
                Some(json!({})),
                Some(("rs1.AAAA.BBBB", accept("Yes"))),
            ),
            None,
        )
        .await,
    );
    // The genuine retry completes once; the same retry again is refused.
    let retry = call(
        7,
        "Demo_Confirm",
        confirm(),
        Some(json!({})),
        Some((&state, accept("Yes"))),
    );
    assert_eq!(chosen(&post(&app, &retry, None).await)["choice"], "Yes");
    refused(&post(&app, &retry, None).await);
}

#[tokio::test]
async fn answers_sent_again_without_their_spent_state_answer_nothing_and_run_nothing() {
    let app = example_app();
    let state = first_round(&app, None).await;
    let with_state = call(
        2,
        "Demo_Confirm",
        confirm(),
        Some(json!({})),
        Some((&state, accept("Yes"))),
    );
    assert_eq!(
        chosen(&post(&app, &with_state, None).await)["choice"],
        "Yes"
    );
    // The same answers again, the spent state left out: no question of this server is
    // answered by them, so the tool asks again rather than running with them a second time.
    let mut bare = with_state.clone();
    bare["id"] = json!(3);
    bare["params"]
        .as_object_mut()
        .unwrap()
        .remove("requestState");
    let again = post(&app, &bare, None).await;
    asked(&again);
}

#[tokio::test]
#[cfg(feature = "jwt")]
async fn a_state_is_refused_when_another_caller_presents_it() {
    let app = common::jwt::example_app();
    let alice = common::jwt::bearer("alice");
    let bob = common::jwt::bearer("bob");
    let state = first_round(&app, Some(&alice)).await;
    let retry = call(
        2,
        "Demo_Confirm",
        confirm(),
        Some(json!({})),
        Some((&state, accept("Yes"))),
    );
    refused(&post(&app, &retry, Some(&bob)).await);
    assert_eq!(
        chosen(&post(&app, &retry, Some(&alice)).await)["choice"],
        "Yes"
    );
}

#[tokio::test]
async fn a_client_without_form_elicitation_gets_the_missing_capability_error_and_an_earlier_revision_a_tool_error()
 {
    let app = example_app();
    // 2026-07-28: MissingRequiredClientCapabilityError, HTTP 400, naming what is missing (a
    // URL-only client cannot show a form either).
    for elicitation in [None, Some(json!({"url": {}}))] {
        let body = call(1, "Demo_Confirm", confirm(), elicitation, None);
        let request = Request::post("/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "Demo_Confirm")
            .body(Body::from(body.to_string()))
            .unwrap();
        let reply = send(&app, request).await;
        assert_eq!(reply.status, 400, "{}", reply.text);
        assert_eq!(reply.json["error"]["code"], -32021, "{}", reply.text);
        assert_eq!(
            reply.json["error"]["data"]["requiredCapabilities"],
            json!({"elicitation": {"form": {}}})
        );
    }
    let (status, _, text) = common::mcp::post_mcp(
        &app,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "Demo_Confirm", "arguments": confirm()}})
        .to_string(),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(reply["result"].get("resultType").is_none(), "{reply}");
}

#[test]
fn a_tool_may_not_declare_the_state_key() {
    use futures_util::FutureExt;
    let thief = oxp_lambda::Tool::builder("Thief.Read", "1.0.0")
        .secret("MCP_STATE_KEY")
        .handler(|_: oxp_lambda::NoInput, _: oxp_lambda::ToolContext| async {
            Ok::<_, oxp_lambda::ToolError>(())
        });
    let registry = oxp_lambda::Registry::builder().tool(thief).build().unwrap();
    let error = App::builder(registry)
        .config(test_config())
        .build()
        .now_or_never()
        .expect("builds without waiting")
        .expect_err("the start refuses it");
    assert!(error.to_string().contains("MCP_STATE_KEY"), "{error}");
}

/// A tool that asks for a profile in a form and answers what it was given.
fn profile_tool() -> oxp_lambda::Tool {
    use oxp_lambda::{Filled, Form, NoInput, ToolContext, ToolError};
    oxp_lambda::Tool::builder("T.Profile", "1.0.0")
        .description("Asks who you are.")
        .handler(|_: NoInput, ctx: ToolContext| async move {
            match ctx
                .fill(Form::new("profile", "Who are you?", profile_schema()))
                .await?
            {
                Filled::Accepted(values) => Ok::<_, ToolError>(Value::Object(values)),
                Filled::Declined | Filled::Cancelled => Ok(json!("no answer")),
            }
        })
}

fn profile_schema() -> Value {
    json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "maxLength": 32},
        "age": {"type": "integer", "minimum": 0},
        "colours": {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}},
    }})
}

/// A form is asked under its own key with its schema as `requestedSchema`; what the client
/// submits reaches the tool when it fits the form ("Servers SHOULD validate received data
/// matches the requested schema"), and when it does not the call fails saying so, naming the
/// field and never the value.
#[tokio::test]
async fn a_form_is_asked_with_its_schema_and_only_an_answer_that_fits_it_reaches_the_tool() {
    let app = app_with(
        oxp_lambda::Registry::builder()
            .tool(profile_tool())
            .build()
            .unwrap(),
        test_config(),
    );
    let mut id = 0;
    let mut round = |responses: Option<Value>, state: Option<String>| {
        id += 1;
        let continued = state.as_deref().zip(responses);
        call(id, "T_Profile", json!({}), Some(json!({})), continued)
    };
    let first = post(&app, &round(None, None), None).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let request = &result["inputRequests"]["profile"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Who are you?");
    assert_eq!(request["params"]["requestedSchema"], profile_schema());
    let state = result["requestState"].as_str().unwrap().to_owned();

    let fits = json!({"name": "Ada", "age": 36, "colours": ["red"]});
    let answer = json!({"profile": {"action": "accept", "content": fits}});
    let done = post(&app, &round(Some(answer), Some(state)), None).await;
    assert_eq!(chosen(&done), fits);

    let first = post(&app, &round(None, None), None).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let unfit = json!({"name": "Ada", "age": "SECRET-AGE", "colours": ["blue"]});
    let answer = json!({"profile": {"action": "accept", "content": unfit}});
    let failed = post(&app, &round(Some(answer), Some(state)), None).await;
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let text = failed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("not what the form asks for"), "{text}");
    assert!(!failed.to_string().contains("SECRET-AGE"), "{failed}");
}
