//! What a tool's author reads when `#[tool]` cannot declare the function: each mistake refused
//! with a sentence saying what to write instead, and what the attribute makes of parameters.

use super::tool_tokens;
use proc_macro2::TokenStream;
use quote::quote;

/// The error `#[tool(args)]` on `item` gives, which it must give.
fn refusal(args: TokenStream, item: TokenStream) -> String {
    match tool_tokens(args, item) {
        Ok(tokens) => panic!("declared: {tokens}"),
        Err(e) => e.to_string(),
    }
}

fn add() -> TokenStream {
    quote! {
        /// Adds.
        async fn add(a: i64, b: i64) -> Result<i64, ToolError> { Ok(a + b) }
    }
}

#[test]
fn a_tool_needs_a_name_and_a_version() {
    let no_name = refusal(quote!(version = "1.0.0"), add());
    assert_eq!(no_name, r#"#[tool] needs `name = "Toolkit.Tool"`"#);
    let no_version = refusal(quote!(name = "Calc.Add"), add());
    assert_eq!(no_version, r#"#[tool] needs `version = "1.0.0"`"#);
}

#[test]
fn an_unknown_argument_is_refused_naming_every_known_one() {
    let error = refusal(
        quote!(name = "Calc.Add", version = "1.0.0", readonly),
        add(),
    );
    assert!(
        error.starts_with("unknown argument: expected name, version"),
        "{error}"
    );
    for known in [
        "read_only",
        "task_support",
        "secrets",
        "caller_scopes",
        "authorization",
    ] {
        assert!(error.contains(known), "{known}: {error}");
    }
}

#[test]
fn an_argument_with_a_value_it_cannot_take_is_refused() {
    let args = quote!(
        name = "Calc.Add",
        version = "1.0.0",
        task_support = "sometimes"
    );
    assert_eq!(
        refusal(args, add()),
        r#"task_support is "forbidden", "optional" or "required""#
    );
    let args = quote!(
        name = "Calc.Add",
        version = "1.0.0",
        authorization(scopes = ["a"])
    );
    assert_eq!(refusal(args, add()), r#"authorization needs `id = "..."`"#);
    let args = quote!(
        name = "Calc.Add",
        version = "1.0.0",
        authorization(id = "g", scope = ["a"])
    );
    assert_eq!(refusal(args, add()), "expected `id` or `scopes`");
    let args = quote!(name = "Calc.Add", version = "1.0.0", timeout_ms = 1.5);
    assert!(!refusal(args, add()).is_empty());
}

#[test]
fn a_tool_is_a_plain_async_fn_with_a_description() {
    let args = || quote!(name = "Calc.Add", version = "1.0.0");
    let not_async = quote! {
        /// Adds.
        fn add(a: i64) -> Result<i64, ToolError> { Ok(a) }
    };
    assert_eq!(refusal(args(), not_async), "#[tool] needs an `async fn`");
    let generic = quote! {
        /// Adds.
        async fn add<T>(a: T) -> Result<T, ToolError> { Ok(a) }
    };
    assert_eq!(
        refusal(args(), generic),
        "a #[tool] function cannot be generic"
    );
    let undescribed = quote!(
        async fn add(a: i64) -> Result<i64, ToolError> {
            Ok(a)
        }
    );
    assert_eq!(
        refusal(args(), undescribed.clone()),
        r#"a tool needs a description: a doc comment or `description = "..."`"#
    );
    let described = quote!(name = "Calc.Add", version = "1.0.0", description = "Adds.");
    assert!(tool_tokens(described, undescribed).is_ok());
}

#[test]
fn parameters_are_owned_named_values_taken_whole_or_one_by_one() {
    let args = || quote!(name = "Calc.Add", version = "1.0.0");
    let method = quote! {
        /// Adds.
        async fn add(&self, a: i64) -> Result<i64, ToolError> { Ok(a) }
    };
    assert_eq!(
        refusal(args(), method),
        "a #[tool] function takes no `self`"
    );
    let borrowed = quote! {
        /// Adds.
        async fn add(a: &str) -> Result<i64, ToolError> { Ok(0) }
    };
    assert_eq!(
        refusal(args(), borrowed),
        "tool parameters are owned values (no references)"
    );
    let pattern = quote! {
        /// Adds.
        async fn add((a, b): (i64, i64)) -> Result<i64, ToolError> { Ok(a + b) }
    };
    assert_eq!(
        refusal(args(), pattern),
        "an input parameter needs a plain name (it is the property's name)"
    );
    let both = quote! {
        /// Adds.
        async fn add(input: Input<Pair>, c: i64) -> Result<i64, ToolError> { Ok(c) }
    };
    assert_eq!(
        refusal(args(), both),
        "take the input whole (`Input<T>`) or as parameters, not both"
    );
}

#[test]
fn a_parameters_description_goes_to_its_property_and_off_the_function() {
    let item = quote! {
        /// Adds.
        async fn add(
            /// The first.
            a: i64,
            #[describe("The second.")] b: i64,
            ctx: &ToolContext,
        ) -> Result<i64, ToolError> { Ok(a + b) }
    };
    let expanded = tool_tokens(quote!(name = "Calc.Add", version = "1.0.0"), item)
        .unwrap()
        .to_string();
    // The function as written, but for the attributes rustc refuses on a parameter.
    assert!(
        expanded.contains("async fn add (a : i64 , b : i64 , ctx : & ToolContext ,)"),
        "{expanded}"
    );
    // The input's properties with their descriptions; the context is no property.
    let input = r#"struct __ToolInput { # [doc = "The first."] a : i64 , # [doc = "The second."] b : i64 , }"#;
    assert!(expanded.contains(input), "{expanded}");
    // Each property read from the input, the context passed as the function takes it.
    assert!(
        expanded.contains("add (__input . a , __input . b , & __ctx) . await"),
        "{expanded}"
    );
}
