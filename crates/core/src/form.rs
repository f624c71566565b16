//! A form the user fills in: MCP's form elicitation, a flat object of primitive fields (text,
//! numbers, booleans, single choices) and multi-selects. A [`ToolContext::fill`](crate::ToolContext::fill) names
//! it with a key the client sees, so a call that asks several forms over its rounds keeps them
//! apart. For a choice among labels, [`Ask`](crate::talk::Ask) says it in every protocol that
//! can ask; a form is carried where the protocol has forms (MCP: a 2026-07-28 round, or on the
//! call's stream to a 2025 client that declared form elicitation), and elsewhere fails
//! the call with a clear `unsupported` error.
//!
//! Forms are for what a user may type into any client: never for secrets (the protocols' own
//! rule; the server keeps passwords and tokens out of forms and asks for them by URL).

use serde_json::{Map, Value};

/// Most fields a form holds.
pub const MAX_FIELDS: usize = 16;
/// Longest form key, in characters.
pub const MAX_KEY_CHARS: usize = 64;
/// Longest message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 1024;

/// A form for the user: a key, a message and a flat object schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// The form's name as the client sees it (`user_name`): letters, digits, `_` and `-`.
    pub key: String,
    /// What the user is asked.
    pub message: String,
    /// A JSON Schema object with `properties` of primitive types (`string`, `number`,
    /// `integer`, `boolean`, a string `enum` or titled `oneOf`), or multi-selects (`array`
    /// whose `items` is a string `enum` or titled `anyOf`), and optionally `required`.
    pub schema: Value,
}

impl Form {
    /// Asks `message` with the fields of `schema` under `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>, schema: Value) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
            schema,
        }
    }

    /// Checks the form: a key of at most [`MAX_KEY_CHARS`] letters, digits, `_` or `-`; a
    /// message within bounds; a flat object schema of at most [`MAX_FIELDS`] primitive fields
    /// or multi-selects.
    pub fn check(&self) -> Result<(), String> {
        let key_ok = !self.key.is_empty()
            && self.key.chars().count() <= MAX_KEY_CHARS
            && self
                .key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !key_ok {
            return Err("a form's key is 1 to 64 letters, digits, '_' or '-'".into());
        }
        if self.message.is_empty() || self.message.chars().count() > MAX_MESSAGE_CHARS {
            return Err("a form's message is 1 to 1024 characters".into());
        }
        let properties = self
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .filter(|_| self.schema.get("type").and_then(Value::as_str) == Some("object"))
            .ok_or("a form's schema is an object schema with properties")?;
        if properties.is_empty() || properties.len() > MAX_FIELDS {
            return Err("a form has 1 to 16 fields".into());
        }
        // MCP's elicitation schemas: primitives, and (2025-11-25, SEP-1330) a multi-select, an
        // array of one of a string enum's values (`items.enum`, or titled `items.anyOf`).
        let field_ok = |field: &Value| match field.get("type").and_then(Value::as_str) {
            Some("string" | "number" | "integer" | "boolean") => true,
            Some("array") => field.get("items").is_some_and(|items| {
                items
                    .get("enum")
                    .or(items.get("anyOf"))
                    .is_some_and(Value::is_array)
            }),
            _ => false,
        };
        if !properties.values().all(field_ok) {
            return Err(
                "a form's fields are strings, numbers, integers, booleans or multi-selects".into(),
            );
        }
        Ok(())
    }
}

/// What the user did with a form.
#[derive(Debug, Clone, PartialEq)]
pub enum Filled {
    /// Submitted, with the fields' values.
    Accepted(Map<String, Value>),
    /// Refused to answer.
    Declined,
    /// Dismissed the form without a choice.
    Cancelled,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_is_a_named_flat_object_of_primitive_fields() {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        assert!(
            Form::new("user_name", "Your name?", schema.clone())
                .check()
                .is_ok()
        );
        assert!(Form::new("", "Your name?", schema.clone()).check().is_err());
        assert!(
            Form::new("a b", "Your name?", schema.clone())
                .check()
                .is_err()
        );
        assert!(Form::new("k", "", schema).check().is_err());
        let nested = json!({"type": "object", "properties": {"a": {"type": "object"}}});
        assert!(Form::new("k", "m", nested).check().is_err());
        assert!(
            Form::new("k", "m", json!({"type": "string"}))
                .check()
                .is_err()
        );
        // A multi-select is an array of a string enum's values; any other array is not a field.
        let multi = |items: Value| {
            Form::new(
                "k",
                "m",
                json!({"type": "object", "properties": {"a": {"type": "array", "items": items}}}),
            )
            .check()
        };
        assert!(multi(json!({"type": "string", "enum": ["x", "y"]})).is_ok());
        assert!(multi(json!({"anyOf": [{"const": "x", "title": "X"}]})).is_ok());
        assert!(multi(json!({"type": "string"})).is_err());
        assert!(multi(json!({"type": "object"})).is_err());
    }
}
