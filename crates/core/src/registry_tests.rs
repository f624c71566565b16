//! Unit tests of the registry: resolution, declaration errors, generated schemas.

use super::*;
use crate::refusal::Rejection;
use crate::tool::ToolError;
use schemars::JsonSchema;
use serde_json::{Value, json};

fn tool(name: &str, version: &str) -> Tool {
    Tool::builder(name, version).raw_handler(json!({"type": "object"}), None, |_, _| async {
        Ok(Value::Null)
    })
}

fn registry(tools: &[(&str, &str)]) -> Registry {
    Registry::new(tools.iter().map(|(n, v)| tool(n, v)).collect()).unwrap()
}

fn resolved(r: &Registry, id: &str) -> String {
    r.resolve(id)
        .map(|t| t.id.clone())
        .unwrap_or_else(|e| format!("error: {e:?}"))
}

#[test]
fn an_exact_version_resolves_exactly() {
    let r = registry(&[("A.B", "1.0.0"), ("A.B", "1.2.3"), ("A.B", "2.0.0")]);
    assert_eq!(resolved(&r, "A.B@1.2.3"), "A.B@1.2.3");
    assert!(matches!(
        r.resolve("A.B@1.2.4"),
        Err(ResolveError::UnknownVersion { .. })
    ));
}

#[test]
fn shorthand_x_means_exactly_x_0_0() {
    let r = registry(&[("A.B", "1.0.0"), ("A.B", "1.5.0"), ("A.B", "2.1.0")]);
    assert_eq!(resolved(&r, "A.B@1"), "A.B@1.0.0");
    // Not "the latest 2.x": the spec says x.0.0.
    assert!(matches!(
        r.resolve("A.B@2"),
        Err(ResolveError::UnknownVersion { .. })
    ));
}

#[test]
fn no_version_means_the_highest_release() {
    let r = registry(&[
        ("A.B", "1.0.0"),
        ("A.B", "10.0.0"),
        ("A.B", "9.9.9"),
        ("A.B", "11.0.0-beta.1"),
    ]);
    assert_eq!(
        resolved(&r, "A.B"),
        "A.B@10.0.0",
        "semver order, and releases before pre-releases"
    );
    assert_eq!(resolved(&r, "A.B@11.0.0-beta.1"), "A.B@11.0.0-beta.1");
    let only_pre = registry(&[("A.C", "1.0.0-alpha"), ("A.C", "1.0.0-beta")]);
    assert_eq!(resolved(&only_pre, "A.C"), "A.C@1.0.0-beta");
}

#[test]
fn the_listing_name_resolves_too() {
    let r = registry(&[("Calculator.Add", "1.0.0")]);
    assert_eq!(resolved(&r, "Calculator_Add@1"), "Calculator.Add@1.0.0");
    assert_eq!(resolved(&r, "Calculator_Add"), "Calculator.Add@1.0.0");
}

#[test]
fn malformed_ids_are_rejected() {
    let r = registry(&[("A.B", "1.0.0")]);
    for id in [
        "",
        "@1",
        "A.B@",
        "A.B@1.0",
        "A.B@01",
        "A.B@1.0.0@1",
        "A..B",
        "A.B@v1",
        "A B",
        "A.B@x",
        "A.B@1.0.0.0",
        "A.B@-1",
    ] {
        assert!(
            matches!(r.resolve(id), Err(ResolveError::Malformed { .. })),
            "{id:?}"
        );
    }
    assert!(matches!(
        r.resolve("A.C"),
        Err(ResolveError::UnknownTool { .. })
    ));
    assert!(matches!(
        r.resolve("A.B@99999999999999999999"),
        Err(ResolveError::Malformed { .. })
    ));
}

#[test]
fn errors_name_what_is_available() {
    let r = registry(&[("A.B", "1.0.0"), ("A.B", "2.0.0"), ("C.D", "1.0.0")]);
    let e = r.resolve("A.B@3.0.0").unwrap_err();
    assert!(
        e.developer_message()
            .ends_with("Available versions: 2.0.0, 1.0.0")
    );
    let e = r.resolve("X.Y").unwrap_err();
    assert!(e.developer_message().ends_with("Available tools: A.B, C.D"));
}

#[test]
fn long_lists_are_cut_short() {
    let names: Vec<String> = (0..50).map(|i| format!("T.N{i:02}")).collect();
    let r = Registry::new(names.iter().map(|n| tool(n, "1.0.0")).collect()).unwrap();
    let message = r.resolve("X.Y").unwrap_err().developer_message();
    assert!(message.ends_with("and 30 more"), "{message}");
}

#[test]
fn duplicates_are_rejected_when_the_registry_is_built() {
    let err = Registry::new(vec![tool("A.B", "1.0.0"), tool("A.B", "1.0.0")]).unwrap_err();
    assert_eq!(err, RegistryError::Duplicate("A.B@1.0.0".into()));
    let err = Registry::new(vec![tool("A.B_C", "1.0.0"), tool("A_B.C", "1.0.0")]).unwrap_err();
    assert!(
        matches!(err, RegistryError::ListingNameClash { .. }),
        "{err}"
    );
}

#[test]
fn invalid_declarations_are_build_errors() {
    assert!(matches!(
        Registry::new(vec![tool("A B", "1.0.0")]),
        Err(RegistryError::InvalidName(_))
    ));
    assert!(matches!(
        Registry::new(vec![tool("A.", "1.0.0")]),
        Err(RegistryError::InvalidName(_))
    ));
    assert!(matches!(
        Registry::new(vec![tool("A.B", "1.0")]),
        Err(RegistryError::InvalidVersion { .. })
    ));
    let bad_schema = Tool::builder("A.B", "1.0.0").raw_handler(
        json!({"type": "object", "properties": {"x": {"type": 5}}}),
        None,
        |_, _| async { Ok(Value::Null) },
    );
    assert!(matches!(
        Registry::new(vec![bad_schema]),
        Err(RegistryError::InvalidSchema { which: "input", .. })
    ));
    let bad_output = Tool::builder("A.B", "1.0.0").raw_handler(
        json!({"type": "object"}),
        Some(json!({"type": "nope"})),
        |_, _| async { Ok(Value::Null) },
    );
    assert!(matches!(
        Registry::new(vec![bad_output]),
        Err(RegistryError::InvalidSchema {
            which: "output",
            ..
        })
    ));
    let not_object =
        Tool::builder("A.B", "1.0.0").raw_handler(json!({"type": "string"}), None, |_, _| async {
            Ok(Value::Null)
        });
    assert!(matches!(
        Registry::new(vec![not_object]),
        Err(RegistryError::InputNotObject(_))
    ));
}

/// What a release build does (`RegistryBuilder::build`): each schema compiled at its tool's
/// first call, an invalid one refusing that tool's calls and no other's.
#[tokio::test]
async fn a_schema_left_to_the_first_call_is_compiled_then_and_an_invalid_one_refuses_its_calls() {
    let echo = |name: &str, input: Value, output: Option<Value>| {
        Tool::builder(name, "1.0.0").raw_handler(input, output, |input, _| async { Ok(input) })
    };
    let tools = vec![
        echo(
            "Good.Echo",
            json!({"type": "object"}),
            Some(json!({"type": "object"})),
        ),
        echo(
            "Bad.Input",
            json!({"type": "object", "properties": {"x": {"type": 5}}}),
            None,
        ),
        echo(
            "Bad.Output",
            json!({"type": "object"}),
            Some(json!({"type": "nope"})),
        ),
    ];
    let registry = Registry::builder()
        .tools(tools)
        .compile_schemas_now(false)
        .build()
        .expect("nothing compiled: the invalid schemas are not seen yet");
    let invoker = crate::Invoker::local(registry);
    let good = invoker
        .invoke(crate::Call::tool("Good.Echo", json!({"a": 1})))
        .await
        .expect("a valid tool's call");
    assert_eq!(good.result.expect("its value").value, json!({"a": 1}));
    let refused = invoker
        .invoke(crate::Call::tool("Bad.Input", json!({})))
        .await
        .expect_err("an input schema that does not compile refuses the call");
    assert!(matches!(
        &refused,
        Rejection::InvalidSchema(RegistryError::InvalidSchema { which: "input", .. })
    ));
    assert_eq!(refused.class(), crate::ErrorClass::Internal);
    assert!(
        !refused.user_message().contains("type"),
        "the reason is for the log"
    );
    let ran = invoker
        .invoke(crate::Call::tool("Bad.Output", json!({})))
        .await
        .expect("it ran");
    let failed = ran
        .result
        .expect_err("an output schema that does not compile fails the output");
    assert_eq!(failed.message, "The tool returned an invalid result");
    // All of them at once, as a local start does: the first invalid one is the error.
    assert!(matches!(
        invoker.registry().compile_schemas(),
        Err(RegistryError::InvalidSchema { .. })
    ));
}

#[test]
fn the_listing_is_sorted_and_latest_is_per_tool() {
    let r = registry(&[("B.X", "2.0.0"), ("A.Y", "1.0.0"), ("B.X", "1.0.0")]);
    let ids: Vec<&str> = r.tools().iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["A.Y@1.0.0", "B.X@1.0.0", "B.X@2.0.0"]);
    let latest: Vec<&str> = r.latest().map(|t| t.id.as_str()).collect();
    assert_eq!(latest, ["A.Y@1.0.0", "B.X@2.0.0"]);
}

#[test]
fn typed_tools_generate_self_contained_schemas() {
    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Address {
        /// Postal code.
        zip: String,
    }
    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Input {
        address: Address,
        count: Option<u32>,
    }
    let t =
        Tool::builder("A.B", "1.0.0").handler(|_: Input, _| async { Ok::<_, ToolError>(1.5f64) });
    let r = Registry::new(vec![t]).unwrap();
    let tool = r.resolve("A.B").unwrap();
    let schema = tool.input_schema.to_string();
    assert!(
        !schema.contains("$ref") && !schema.contains("$defs") && !schema.contains("\"format\""),
        "{schema}"
    );
    assert_eq!(
        tool.input_schema["properties"]["address"]["properties"]["zip"]["type"],
        "string"
    );
    assert_eq!(tool.output_schema, Some(json!({"type": "number"})));
}
