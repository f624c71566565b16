//! JSON Schema validation of tool input and output, compiled once when the registry is built.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{JsonType, ValidationError, Validator};
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
        for error in self.validator.iter_errors(input) {
            let (key, message) = describe(&error, WHOLE_INPUT);
            errors
                .entry(key)
                .and_modify(|m| {
                    m.push_str("; ");
                    m.push_str(&message)
                })
                .or_insert(message);
        }
        if errors.is_empty() {
            errors.insert(WHOLE_INPUT.into(), "Is invalid".into());
        }
        Err(errors)
    }

    /// Checks tool output: `Ok` or one line naming each problem by path and keyword (for a
    /// developer message and the log). Never a value: the output may hold anything, and
    /// jsonschema's own messages quote the offending value.
    pub fn check_output(&self, output: &Value) -> Result<(), String> {
        if self.validator.is_valid(output) {
            return Ok(());
        }
        let mut text = String::new();
        for error in self.validator.iter_errors(output).take(MAX_OUTPUT_ERRORS) {
            let mut path = dotted(error.instance_path().segments());
            if path.is_empty() {
                path.push_str("value");
            }
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

/// The parameter an error is about, and a message for a person.
fn describe(error: &ValidationError<'_>, whole: &str) -> (String, String) {
    let mut path = dotted(error.instance_path().segments());
    let message = match error.kind() {
        ValidationErrorKind::Required { property } => {
            // Reported under the missing parameter itself, not under its parent object.
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            push_segment(&mut path, &name);
            "Is required".to_owned()
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            if let [only] = unexpected.as_slice() {
                push_segment(&mut path, only);
                "Is not an accepted parameter".to_owned()
            } else {
                format!("Unexpected parameters: {}", unexpected.join(", "))
            }
        }
        ValidationErrorKind::Type { kind } => match kind {
            TypeKind::Single(ty) => format!("Must be {}", article(*ty)),
            TypeKind::Multiple(set) => {
                let names: Vec<&str> = set.iter().map(article).collect();
                format!("Must be {}", names.join(" or "))
            }
        },
        _ => capitalize(&error.to_string()),
    };
    if path.is_empty() {
        path.push_str(whole);
    }
    (path, message)
}

fn dotted<'a>(segments: impl Iterator<Item = LocationSegment<'a>>) -> String {
    let mut path = String::new();
    for segment in segments {
        push_segment(&mut path, &segment.to_string());
    }
    path
}

fn push_segment(path: &mut String, segment: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(segment);
}

fn article(ty: JsonType) -> &'static str {
    match ty {
        JsonType::Null => "null",
        JsonType::Boolean => "a boolean",
        JsonType::Integer => "an integer",
        JsonType::Number => "a number",
        JsonType::String => "a string",
        JsonType::Array => "an array",
        JsonType::Object => "an object",
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

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
        assert!(
            errors["address.zip"].contains("does not match"),
            "{errors:?}"
        );
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
    }
}
