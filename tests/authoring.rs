//! Writing tools with `#[tool]`: the description from the doc comment, the input from the
//! function's parameters or one typed struct, annotations and secrets as arguments, shared
//! state, `?` on any error; in-process calls through the real invoker; and a macro tool on
//! every protocol (OXP, MCP, RAP, AgentCore, Bedrock Agents).

use crate::common;

use common::mcp::call_tool;
use common::receiver::Receiver;
use common::*;
use oxp_lambda::invoke::Rejection;
use oxp_lambda::{
    Call, Input, Invoker, Registry, RegistryError, SecretKey, State, ToolContext, ToolError, tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const GREETING: SecretKey = SecretKey::new("GREETING_WORD");

/// Counts greetings: state shared by every call.
#[derive(Clone, Default)]
struct Greeted(Arc<AtomicUsize>);

/// Greets someone by name.
///
/// Uses the server's greeting word.
#[tool(
    name = "Hello.Greet",
    version = "1.2.0",
    title = "Greeter",
    read_only,
    secrets = [GREETING],
    caller_scopes = ["greetings:write"]
)]
async fn greet(
    /// Who to greet.
    name: String,
    #[describe("How many exclamation marks.")] excitement: Option<u8>,
    State(greeted): State<Greeted>,
    ctx: ToolContext,
) -> Result<String, ToolError> {
    let n = greeted.0.fetch_add(1, Ordering::SeqCst) + 1;
    let marks = "!".repeat(usize::from(excitement.unwrap_or(1)));
    Ok(format!("{} {name}{marks} (#{n})", ctx.expose(GREETING)?))
}

#[derive(Deserialize, JsonSchema)]
struct ParseInput {
    /// Digits to read.
    text: String,
}

/// Reads an integer.
#[tool(
    name = "Math.Parse",
    version = "1.0.0",
    idempotent_hint,
    open_world = false
)]
async fn parse(Input(input): Input<ParseInput>) -> Result<i64, ToolError> {
    // `?` on a std error: a generic message for the user, the error's text for developers.
    Ok(input.text.trim().parse::<i64>()?)
}

/// Says hello.
#[tool(
    name = "Hello.Ping",
    version = "1.0.0",
    not_idempotent,
    long_running,
    asks_first,
    timeout_ms = 1500
)]
async fn ping() -> Result<&'static str, ToolError> {
    Ok("pong")
}

fn registry() -> Registry {
    Registry::builder()
        .state(Greeted::default())
        .tool(greet_tool())
        .tool(parse_tool())
        .tool(ping_tool())
        .build()
        .unwrap()
}

#[test]
fn the_description_comes_from_the_doc_comment_and_the_input_from_the_parameters() {
    let registry = registry();
    let tool = registry.resolve("Hello.Greet").unwrap();
    assert_eq!(tool.id, "Hello.Greet@1.2.0");
    assert_eq!(
        tool.description,
        "Greets someone by name.\n\nUses the server's greeting word."
    );
    let props = &tool.input_schema["properties"];
    assert_eq!(props["name"]["description"], "Who to greet.");
    assert_eq!(
        props["excitement"]["description"],
        "How many exclamation marks."
    );
    assert_eq!(
        tool.input_schema["required"],
        json!(["name"]),
        "an Option is optional"
    );
    assert!(props.get("greeted").is_none() && props.get("ctx").is_none());
    assert_eq!(tool.output_schema, Some(json!({"type": "string"})));
    assert_eq!(tool.requirements.secrets, ["GREETING_WORD"]);
    assert_eq!(tool.requirements.caller_scopes, ["greetings:write"]);
    assert_eq!(tool.annotations.title.as_deref(), Some("Greeter"));
    assert_eq!(tool.annotations.read_only, Some(true));
}

#[test]
fn arguments_set_annotations_idempotency_and_the_time_limit() {
    let registry = registry();
    let parse = registry.resolve("Math.Parse").unwrap();
    assert_eq!(parse.annotations.idempotent, Some(true));
    assert_eq!(parse.annotations.open_world, Some(false));
    assert_eq!(
        parse.input_schema["properties"]["text"]["description"],
        "Digits to read."
    );
    let ping = registry.resolve("Hello.Ping").unwrap();
    assert!(!ping.idempotent);
    assert_eq!(ping.annotations.long_running, Some(true));
    assert!(ping.asks_first && !parse.asks_first);
    assert_eq!(ping.timeout, Some(std::time::Duration::from_millis(1500)));
    assert_eq!(
        ping.input_schema["type"], "object",
        "no parameters: no input"
    );
}

#[test]
fn a_registry_without_the_state_a_tool_takes_fails_to_build() {
    let err = Registry::builder().tool(greet_tool()).build().unwrap_err();
    assert!(matches!(err, RegistryError::MissingState { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("Hello.Greet@1.2.0") && text.contains("Greeted"),
        "{text}"
    );
}

#[tokio::test]
async fn a_tool_is_called_in_process_through_the_real_invoker() {
    let invoker = Invoker::local(registry());
    let call = Call::tool("Hello.Greet", json!({"name": "Ada", "excitement": 2}))
        .secret("GREETING_WORD", "Hi");
    let outcome = invoker.invoke(call).await.unwrap();
    assert_eq!(outcome.result.unwrap().value, json!("Hi Ada!! (#1)"));

    // Requirements and validation apply as over any protocol.
    let missing = invoker
        .invoke(Call::tool("Hello.Greet", json!({"name": "Ada"})))
        .await
        .unwrap_err();
    assert!(matches!(missing, Rejection::Missing(_)), "{missing:?}");
    let invalid = invoker
        .invoke(Call::tool("Hello.Greet", json!({"name": 7})).secret("GREETING_WORD", "Hi"))
        .await
        .unwrap_err();
    assert!(matches!(invalid, Rejection::InvalidInput(_)), "{invalid:?}");
}

#[tokio::test]
async fn question_mark_on_a_std_error_is_a_tool_error_with_the_text_for_developers() {
    let invoker = Invoker::local(registry());
    let outcome = invoker
        .invoke(Call::tool("Math.Parse", json!({"text": "12x"})))
        .await
        .unwrap();
    let err = outcome.result.unwrap_err();
    assert_eq!(err.message, "The tool failed");
    assert!(!err.can_retry);
    assert!(
        err.developer_message.unwrap().contains("invalid digit"),
        "the error's text is the developer detail"
    );
}

/// The app with the macro tools, the greeting word held by the server.
fn app() -> oxp_lambda::App {
    build(
        oxp_lambda::App::builder(registry())
            .config(test_config())
            .secret("GREETING_WORD", "Hello"),
    )
}

#[tokio::test]
async fn a_macro_tool_runs_over_oxp() {
    let reply = call(
        &app(),
        json!({"request": {"tool_id": "Hello.Greet", "input": {"name": "Ada"}}}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.json["result"]["value"], "Hello Ada! (#1)");
}

#[tokio::test]
async fn a_macro_tool_runs_over_mcp() {
    let app = app();
    let listed = common::mcp::answer(&app, common::mcp::rpc(1, "tools/list", json!({}))).await;
    let greet = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Hello_Greet")
        .cloned()
        .unwrap();
    assert_eq!(greet["title"], "Greeter");
    assert_eq!(greet["annotations"]["readOnlyHint"], true);
    let answer = call_tool(&app, "Hello_Greet", json!({"name": "Ada"})).await;
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    assert_eq!(result["content"][0]["text"], "Hello Ada! (#1)", "{answer}");
}

#[tokio::test]
async fn a_macro_tool_runs_over_rap() {
    let app = app();
    let receiver = Receiver::ok().await;
    let invoke = json!({"operation": "Hello_Greet", "arguments": {"name": "Ada"}, "id": "r1",
                        "callback_url": receiver.url, "group_id": "g"});
    assert_eq!(post(&app, "/invoke", invoke.to_string()).await.status, 200);
    let result = receiver.result().await;
    assert_eq!(result["text"], "Hello Ada! (#1)", "{result}");
}

#[tokio::test]
async fn a_macro_tool_runs_as_an_agentcore_target() {
    let context = json!({"custom": {"bedrockAgentCoreToolName": "t___Hello_Greet"}}).to_string();
    let result = app()
        .handle_agentcore(br#"{"name": "Ada"}"#, Some(context.as_bytes()))
        .await;
    assert_eq!(result["isError"], false, "{result}");
    let text: Value = result["content"][0]["text"].clone();
    assert!(
        text.as_str().unwrap().contains("Hello Ada! (#1)"),
        "{result}"
    );
}

#[cfg(feature = "bedrock-agent")]
#[tokio::test]
async fn a_macro_tool_runs_as_a_bedrock_agents_action() {
    let event = json!({"messageVersion": "1.0", "actionGroup": "g", "function": "Hello_Greet",
                       "parameters": [{"name": "name", "type": "string", "value": "Ada"},
                                      {"name": "excitement", "type": "integer", "value": "3"}]});
    let answer = app()
        .handle_bedrock_agent(event.to_string().as_bytes())
        .await;
    assert_eq!(
        answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"], "Hello Ada!!! (#1)",
        "{answer}"
    );
}

/// A tool whose input schema is not a JSON Schema, beside one whose schema is.
fn with_an_invalid_schema() -> Registry {
    let tool = |name: &str, schema: Value| {
        oxp_lambda::Tool::builder(name, "1.0.0")
            .raw_handler(schema, None, |_, _| async { Ok(Value::Null) })
    };
    Registry::builder()
        .tool(tool("Good.Tool", json!({"type": "object"})))
        .tool(tool(
            "Bad.Tool",
            json!({"type": "object", "properties": {"x": {"type": 5}}}),
        ))
        // What a release build does: each schema left to its tool's first call.
        .compile_schemas_now(false)
        .build()
        .expect("nothing compiled yet")
}

#[tokio::test]
async fn an_invalid_schema_fails_a_local_start_and_in_a_function_started_for_a_call_only_its_calls()
{
    let start = |lambda: bool, vars: &[(&str, &str)]| {
        let vars = vars.iter().chain(&[("OXP_AUTH", "none")]).copied();
        let config = oxp_lambda::Config::from_vars(lambda, vars).unwrap();
        oxp_lambda::App::builder(with_an_invalid_schema())
            .config(config)
            .build()
    };
    let refused = start(false, &[])
        .await
        .expect_err("a local start compiles every schema");
    assert!(
        refused
            .to_string()
            .contains("'Bad.Tool@1.0.0' has an invalid input schema"),
        "{refused}"
    );
    // Started ahead of its calls (provisioned concurrency): compiled before the first poll.
    let ahead = [("AWS_LAMBDA_INITIALIZATION_TYPE", "provisioned-concurrency")];
    assert!(start(true, &ahead).await.is_err());
    // Started for a waiting call: the first poll does not wait for the schemas.
    let app = start(true, &[("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")])
        .await
        .expect("a function started for a call starts");
    let good = call(
        &app,
        json!({"request": {"tool_id": "Good.Tool", "input": {}}}),
    )
    .await;
    assert_eq!(good.status, 200, "{}", good.text);
    let bad = call(
        &app,
        json!({"request": {"tool_id": "Bad.Tool", "input": {}}}),
    )
    .await;
    assert_eq!(
        bad.json["message"],
        "This tool cannot be called: its definition is invalid"
    );
    assert!(!bad.text.contains("\"type\""), "{}", bad.text);
}

/// A colour, read from its name (the schema below lets any string through).
#[derive(Deserialize)]
enum Colour {
    Red,
}

/// Input whose schema is looser than its type, as a type with its own `Deserialize` or a
/// hand-written schema may be.
#[derive(Deserialize, JsonSchema)]
struct Paint {
    #[schemars(with = "String")]
    colour: Colour,
}

/// Paints in a colour.
#[tool(name = "Paint.Wall", version = "1.0.0")]
async fn paint(input: Input<Paint>) -> Result<String, ToolError> {
    let Colour::Red = input.0.colour;
    Ok("red".into())
}

#[tokio::test]
async fn an_input_the_schema_takes_and_its_type_does_not_is_refused_without_repeating_it() {
    let registry = Registry::builder().tool(paint_tool()).build().unwrap();
    let invoker = Invoker::local(registry);
    let sent = "<b>sk_live_123</b>".repeat(1000);
    let refused = invoker
        .invoke(Call::tool("Paint.Wall", json!({"colour": sent})))
        .await
        .unwrap_err();
    let Rejection::InvalidInput(errors) = refused else {
        panic!("{refused:?}")
    };
    let told = serde_json::to_string(&errors).unwrap();
    assert!(!told.contains("sk_live"), "{told}");
    assert_eq!(
        errors.values().next().map(String::as_str),
        Some("Does not match the tool's input type: unknown variant, expected `Red`")
    );
}
