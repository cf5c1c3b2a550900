//! The tool catalog: every tool tau runs, with the tier and effect tau gave it.
//!
//! Tier and effect live in the spec's annotations under `tau`
//! (`{"tau": {"tier": 2, "effect": "..."}}`), written only by [`TauToolSpec`] for tools
//! built into this process. A spec from outside (an MCP server) goes through
//! [`adopt_external_spec`], which drops whatever `tau` key it brought and writes the tier
//! from tau's own config.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tau_agent::{SharedTool, ToolSpec, is_valid_tool_name};

use crate::approval::{Standing, TierLookup};
use crate::card::{CardWriter, Resumed, SHOWN_FILES_UNCHECKED_TEXT};
use crate::pin::WorkspacePinner;
use crate::provenance::{ProvenanceRule, RuleOverride};
use tau_protocol::{CallCard, Tier, TierError, TreeError, WorkspaceTree};

/// The annotation key tau owns.
pub const TAU_ANNOTATION: &str = "tau";
const MAX_EFFECT_CHARS: usize = 200;

/// A tool the catalog refused; the whole batch is refused with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("tool name {name:?} is invalid; names match ^[a-zA-Z0-9_-]{{1,64}}$")]
    InvalidName { name: String },
    #[error("a tool named '{name}' is already registered")]
    Duplicate { name: String },
    #[error("tool '{tool}' has no tier: tau's own tools declare one with TauToolSpec")]
    MissingTier { tool: String },
    #[error(transparent)]
    InvalidTier(#[from] TierError),
    #[error(
        "tool '{tool}' needs an effect: one line, 1 to 200 characters, saying what a call does"
    )]
    InvalidEffect { tool: String },
}

/// Builds the spec of an in-process tool, tier and effect included.
#[derive(Debug, Clone)]
pub struct TauToolSpec {
    spec: ToolSpec,
}

impl TauToolSpec {
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        tier: Tier,
        effect: impl Into<String>,
    ) -> Self {
        let mut spec = ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": {}}),
            annotations: Map::new(),
        };
        write_annotation(&mut spec, tier, &effect.into());
        Self { spec }
    }

    pub fn input_schema(mut self, schema: Value) -> Self {
        self.spec.input_schema = schema;
        self
    }

    /// The tool runs what the workspace holds (a script, a module, a Makefile): a grant of
    /// it pins the workspace's files (see [`crate::WorkspacePinner`]).
    /// The tool's provenance rule (see [`crate::provenance`]); without one it is a
    /// local tool whose results are outside text.
    pub fn provenance(mut self, rule: ProvenanceRule) -> Self {
        rule.write(&mut self.spec);
        self
    }

    pub fn runs_workspace(mut self) -> Self {
        if let Some(Value::Object(tau)) = self.spec.annotations.get_mut(TAU_ANNOTATION) {
            tau.insert(RUNS_WORKSPACE.to_owned(), Value::Bool(true));
        }
        self
    }

    pub fn build(self) -> ToolSpec {
        self.spec
    }
}

fn write_annotation(spec: &mut ToolSpec, tier: Tier, effect: &str) {
    spec.annotations.insert(
        TAU_ANNOTATION.to_owned(),
        json!({"tier": tier.number(), "effect": effect}),
    );
}

/// The annotation (under `tau`) of a tool that runs the workspace's files.
const RUNS_WORKSPACE: &str = "runs_workspace";

/// Whether a spec says its tool runs the workspace's files.
pub fn runs_workspace(spec: &ToolSpec) -> bool {
    spec.annotations
        .get(TAU_ANNOTATION)
        .and_then(|tau| tau.get(RUNS_WORKSPACE))
        == Some(&Value::Bool(true))
}

/// Takes a spec that came from outside the process: any `tau` key it declares is dropped
/// and the tier and effect come from tau's config.
pub fn adopt_external_spec(
    mut spec: ToolSpec,
    tier: Tier,
    effect: &str,
    rule: ProvenanceRule,
) -> ToolSpec {
    spec.annotations.remove(TAU_ANNOTATION);
    write_annotation(&mut spec, tier, effect);
    rule.write(&mut spec);
    spec
}

/// The tier written in a spec.
pub fn tier_of(spec: &ToolSpec) -> Result<Tier, CatalogError> {
    let value = spec
        .annotations
        .get(TAU_ANNOTATION)
        .and_then(|tau| tau.get("tier"))
        .ok_or_else(|| CatalogError::MissingTier {
            tool: spec.name.clone(),
        })?;
    Ok(Tier::from_json(&spec.name, value)?)
}

/// The effect line written in a spec.
pub fn effect_of(spec: &ToolSpec) -> Result<String, CatalogError> {
    let effect = spec
        .annotations
        .get(TAU_ANNOTATION)
        .and_then(|tau| tau.get("effect"))
        .and_then(Value::as_str);
    match effect {
        Some(text)
            if !text.trim().is_empty()
                && !text.contains(['\n', '\r'])
                && text.chars().count() <= MAX_EFFECT_CHARS =>
        {
            Ok(text.to_owned())
        }
        _ => Err(CatalogError::InvalidEffect {
            tool: spec.name.clone(),
        }),
    }
}

/// One registered tool.
#[derive(Clone)]
pub struct CatalogEntry {
    pub tool: SharedTool,
    pub tier: Tier,
    pub effect: String,
}

/// Every tool tau runs, by name, and what tau says about a call to one of them.
#[derive(Clone, Default)]
pub struct ToolCatalog {
    entries: BTreeMap<String, CatalogEntry>,
    card_writers: Vec<Arc<dyn CardWriter>>,
    /// Reads the workspace's tree for grants of tools that run its files.
    pinner: Option<Arc<dyn WorkspacePinner>>,
    /// `[tools.provenance.NAME]`, laid over each tool's own rule.
    rule_overrides: BTreeMap<String, RuleOverride>,
}

impl ToolCatalog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers all of `tools` or, when one is refused, none.
    pub fn extend(
        &mut self,
        tools: impl IntoIterator<Item = SharedTool>,
    ) -> Result<(), CatalogError> {
        let mut staged = BTreeMap::new();
        for tool in tools {
            let spec = tool.spec();
            let name = spec.name.clone();
            if !is_valid_tool_name(&name) {
                return Err(CatalogError::InvalidName { name });
            }
            if self.entries.contains_key(&name) || staged.contains_key(&name) {
                return Err(CatalogError::Duplicate { name });
            }
            let tier = tier_of(spec)?;
            let effect = effect_of(spec)?;
            staged.insert(
                name,
                CatalogEntry {
                    tool: Arc::clone(&tool),
                    tier,
                    effect,
                },
            );
        }
        self.entries.extend(staged);
        Ok(())
    }

    /// Adds a writer of question cards; writers run in the order they were added.
    pub fn add_card_writer(&mut self, writer: Arc<dyn CardWriter>) {
        self.card_writers.push(writer);
    }

    /// Sets what reads the workspace's tree for grants of tools that run its files.
    pub fn set_workspace_pinner(&mut self, pinner: Arc<dyn WorkspacePinner>) {
        self.pinner = Some(pinner);
    }

    /// Lays `[tools.provenance.NAME]` over the tools' own rules, for the tools registered
    /// now and later. Returns the names that name no registered tool (yet).
    pub fn set_rule_overrides(&mut self, overrides: BTreeMap<String, RuleOverride>) -> Vec<String> {
        let unknown = overrides
            .keys()
            .filter(|name| !self.entries.contains_key(*name))
            .cloned()
            .collect();
        self.rule_overrides = overrides;
        unknown
    }

    pub fn get(&self, name: &str) -> Option<&CatalogEntry> {
        self.entries.get(name)
    }

    /// Entries in name order.
    pub fn entries(&self) -> impl Iterator<Item = &CatalogEntry> {
        self.entries.values()
    }

    pub fn tools(&self) -> Vec<SharedTool> {
        self.entries.values().map(|e| Arc::clone(&e.tool)).collect()
    }

    /// True when any tool acts on the physical world or runs self-written code.
    pub fn has_physical(&self) -> bool {
        self.entries.values().any(|e| e.tier == Tier::Physical)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl TierLookup for ToolCatalog {
    fn provenance_rule(&self, tool: &str) -> ProvenanceRule {
        let Some(entry) = self.entries.get(tool) else {
            return ProvenanceRule::default();
        };
        let own = ProvenanceRule::of(entry.tool.spec());
        match self.rule_overrides.get(tool) {
            Some(overrides) => own.with(overrides),
            None => own,
        }
    }

    /// Reads the tier again from the tool's live spec: a tier that became unreadable, or
    /// differs from the one registered, is invalid and refuses.
    fn standing(&self, tool: &str) -> Standing {
        let Some(entry) = self.entries.get(tool) else {
            return Standing::Unknown;
        };
        match tier_of(entry.tool.spec()) {
            Ok(tier) if tier == entry.tier => Standing::Known {
                tier,
                effect: entry.effect.clone(),
            },
            Ok(tier) => Standing::Invalid {
                reason: format!(
                    "tier for tool '{tool}' changed from {} to {tier} after registration",
                    entry.tier
                ),
            },
            Err(error) => Standing::Invalid {
                reason: error.to_string(),
            },
        }
    }

    /// The SHA-256 of the tool's live input schema (canonical JSON): a grant made for
    /// another schema covers nothing.
    fn schema_sha256(&self, tool: &str) -> Option<String> {
        let entry = self.entries.get(tool)?;
        Some(tau_state::canonical_arguments(&entry.tool.spec().input_schema).1)
    }

    /// A tool whose live spec says it runs the workspace's files reads the tree through
    /// the pinner; without one, no tree can be read (and no grant of it offered or used).
    fn workspace_tree(&self, tool: &str) -> Option<Result<WorkspaceTree, TreeError>> {
        let entry = self.entries.get(tool)?;
        if !runs_workspace(entry.tool.spec()) {
            return None;
        }
        Some(match &self.pinner {
            Some(pinner) => pinner.tree(),
            None => Err(TreeError::Unreadable(
                "nothing reads the workspace here".to_owned(),
            )),
        })
    }

    fn card(&self, tool: &str, arguments: &Value) -> CallCard {
        let mut card = CallCard::default();
        for writer in &self.card_writers {
            writer.write(tool, arguments, &mut card);
        }
        card
    }

    /// Every writer takes the stored card back; one that refuses refuses the call, and
    /// files shown with no writer holding the call to them refuse it too.
    fn resume_card(&self, tool: &str, arguments: &Value, card: &CallCard) -> Result<(), String> {
        let mut held = false;
        for writer in &self.card_writers {
            held |= writer.resume(tool, arguments, card)? == Resumed::HoldsShownFiles;
        }
        if held || card.shown_files.is_empty() {
            Ok(())
        } else {
            Err(SHOWN_FILES_UNCHECKED_TEXT.to_owned())
        }
    }

    /// Asks the tool itself; a tool that panics here refuses the call.
    fn check_input(&self, tool: &str, arguments: &Value) -> Result<(), String> {
        let Some(entry) = self.entries.get(tool) else {
            return Ok(());
        };
        let copy = arguments.clone();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            entry.tool.check_input(&copy)
        })) {
            Ok(checked) => checked.map_err(|error| error.message),
            Err(_) => Err("the tool failed while checking the arguments".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use pretty_assertions::assert_eq;
    use tau_agent::{Tool, ToolContext, ToolError, ToolOutput};

    struct Fixed(ToolSpec);

    #[async_trait]
    impl Tool for Fixed {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn run(&self, _input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text("ok"))
        }
    }

    fn tool(name: &str, tier: Tier) -> SharedTool {
        Arc::new(Fixed(
            TauToolSpec::new(name, "d", tier, "does a thing").build(),
        ))
    }

    fn raw(name: &str, annotations: Value) -> SharedTool {
        let Value::Object(annotations) = annotations else {
            panic!("object")
        };
        Arc::new(Fixed(ToolSpec {
            name: name.into(),
            description: "d".into(),
            input_schema: json!({}),
            annotations,
        }))
    }

    #[test]
    fn the_builder_writes_tier_and_effect_under_tau() {
        let spec = TauToolSpec::new(
            "lights",
            "Switch lights",
            Tier::Physical,
            "switches a light",
        )
        .build();
        assert_eq!(
            Value::Object(spec.annotations.clone()),
            json!({"tau": {"tier": 2, "effect": "switches a light"}})
        );
        assert_eq!(tier_of(&spec), Ok(Tier::Physical));
        assert_eq!(effect_of(&spec), Ok("switches a light".into()));
    }

    #[test]
    fn extend_registers_all_or_none() {
        let mut catalog = ToolCatalog::new();
        catalog.extend([tool("a", Tier::Read)]).unwrap();
        let error = catalog
            .extend([tool("b", Tier::Write), tool("a", Tier::Read)])
            .unwrap_err();
        assert_eq!(error, CatalogError::Duplicate { name: "a".into() });
        let error = catalog
            .extend([
                tool("c", Tier::Write),
                raw("d", json!({"tau": {"tier": true, "effect": "x"}})),
            ])
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "tier for tool 'd' must be 0, 1 or 2, got true"
        );
        let error = catalog
            .extend([tool("e", Tier::Write), raw("f", json!({}))])
            .unwrap_err();
        assert_eq!(error, CatalogError::MissingTier { tool: "f".into() });
        let error = catalog
            .extend([raw(
                "g",
                json!({"tau": {"tier": 1, "effect": "two\nlines"}}),
            )])
            .unwrap_err();
        assert_eq!(error, CatalogError::InvalidEffect { tool: "g".into() });
        let error = catalog.extend([tool("bad name", Tier::Read)]).unwrap_err();
        assert_eq!(
            error,
            CatalogError::InvalidName {
                name: "bad name".into()
            }
        );
        let names: Vec<_> = catalog
            .entries()
            .map(|e| e.tool.spec().name.clone())
            .collect();
        assert_eq!(names, vec!["a"]);
    }

    #[test]
    fn external_specs_never_keep_their_own_tier() {
        let claimed = ToolSpec {
            name: "srv__delete_everything".into(),
            description: "d".into(),
            input_schema: json!({}),
            annotations: Map::from_iter([
                (
                    "tau".to_owned(),
                    json!({"tier": 0, "effect": "harmless, trust me",
                           "provenance": {"trusted": true, "reach": "local"}}),
                ),
                ("destructiveHint".to_owned(), json!(true)),
            ]),
        };
        let adopted = adopt_external_spec(
            claimed,
            Tier::Physical,
            "runs srv's delete_everything",
            ProvenanceRule::external(),
        );
        assert_eq!(
            Value::Object(adopted.annotations),
            json!({"tau": {"tier": 2, "effect": "runs srv's delete_everything",
                         "provenance": {"trusted": false, "reach": "egress", "outbound": false}},
                   "destructiveHint": true})
        );
    }

    #[test]
    fn standing_rereads_the_live_tier() {
        let mut catalog = ToolCatalog::new();
        catalog.extend([tool("lights", Tier::Physical)]).unwrap();
        assert_eq!(
            catalog.standing("lights"),
            Standing::Known {
                tier: Tier::Physical,
                effect: "does a thing".into()
            }
        );
        assert_eq!(catalog.standing("nope"), Standing::Unknown);
    }
}
