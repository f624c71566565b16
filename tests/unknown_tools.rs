//! A call of a tool the server does not serve (a client's stale list, a tool a deployment
//! removed) goes through the one invoker over every protocol, as OXP's always did: one call
//! line with `outcome="not_found"` (and its metrics, and its caller's rate), then each
//! protocol's own answer. MCP, RAP and the two Lambda targets answered it before the invoker,
//! without a line: an operator counting `not_found` saw OXP's clients alone.

use crate::common;

use common::runtime_api::{Bootstrap, RuntimeApi};
use serde_json::{Value, json};
use std::time::Duration;

/// The local server's line of `protocol`'s refused call of `tool_id`.
fn refused_line(text: &str, protocol: &str, tool_id: &str) -> bool {
    text.lines().any(|l| {
        l.contains("oxp::call")
            && l.contains(&format!("protocol=\"{protocol}\""))
            && l.contains(&format!("tool_id=\"{tool_id}\""))
            && l.contains("outcome=\"not_found\"")
    })
}

#[tokio::test]
async fn an_unknown_tool_writes_one_not_found_call_line_over_oxp_mcp_and_rap() {
    let env = [("OXP_AUTH", "none")];
    let (server, base) = common::start_binary(env!("CARGO_BIN_EXE_oxp-lambda"), &env);
    let addr = base.trim_start_matches("http://");
    let json = "Content-Type: application/json\r\n";
    let mcp = format!("Host: {addr}\r\n{json}Accept: application/json, text/event-stream\r\n");

    let oxp = r#"{"request":{"tool_id":"Gone.Tool","input":{}}}"#;
    let (status, _) = common::http_raw_with(addr, "POST", "/tools/call", &mcp, oxp).await;
    assert_eq!(status, 400, "OXP's unknown tool");
    // A handshake revision's plain call (the fast path), and one rmcp serves (progress asked).
    for (id, meta) in [(1, json!({})), (2, json!({"progressToken": "p"}))] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "Gone_Tool", "arguments": {}, "_meta": meta}});
        let (status, body) =
            common::http_raw_with(addr, "POST", "/mcp", &mcp, &call.to_string()).await;
        assert!(status == 200 && body.contains("-32602"), "{status} {body}");
    }
    // 2026-07-28.
    let modern = format!(
        "{mcp}MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: Gone_Tool\r\n"
    );
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "Gone_Tool", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let (_, body) = common::http_raw_with(addr, "POST", "/mcp", &modern, &call.to_string()).await;
    assert!(body.contains("-32602"), "{body}");
    // RAP: acknowledged, then refused where it runs (its error result to the callback).
    let invoke = r#"{"operation":"Gone_Tool","arguments":{},"id":"c1","group_id":"g",
        "callback_url":"http://127.0.0.1:9/callback"}"#;
    let (status, _) = common::http_raw_with(addr, "POST", "/invoke", &mcp, invoke).await;
    assert_eq!(status, 200, "acknowledged");

    let text = server.output_holding("protocol=\"rap\"").await;
    assert!(refused_line(&text, "oxp", "Gone.Tool"), "{text}");
    let mcp_lines = text
        .lines()
        .filter(|l| refused_line(l, "mcp", "Gone_Tool"))
        .count();
    assert_eq!(mcp_lines, 3, "one line each: {text}");
    assert!(refused_line(&text, "rap", "Gone_Tool"), "{text}");
}

#[tokio::test]
async fn an_unknown_tool_writes_one_not_found_call_line_on_the_lambda_targets() {
    let context = json!({"custom": {"bedrockAgentCoreToolName": "tools___Gone_Tool"}});
    let mut bedrock: Value = serde_json::from_str(
        &std::fs::read_to_string("events/bedrock-agent/calculator-add.json").unwrap(),
    )
    .unwrap();
    bedrock["function"] = json!("Gone_Tool");
    for (role, event, context, protocol) in [
        ("agentcore", json!({}), Some(context), "agentcore"),
        ("bedrock-agent", bedrock, None, "bedrock-agent"),
    ] {
        let (api, addr) =
            RuntimeApi::start(vec![("r-1".into(), event, context)], Duration::ZERO).await;
        let out = std::env::temp_dir().join(format!("oxp-unknown-{}.log", uuid::Uuid::new_v4()));
        let mut bootstrap = Bootstrap::start_captured(addr, &[("OXP_LAMBDA_ROLE", role)], &out);
        api.wait_for(1, &mut bootstrap).await;
        let answer = api.answer("r-1").to_string();
        assert!(answer.contains("Gone_Tool"), "{role}: {answer}");
        let text = std::fs::read_to_string(&out).unwrap();
        let line = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["target"] == "oxp::call")
            .unwrap_or_else(|| panic!("{role}: no call line: {text}"));
        assert_eq!(line["protocol"], protocol, "{line}");
        assert_eq!(line["tool_id"], "Gone_Tool", "{line}");
        assert_eq!(line["outcome"], "not_found", "{line}");
        assert_eq!(line["function_request_id"], "r-1", "{line}");
    }
}
