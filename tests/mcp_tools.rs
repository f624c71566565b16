//! MCP's tools: `tools/list` and `tools/call` over the one invoker, as an MCP client sees them
//! (names, schemas, results, tool errors, invalid arguments, unknown tools, secrets, the log).

use crate::common;

use common::mcp::*;
use common::*;
use oxp_lambda::{Config, Registry, Tool, ToolContext, ToolError};
use serde_json::{Value, json};

#[tokio::test]
async fn tools_list_serves_listing_names_and_object_output_schemas() {
    let reply = answer(&example_app(), rpc(2, "tools/list", json!({}))).await;
    let tools = reply["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "Calculator_Add",
            "Demo_Confirm",
            "Demo_Image",
            "Demo_Sleep",
            "Demo_Summarize",
            "Demo_Watch",
            "Doorbell_Ring",
            "SMS_Send",
            "System_GetTimestamp"
        ]
    );
    let add = &tools[0];
    assert_eq!(add["description"], "Adds two numbers together.");
    assert_eq!(add["inputSchema"]["type"], "object");
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
    assert!(
        add.get("outputSchema").is_none(),
        "a number output has no MCP output schema"
    );
    let timestamp = &tools[8];
    assert_eq!(timestamp["outputSchema"]["type"], "object");
    // A tool without input lists `"properties": {}`: some clients' adapters (smolagents)
    // require the key.
    assert_eq!(timestamp["inputSchema"]["type"], "object");
    assert_eq!(
        timestamp["inputSchema"]["properties"],
        json!({}),
        "{timestamp}"
    );
}

fn versioned() -> Registry {
    let version = |v: &'static str| {
        Tool::builder("Echo.Version", v).handler(
            move |_: oxp_lambda::NoInput, _: ToolContext| async move {
                Ok::<_, ToolError>(v.to_owned())
            },
        )
    };
    Registry::builder()
        .tools([version("1.0.0"), version("2.0.0")])
        .build()
        .unwrap()
}

#[tokio::test]
async fn each_tool_serves_its_latest_release_unless_pinned() {
    let latest = app_with(versioned(), Config::default());
    let reply = call_tool(&latest, "Echo_Version", json!({})).await;
    assert_eq!(reply["result"]["content"][0]["text"], "2.0.0");

    let config = Config::from_vars(false, [("OXP_MCP_TOOLS", "Echo.Version@1.0.0")]).unwrap();
    let pinned = app_with(versioned(), config);
    let reply = call_tool(&pinned, "Echo_Version", json!({})).await;
    assert_eq!(reply["result"]["content"][0]["text"], "1.0.0");

    let config = Config::from_vars(false, [("OXP_MCP_TOOLS", "Echo.Version@3.0.0")]).unwrap();
    let error = oxp_lambda::App::builder(versioned())
        .config(config)
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("OXP_MCP_TOOLS: 'Echo.Version@3.0.0'"),
        "{error}"
    );
}

#[tokio::test]
async fn a_successful_call_answers_text_and_structured_content_where_the_output_is_an_object() {
    let app = example_app();
    let sum = call_tool(&app, "Calculator_Add", json!({"a": 10, "b": 5})).await;
    assert_eq!(sum["result"]["isError"], false);
    assert_eq!(
        sum["result"]["content"],
        json!([{"type": "text", "text": "15"}])
    );
    assert!(sum["result"].get("structuredContent").is_none());

    let time = call_tool(&app, "System_GetTimestamp", json!({})).await;
    let structured = &time["result"]["structuredContent"];
    assert!(structured["timestamp"].is_string(), "{time}");
    assert_eq!(
        text_json(&time["result"]),
        *structured,
        "the text is the same JSON"
    );
}

#[tokio::test]
async fn a_tool_without_input_takes_no_arguments_at_all() {
    let app = example_app();
    let reply = answer(
        &app,
        rpc(4, "tools/call", json!({"name": "System_GetTimestamp"})),
    )
    .await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
}

#[tokio::test]
async fn a_tool_error_is_is_error_with_the_oxp_error_fields_for_the_model() {
    let reply = call_tool(
        &example_app(),
        "Doorbell_Ring",
        json!({"doorbell_id": "nope"}),
    )
    .await;
    let result = &reply["result"];
    assert_eq!(result["isError"], true);
    let error = text_json(result);
    assert_eq!(error["message"], "Doorbell ID not found");
    assert_eq!(error["can_retry"], true);
    assert_eq!(error["retry_after_ms"], 500);
    assert_eq!(
        error["additional_prompt_content"],
        "ids: doorbell42,doorbell84"
    );
    assert!(
        error.get("developer_message").is_none(),
        "not for the model"
    );
}

#[tokio::test]
async fn invalid_arguments_are_a_tool_error_naming_each_bad_parameter() {
    let reply = call_tool(&example_app(), "Calculator_Add", json!({"a": "ten"})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let error = text_json(&reply["result"]);
    assert_eq!(error["parameter_errors"]["a"], "Must be a number");
    assert_eq!(error["parameter_errors"]["b"], "Is required");
}

#[tokio::test]
async fn a_listing_cursor_this_server_never_gave_is_invalid_params() {
    // Pagination: "Invalid cursors SHOULD result in an error with code -32602". Every tool is
    // in the one page and no `nextCursor` is sent: any cursor is invalid (the first page again
    // would read as the next one).
    let reply = answer(
        &example_app(),
        rpc(2, "tools/list", json!({"cursor": "page-2"})),
    )
    .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let whole = answer(&example_app(), rpc(3, "tools/list", json!({}))).await;
    assert!(whole["result"].get("nextCursor").is_none(), "{whole}");
}

#[tokio::test]
async fn an_unknown_tool_is_a_json_rpc_invalid_params_error() {
    let reply = call_tool(&example_app(), "No_Such", json!({})).await;
    assert_eq!(reply["error"]["code"], -32602);
    assert_eq!(reply["error"]["message"], "Unknown tool: No_Such");
    assert_eq!(reply["id"], 7);
    // A 200 KB name does not come back whole, nor a control character in it.
    let long = format!("X\n{}", "y".repeat(200_000));
    let reply = call_tool(&example_app(), &long, json!({})).await;
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.len() < 100 && !message.contains('\n'), "{message}");
}

#[tokio::test]
async fn a_missing_server_secret_is_a_tool_error_and_client_secrets_are_not_taken() {
    // SMS.Send needs TWILIO_API_KEY; MCP has no way to send one, and the server holds none.
    let reply = call_tool(
        &example_app(),
        "SMS_Send",
        json!({"to": "+1555", "message": "hi"}),
    )
    .await;
    assert_eq!(reply["result"]["isError"], true);
    assert!(
        text_json(&reply["result"])["message"]
            .as_str()
            .unwrap()
            .contains("TWILIO_API_KEY")
    );

    let held = build(
        oxp_lambda::App::builder(example_tools::registry().unwrap()).secret("TWILIO_API_KEY", "k"),
    );
    let reply = call_tool(&held, "SMS_Send", json!({"to": "+1555", "message": "hi"})).await;
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"status": "sent"})
    );
}

#[tokio::test]
async fn an_mcp_call_writes_the_one_call_log_line_with_its_protocol() {
    let captured = Captured::global();
    call_tool(&example_app(), "Calculator_Add", json!({"a": 1, "b": 41})).await;
    let line = captured
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| {
            l["fields"]["protocol"] == "mcp" && l["fields"]["tool_id"] == "Calculator.Add@1.0.0"
        });
    let line = line.expect("a call line for the MCP call");
    assert_eq!(line["fields"]["outcome"], "success");
}
