//! JSON Schema validation of tool input and output, compiled once when the registry is built.

mod told;

use jsonschema::Validator;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Offending parameter (dotted path such as `address.zip`, array items as `items.0`) to a
/// readable message. A problem with the input as a whole is reported under `input`.
pub type ParameterErrors = BTreeMap<String, String>;

/// The key used for errors that concern the whole input rather than one parameter.
pub const WHOLE_INPUT: &str = "input";

/// A compiled JSON Schema.
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    validator: Validator,
}

impl CompiledSchema {
    /// Compiles `schema`; an invalid schema is an error with the reason.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::options()
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|e| e.to_string())
    }

    /// Checks tool input: `Ok` or the errors by parameter.
    pub fn check_input(&self, input: &Value) -> Result<(), ParameterErrors> {
        // The fast boolean check first: error collection allocates and is only needed on failure.
        if self.validator.is_valid(input) {
            return Ok(());
        }
        let mut errors = ParameterErrors::new();
        // Each problem read costs, and a refusal names few (`told::MOST_NAMED`).
        for error in self.validator.iter_errors(input).take(told::MOST_READ) {
            told::record(&mut errors, &error);
        }
        if errors.is_empty() {
            errors.insert(WHOLE_INPUT.into(), "Is invalid".into());
        }
        Err(errors)
    }

    /// Checks tool output: `Ok` or one line naming each problem by path and keyword (for a
    /// developer message and the log). Never a value: the output may hold anything, and
    /// jsonschema's own messages quote the offending value; a path's names from the output (a
    /// map's keys) shown bounded, as names are.
    pub fn check_output(&self, output: &Value) -> Result<(), String> {
        if self.validator.is_valid(output) {
            return Ok(());
        }
        let mut text = String::new();
        for error in self.validator.iter_errors(output).take(MAX_OUTPUT_ERRORS) {
            let path = crate::naming::shown(&told::dotted(error.instance_path().segments()));
            let path = if path.is_empty() { "value" } else { &path };
            if !text.is_empty() {
                text.push_str("; ");
            }
            let _ = write!(text, "{path}: fails `{}`", error.kind().keyword());
        }
        Err(text)
    }
}

/// Most output problems named in one message.
const MAX_OUTPUT_ERRORS: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn address_schema() -> CompiledSchema {
        CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "address": {
                    "type": "object",
                    "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["zip"]
                },
                "tags": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["name"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn a_missing_required_parameter_is_reported_under_its_own_name() {
        let errors = address_schema().check_input(&json!({})).unwrap_err();
        assert_eq!(errors["name"], "Is required");
    }

    #[test]
    fn nested_parameters_use_a_dotted_path() {
        let s = address_schema();
        let errors = s
            .check_input(&json!({"name": "a", "address": {"zip": "12"}}))
            .unwrap_err();
        assert_eq!(errors["address.zip"], "Must match the pattern ^[0-9]{5}$");
        let errors = s
            .check_input(&json!({"name": "a", "address": {}}))
            .unwrap_err();
        assert_eq!(errors["address.zip"], "Is required");
        let errors = s
            .check_input(&json!({"name": "a", "tags": [1, "x"]}))
            .unwrap_err();
        assert_eq!(errors["tags.1"], "Must be an integer");
    }

    #[test]
    fn unexpected_parameters_are_named() {
        let errors = address_schema()
            .check_input(&json!({"name": "a", "nope": 1}))
            .unwrap_err();
        assert_eq!(errors["nope"], "Is not an accepted parameter");
    }

    /// jsonschema's own messages quote the value: a secret sent where a pattern, a length or
    /// a list of options applies came back in the 422. Told here by what the schema asks.
    #[test]
    fn a_refusal_says_what_the_schema_asks_never_the_value_sent() {
        let s = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {
                "token": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                "pick": {"enum": ["a", "b"]},
                "pin": {"type": "integer", "maximum": 9999},
                "exact": {"const": "yes"},
                "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
                "tags": {"type": "array", "uniqueItems": true, "maxItems": 1}
            }
        }))
        .unwrap();
        let secret = "SK_LIVE_123";
        let errors = s
            .check_input(&json!({
                "token": secret, "pick": secret, "pin": 73915486, "exact": secret,
                "either": secret, "tags": [secret, secret]
            }))
            .unwrap_err();
        let told = serde_json::to_string(&errors).unwrap();
        assert!(
            !told.contains("SK_LIVE") && !told.contains("73915486"),
            "{told}"
        );
        assert_eq!(
            errors["token"],
            "Must be at most 8 characters long; Must match the pattern ^[a-z]+$"
        );
        assert_eq!(errors["pick"], r#"Must be one of ["a","b"]"#);
        assert_eq!(errors["pin"], "Must be at most 9999");
        assert_eq!(errors["exact"], r#"Must be "yes""#);
        assert_eq!(errors["either"], "Must match one of the accepted forms");
        assert_eq!(
            errors["tags"],
            "Must have at most 1 item; Must not repeat an item"
        );
    }

    /// A name from the input (an unexpected parameter) is shown as every caller's name is, and
    /// a refusal names at most 32 parameters however many were sent.
    #[test]
    fn names_from_the_input_are_bounded_and_so_is_their_number() {
        let s = address_schema();
        let long = format!("{}\u{7}", "k".repeat(10_000));
        let errors = s.check_input(&json!({"name": "a", long: 1})).unwrap_err();
        let (key, why) = errors.iter().next().unwrap();
        assert_eq!(
            (key.chars().count(), why.as_str()),
            (65, "Is not an accepted parameter")
        );
        assert!(!key.contains('\u{7}'));
        let options: Vec<String> = (0..10_000).map(|i| format!("option{i}")).collect();
        let s =
            CompiledSchema::compile(&json!({"properties": {"pick": {"enum": options}}})).unwrap();
        let errors = s.check_input(&json!({"pick": "none"})).unwrap_err();
        assert_eq!(
            errors["pick"].chars().count(),
            "Must be one of ".len() + 257
        );
        let s = address_schema();
        let many: serde_json::Map<String, Value> =
            (0..10_000).map(|i| (format!("k{i}"), json!(i))).collect();
        let errors = s.check_input(&Value::Object(many)).unwrap_err();
        assert_eq!(errors.len(), 32);
    }

    #[test]
    fn a_wrong_type_reads_like_the_spec_example() {
        let s =
            CompiledSchema::compile(&json!({"type":"object","properties":{"b":{"type":"number"}}}))
                .unwrap();
        let errors = s.check_input(&json!({"b": "infinity"})).unwrap_err();
        assert_eq!(errors["b"], "Must be a number");
        let errors = s.check_input(&json!("text")).unwrap_err();
        assert_eq!(errors[WHOLE_INPUT], "Must be an object");
    }

    #[test]
    fn an_invalid_schema_does_not_compile() {
        assert!(CompiledSchema::compile(&json!({"type": "no-such-type"})).is_err());
        assert!(CompiledSchema::compile(&json!({"minimum": "x"})).is_err());
    }

    #[test]
    fn output_errors_name_the_offending_path_and_keyword_never_the_value() {
        let s = CompiledSchema::compile(&json!({"type": "number"})).unwrap();
        assert!(s.check_output(&json!(1.5)).is_ok());
        assert_eq!(
            s.check_output(&json!("sk_live_secret")).unwrap_err(),
            "value: fails `type`"
        );
        let s = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {"token": {"type": "string", "pattern": "^[a-z]+$"}}
        }))
        .unwrap();
        let why = s.check_output(&json!({"token": "SECRET-123"})).unwrap_err();
        assert_eq!(why, "token: fails `pattern`");
        assert!(!why.contains("SECRET"));
        // A map's key is the output's: shown as a name is, bounded.
        let s =
            CompiledSchema::compile(&json!({"additionalProperties": {"type": "string"}})).unwrap();
        let why = s.check_output(&json!({"k".repeat(10_000): 1})).unwrap_err();
        assert_eq!(why, format!("{}…: fails `type`", "k".repeat(64)));
    }
}
