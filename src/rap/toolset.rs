//! The toolset a RAP server serves: one version of each registered tool under its listing
//! name (`Calculator_Add`), the latest release unless pinned with `OXP_RAP_TOOLS`.

use crate::rap::config::RapConfig;
use crate::rap::wire::{Annotations, Toolset, ToolsetTool};
use oxp_lambda_core::idempotency::lower_hex;
use oxp_lambda_core::registry::{RegisteredTool, Registry};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;

/// Longest toolset or tool name a runtime accepts.
const MAX_NAME_CHARS: usize = 128;

/// The served operations, by name, and the toolset's identity.
#[derive(Debug)]
pub(crate) struct ServedToolset {
    tools: Vec<Arc<RegisteredTool>>,
    by_name: HashMap<String, usize>,
    name: String,
    description: Option<String>,
    endpoint: Option<String>,
    version: String,
}

impl ServedToolset {
    /// Picks the served version of each tool. Errors name a pin that resolves to no tool, two
    /// pins of one tool, or a toolset a runtime would refuse by the published rules
    /// (`basic/toolsets.md`): a name of 1 to 128 characters, at least one tool, tool names of 1
    /// to 128 letters, digits, `_` and `-`. A runtime loads all of a toolset or none of it, so
    /// the server refuses to start rather than serve one.
    pub(crate) fn new(registry: &Registry, config: &RapConfig) -> Result<Self, String> {
        let toolset_name = config.toolset_name.chars().count();
        if !(1..=MAX_NAME_CHARS).contains(&toolset_name) {
            return Err(format!(
                "RAP: the toolset name (OXP_RAP_TOOLSET_NAME) must be 1 to {MAX_NAME_CHARS} characters"
            ));
        }
        let tools = registry.served(&config.pins, "OXP_RAP_TOOLS")?;
        if tools.is_empty() {
            return Err("RAP: a toolset must contain at least one tool".into());
        }
        let mut by_name = HashMap::with_capacity(tools.len());
        for (i, tool) in tools.iter().enumerate() {
            let name = &tool.listing_name;
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(format!(
                    "RAP: tool name '{name}' may only use letters, digits, '_' and '-'"
                ));
            }
            if name.is_empty() || name.len() > MAX_NAME_CHARS {
                return Err(format!(
                    "RAP: tool name '{name}' is longer than {MAX_NAME_CHARS} characters"
                ));
            }
            by_name.insert(name.clone(), i);
        }
        let mut served = Self {
            tools,
            by_name,
            name: config.toolset_name.clone(),
            description: config.toolset_description.clone(),
            endpoint: config.endpoint.clone(),
            version: String::new(),
        };
        served.version = served.content_hash();
        Ok(served)
    }

    /// The tool serving `operation`.
    pub(crate) fn get(&self, operation: &str) -> Option<&Arc<RegisteredTool>> {
        self.by_name.get(operation).map(|&i| &self.tools[i])
    }

    /// The served operation names, in listing order.
    pub(crate) fn operations(&self) -> impl ExactSizeIterator<Item = &str> {
        self.tools.iter().map(|t| t.listing_name.as_str())
    }

    /// The toolset version: changes whenever a served name, description or schema does.
    pub(crate) fn version(&self) -> &str {
        &self.version
    }

    /// The configured endpoint (`OXP_RAP_ENDPOINT`), if any.
    pub(crate) fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// The definition served at `/.well-known/rap-toolset`, advertising `endpoint`.
    pub(crate) fn definition(&self, endpoint: String) -> Toolset {
        Toolset {
            name: self.name.clone(),
            description: self.description.clone(),
            endpoint,
            version: self.version.clone(),
            tools: self.tool_definitions(),
        }
    }

    fn tool_definitions(&self) -> Vec<ToolsetTool> {
        self.tools
            .iter()
            .map(|t| ToolsetTool {
                name: t.listing_name.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                annotations: annotations(t),
            })
            .collect()
    }

    fn content_hash(&self) -> String {
        let tools = serde_json::to_vec(&self.tool_definitions()).expect("schemas serialize");
        let digest = Sha256::digest(&tools);
        lower_hex(&digest[..8])
    }
}

/// The tool's annotations in RAP's names; `None` when it declares none.
fn annotations(tool: &RegisteredTool) -> Option<Annotations> {
    let a = &tool.annotations;
    let annotations = Annotations {
        requires_auth: tool
            .requirements
            .authorization
            .first()
            .map(|p| p.id.clone()),
        read_only: a.read_only,
        destructive: a.destructive,
        idempotent: a.idempotent,
        long_running: a.long_running,
    };
    (annotations != Annotations::default()).then_some(annotations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;
    use serde_json::json;

    fn registry(name: &str) -> Registry {
        let tool = Tool::builder(name, "1.0.0").raw_handler(
            json!({"type": "object"}),
            None,
            |_, _| async { Ok(serde_json::Value::Null) },
        );
        Registry::builder().tool(tool).build().unwrap()
    }

    #[test]
    fn a_toolset_a_runtime_would_refuse_fails_at_start() {
        let ok = RapConfig::default();
        assert!(ServedToolset::new(&registry("T.Ok"), &ok).is_ok());
        let long = format!("T.{}", "x".repeat(127));
        let why = ServedToolset::new(&registry(&long), &ok).unwrap_err();
        assert!(why.contains("longer than 128"), "{why}");
        for name in [String::new(), "n".repeat(129)] {
            let config = RapConfig {
                toolset_name: name,
                ..RapConfig::default()
            };
            let why = ServedToolset::new(&registry("T.Ok"), &config).unwrap_err();
            assert!(why.contains("OXP_RAP_TOOLSET_NAME"), "{why}");
        }
        let empty = Registry::builder().build().unwrap();
        assert!(ServedToolset::new(&empty, &ok).is_err());
    }
}
