//! Properties over generated input: any body gives a well-formed OXP answer with a valid status,
//! any event a direct role's answer in its own shape (an MCP `CallToolResult` for the AgentCore
//! Gateway target, an action group's response for Bedrock Agents: the agent reads what failed,
//! the invocation never does), resolution never panics on any tool id, and a refusal of invalid
//! input never repeats a value the caller sent.

use crate::common;

use common::*;
use proptest::prelude::*;
use serde_json::{Value, json};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("Calculator.Add"),
            Just("Calculator.Add@1"),
            Just("Doorbell.Ring@0.1.0"),
            Just("SMS.Send")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("request".to_string()),
                    Just("tool_id".to_string()),
                    Just("input".to_string()),
                    Just("inputs".to_string()),
                    Just("context".to_string()),
                    Just("call_id".to_string()),
                    Just("a".to_string()),
                    Just("b".to_string()),
                    Just("$schema".to_string()),
                    "[a-z_]{1,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A body shaped like a call, with generated parts, so generation reaches the deeper paths.
fn call_like() -> impl Strategy<Value = Value> {
    (json_value(), json_value(), prop::option::of(json_value())).prop_map(
        |(tool, input, context)| {
            let mut request = json!({"tool_id": tool, "input": input});
            if let Some(c) = context {
                request["context"] = c;
            }
            json!({"request": request})
        },
    )
}

/// A tool name as a direct role's caller gives it: a served one, or any text.
fn tool_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Calculator_Add".to_string()),
        Just("Doorbell_Ring".to_string()),
        Just("SMS_Send".to_string()),
        ".{0,16}",
    ]
}

/// A client context as the AgentCore Gateway sends it (the tool under `custom`, after the
/// target's prefix), or with any value there, or none.
fn agentcore_context() -> impl Strategy<Value = Option<Vec<u8>>> {
    let named = (tool_name(), "[a-z_]{0,8}", json_value()).prop_map(|(tool, prefix, extra)| {
        let name = format!("{prefix}___{tool}");
        json!({"custom": {"bedrockAgentCoreToolName": name, "extra": extra}}).to_string()
    });
    let any = json_value().prop_map(|v| json!({"custom": v}).to_string());
    prop::option::of(prop_oneof![named, any, ".{0,24}"].prop_map(String::into_bytes))
}

/// An action group's event with generated parts: the function, its parameters (each a name, a
/// type and a string value, as Bedrock Agents sends them) and anything beside.
fn bedrock_event() -> impl Strategy<Value = Value> {
    let names = prop::sample::select(vec!["a", "b", "doorbell_id", "to", ""]);
    let kinds = prop::sample::select(vec!["number", "integer", "string", "boolean", "array", "x"]);
    let values = prop_oneof![
        prop::sample::select(vec!["1", "[1, 2]", "true"]).prop_map(str::to_owned),
        ".{0,12}",
    ];
    let parameter = (names, kinds, values)
        .prop_map(|(name, kind, value)| json!({"name": name, "type": kind, "value": value}));
    let parameters = prop_oneof![
        prop::collection::vec(parameter, 0..5).prop_map(Value::from),
        json_value(),
    ];
    (tool_name(), parameters, json_value()).prop_map(|(function, parameters, extra)| {
        json!({"messageVersion": "1.0", "actionGroup": "g", "function": function,
               "parameters": parameters, "sessionAttributes": extra})
    })
}

/// Every variable docs/configuration.md lists (its table's first column).
fn documented_variables() -> Vec<String> {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .expect("the configuration page");
    let names = page.lines().filter_map(|line| {
        let name = line.strip_prefix("| `OXP_")?.split('`').next()?;
        Some(format!("OXP_{name}"))
    });
    names.filter(|name| !name.contains('<')).collect()
}

/// A value an operator might set, or mistype.
fn setting() -> impl Strategy<Value = String> {
    let usual = [
        "",
        "0",
        "-1",
        "18446744073709551616",
        "true",
        "none",
        "jwt",
        "embedded",
        "1e9",
    ];
    let usual = prop::sample::select(usual.to_vec()).prop_map(str::to_owned);
    prop_oneof![usual, "[0-9]{1,25}", ".{0,24}"]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn assert_well_formed(reply: &Reply) {
    let status = reply.status.as_u16();
    assert!(
        [200, 400, 422].contains(&status),
        "status {status}: {}",
        reply.text
    );
    assert_eq!(reply.json["$schema"], "urn:oxp:1.0", "{}", reply.text);
    match status {
        200 => {
            let result = &reply.json["result"];
            assert!(result["call_id"].is_string());
            assert!(result["success"].is_boolean());
            if result["success"] == false {
                assert!(result["error"]["message"].is_string());
            }
        }
        422 => assert!(reply.json["parameter_errors"].is_object()),
        _ => assert!(reply.json["message"].is_string()),
    }
}

/// A tool whose schema uses every keyword a caller's value can fail, each a place a refusal
/// could quote it.
fn strict_invoker() -> oxp_lambda::Invoker {
    let schema = json!({
        "type": "object",
        "properties": {
            "token": {"type": "string", "pattern": "^[a-z]{1,4}$", "minLength": 2, "maxLength": 4},
            "pick": {"enum": ["a", "b"]},
            "exact": {"const": "yes"},
            "when": {"type": "string", "format": "date-time"},
            "count": {"type": "integer", "minimum": 0, "maximum": 9999, "multipleOf": 3},
            "either": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
            "not": {"not": {"type": "string"}},
            "tags": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true, "maxItems": 1},
            "map": {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 1}
        },
        "required": ["token"],
        "additionalProperties": false
    });
    let tool = oxp_lambda::Tool::builder("Strict.Tool", "1.0.0")
        .description("Takes nothing it does not ask for.")
        .raw_handler(schema, None, |_, _| async { Ok(Value::Null) });
    let registry = oxp_lambda::Registry::builder().tool(tool).build().unwrap();
    oxp_lambda::Invoker::local(registry)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_json_body_gives_a_well_formed_answer(body in prop_oneof![json_value(), call_like()]) {
        let app = example_app();
        let reply = runtime().block_on(post(&app, "/tools/call", body.to_string()));
        assert_well_formed(&reply);
    }

    #[test]
    fn any_bytes_give_a_well_formed_answer(body in prop::collection::vec(any::<u8>(), 0..256)) {
        let app = example_app();
        let reply = runtime().block_on(post(&app, "/call", body));
        assert_well_formed(&reply);
    }

    #[cfg(feature = "agentcore")]
    #[test]
    fn any_agentcore_event_and_client_context_are_answered_with_a_call_tool_result(
        event in prop_oneof![json_value(), call_like()],
        context in agentcore_context(),
    ) {
        let app = example_app();
        let answer = runtime().block_on(app.handle_agentcore(event.to_string().as_bytes(), context.as_deref()));
        let content = answer["content"].as_array();
        prop_assert!(content.is_some_and(|c| !c.is_empty() && c.iter().all(|item| item["type"].is_string())), "{answer}");
        prop_assert!(answer["isError"].is_boolean() || answer["isError"].is_null(), "{answer}");
    }

    #[cfg(feature = "bedrock-agent")]
    #[test]
    fn any_action_group_event_is_answered_with_an_action_groups_response(
        event in prop_oneof![bedrock_event(), json_value()],
    ) {
        let app = example_app();
        let answer = runtime().block_on(app.handle_bedrock_agent(event.to_string().as_bytes()));
        prop_assert_eq!(&answer["messageVersion"], "1.0");
        let response = &answer["response"]["functionResponse"];
        prop_assert!(response["responseBody"]["TEXT"]["body"].is_string(), "{answer}");
        let state = &response["responseState"];
        prop_assert!(state.is_null() || state == "FAILURE" || state == "REPROMPT", "{answer}");
    }

    #[test]
    fn any_value_of_any_two_documented_variables_is_read_or_refused_naming_a_variable(
        which in (0usize..1000, 0usize..1000),
        values in (setting(), setting()),
        lambda in any::<bool>(),
    ) {
        let names = documented_variables();
        prop_assert!(names.len() > 100, "{} variables", names.len());
        let vars = [
            (names[which.0 % names.len()].clone(), values.0),
            (names[which.1 % names.len()].clone(), values.1),
        ];
        // Read without a panic; a refusal names the variable to mend.
        if let Err(e) = oxp_lambda::Config::from_vars(lambda, vars.clone()) {
            prop_assert!(e.variable.starts_with("OXP_") || e.variable.starts_with("AWS_"), "{vars:?}: {e}");
        }
    }

    #[test]
    fn any_tool_id_resolves_or_is_refused_and_a_listed_id_resolves_to_itself(
        id in ".{0,40}",
        version in "[0-9a-z.+-]{0,12}",
    ) {
        let registry = common::example_tools::registry().unwrap();
        for requested in [id.clone(), format!("Calculator.Add@{version}"), format!("{id}@{version}")] {
            // Whatever resolves is a registered tool whose name is the one asked for.
            if let Ok(tool) = registry.resolve(&requested) {
                let name = requested.split('@').next().unwrap();
                prop_assert!(name == tool.name || name == tool.listing_name, "{requested} -> {}", tool.id);
            }
        }
        for tool in registry.tools() {
            // Every listed id resolves to itself, and its listing name resolves like its dotted name.
            prop_assert_eq!(&registry.resolve(&tool.id).unwrap().id, &tool.id);
            let listed = format!("{}@{}", tool.listing_name, tool.version);
            prop_assert_eq!(&registry.resolve(&listed).unwrap().id, &tool.id);
            prop_assert_eq!(
                &registry.resolve(&tool.listing_name).unwrap().id,
                &registry.resolve(&tool.name).unwrap().id
            );
        }
    }

    /// Whatever value is sent, wherever, a refusal says what the schema asks, never the value.
    #[test]
    fn a_refusal_never_repeats_a_value_the_caller_sent(
        text in "Q9[A-Za-z0-9_ -]{6,24}",
        number in 10_000_000i64..i64::MAX,
        place in 0usize..9,
    ) {
        let input = match place {
            0 => json!({"token": text}),
            1 => json!({"token": "ab", "pick": text}),
            2 => json!({"token": "ab", "exact": text, "count": number}),
            // `format` annotates (JSON Schema 2020-12): the token fails.
            3 => json!({"token": text, "when": text}),
            4 => json!({"token": "ab", "either": text, "not": text}),
            5 => json!({"token": "ab", "tags": [text, text, number]}),
            6 => json!({"token": "ab", "map": {"k": text, "j": number}}),
            7 => json!({"token": number, "count": text}),
            _ => json!([text, number]),
        };
        let refused = runtime().block_on(strict_invoker().invoke(oxp_lambda::Call::tool("Strict.Tool", input)));
        let told = format!("{:?}", refused.unwrap_err());
        prop_assert!(!told.contains(&text), "{told}");
        prop_assert!(!told.contains(&number.to_string()), "{told}");
    }

    #[test]
    fn calculator_add_adds(a in any::<i32>(), b in any::<i32>()) {
        let app = example_app();
        let reply = runtime().block_on(call(&app, json!({"request": {"tool_id": "Calculator.Add", "input": {"a": a, "b": b}}})));
        prop_assert_eq!(&reply.json["result"]["value"], &json!(a as i64 + b as i64));
    }
}
