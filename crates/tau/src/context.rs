//! What every command starts from: the home, the config and the environment.

use std::sync::Arc;

use tau_agent::Model;
use tau_core::ToolCatalog;

use crate::errors::usage;
use crate::paths::Home;
use crate::settings::{Loaded, NO_MODEL_HELP};

pub(crate) struct Context {
    pub home: Home,
    pub loaded: Loaded,
    pub env: Box<dyn Fn(&str) -> Option<String>>,
}

impl Context {
    /// The configured model; exit 2 with the help paragraph when there is none.
    pub(crate) fn model(&self) -> anyhow::Result<Arc<dyn Model>> {
        if !self.loaded.model_configured {
            return Err(usage(NO_MODEL_HELP));
        }
        tau_models::build_model(&self.loaded.config.model, &*self.env)
            .map_err(|e| usage(e.to_string()))
    }

    /// Every tool tau runs: the built-in ones.
    pub(crate) fn catalog(&self) -> anyhow::Result<ToolCatalog> {
        let tools = tau_tools::builtin_tools(&self.loaded.config.tools, &*self.env)
            .map_err(|e| usage(e.to_string()))?;
        let mut catalog = ToolCatalog::new();
        catalog.extend(tools)?;
        Ok(catalog)
    }
}
