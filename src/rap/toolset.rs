//! The toolset a RAP server serves: one version of each registered tool under its listing
//! name (`Calculator_Add`), the latest release unless pinned with `OXP_RAP_TOOLS`.

use crate::core::registry::{RegisteredTool, Registry};
use crate::rap::config::RapConfig;
use crate::rap::wire::{Annotations, Toolset, ToolsetTool};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

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
    /// pins of one tool, or a tool whose name RAP cannot carry.
    pub(crate) fn new(registry: &Registry, config: &RapConfig) -> Result<Self, String> {
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
    pub(crate) fn operations(&self) -> impl Iterator<Item = &str> {
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
        digest[..8].iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
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
