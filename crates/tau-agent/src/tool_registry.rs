//! The tools an agent can call, by name.

use std::collections::BTreeMap;

use crate::tool::{SharedTool, ToolSpec, is_valid_tool_name};

/// A tool the registry refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolRegistryError {
    #[error("tool name {name:?} is invalid; names match ^[a-zA-Z0-9_-]{{1,64}}$")]
    InvalidName { name: String },
    #[error("a tool named '{name}' is already registered")]
    Duplicate { name: String },
}

/// Tools by name; names are unique and valid.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, SharedTool>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers every tool or, when one is refused, none.
    pub fn register_all(
        &mut self,
        tools: impl IntoIterator<Item = SharedTool>,
    ) -> Result<(), ToolRegistryError> {
        let mut staged = self.tools.clone();
        for tool in tools {
            let name = tool.spec().name.clone();
            if !is_valid_tool_name(&name) {
                return Err(ToolRegistryError::InvalidName { name });
            }
            if staged.contains_key(&name) {
                return Err(ToolRegistryError::Duplicate { name });
            }
            staged.insert(name, tool);
        }
        self.tools = staged;
        Ok(())
    }

    pub fn register(&mut self, tool: SharedTool) -> Result<(), ToolRegistryError> {
        self.register_all([tool])
    }

    pub fn get(&self, name: &str) -> Option<SharedTool> {
        self.tools.get(name).cloned()
    }

    /// Specs in name order, as the model is told.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|t| t.spec().clone()).collect()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
