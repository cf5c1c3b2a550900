//! What a tool's provenance rule says: whether what it returns is trusted, whether it can
//! send something out of the machine, and whether a call to it is asked once the
//! conversation has read text from outside.
//!
//! Built-in tools declare theirs in their spec (under the `tau` annotation, written only
//! by [`crate::TauToolSpec`]); an MCP server's come from its `[mcp.servers.NAME]` entry;
//! `[tools.provenance.NAME]` overrides either, key by key.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tau_agent::ToolSpec;
use tau_protocol::Tier;

use crate::catalog::TAU_ANNOTATION;

/// Where a tool's effect lands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// Only this machine's own files and state (the workspace, the notes).
    #[default]
    Local,
    /// Out of the machine, or another person's data: mail, messages, money, a broker.
    Egress,
}

/// What happens to a call once the conversation has read text from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AfterUntrusted {
    Ask,
    Run,
}

/// One tool's provenance rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProvenanceRule {
    /// What the tool returns is the person's own (their notes) or tau's own words (a
    /// clock, a confirmation): it steers nothing.
    pub trusted: bool,
    pub reach: Reach,
    /// A read that reaches outside (fetching a URL, a search): its arguments can carry
    /// data out, so they get the same check as a write's.
    pub outbound: bool,
    /// `None`: asked when the tool is a tier-1 egress write, or an outbound read whose
    /// arguments came from outside text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_untrusted: Option<AfterUntrusted>,
}

/// Why a call below tier 2 is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escalation {
    /// A write that can send something out, after the conversation read outside text.
    EgressAfterUntrusted,
    /// A call whose arguments came from outside text (an outbound read, or a tool the
    /// config says to ask for).
    SteeredArguments,
}

impl ProvenanceRule {
    /// A tool whose result is tau's own words (a clock, a confirmation) and whose effect
    /// stays on this machine.
    pub const TRUSTED_LOCAL: Self = Self {
        trusted: true,
        reach: Reach::Local,
        outbound: false,
        after_untrusted: None,
    };

    /// A tool whose result is tau's own words and whose effect leaves the machine (a
    /// broker's acknowledgement).
    pub const TRUSTED_EGRESS: Self = Self {
        trusted: true,
        reach: Reach::Egress,
        outbound: false,
        after_untrusted: None,
    };

    /// The rule of an MCP server's tools: egress unless the server says `local`.
    pub fn external() -> Self {
        Self {
            reach: Reach::Egress,
            ..Self::default()
        }
    }

    /// Whether a call at `tier` is asked, given that the conversation read outside text
    /// (`read_untrusted`) and whether its arguments came from it (`steered`). Tier 2 is
    /// always asked; this says why a lower tier is.
    pub fn escalation(self, tier: Tier, read_untrusted: bool, steered: bool) -> Option<Escalation> {
        if !read_untrusted || tier == Tier::Physical {
            return None;
        }
        match (self.after_untrusted, tier) {
            (Some(AfterUntrusted::Ask), Tier::Write) | (None, Tier::Write)
                if self.after_untrusted.is_some() || self.reach == Reach::Egress =>
            {
                Some(Escalation::EgressAfterUntrusted)
            }
            (Some(AfterUntrusted::Ask), Tier::Read) if steered => {
                Some(Escalation::SteeredArguments)
            }
            (None, Tier::Read) if self.outbound && steered => Some(Escalation::SteeredArguments),
            _ => None,
        }
    }

    /// The rule written in a spec; a spec without one gets the default (a local tool whose
    /// results are outside text).
    pub fn of(spec: &ToolSpec) -> Self {
        spec.annotations
            .get(TAU_ANNOTATION)
            .and_then(|tau| tau.get(RULE_KEY))
            .and_then(|rule| serde_json::from_value(rule.clone()).ok())
            .unwrap_or_default()
    }

    /// Writes the rule into a spec's `tau` annotation.
    pub(crate) fn write(self, spec: &mut ToolSpec) {
        if let Some(Value::Object(tau)) = spec.annotations.get_mut(TAU_ANNOTATION) {
            tau.insert(RULE_KEY.to_owned(), json!(self));
        }
    }

    /// This rule with `overrides` laid over it, key by key.
    #[must_use]
    pub fn with(self, overrides: &RuleOverride) -> Self {
        Self {
            trusted: overrides.trusted.unwrap_or(self.trusted),
            reach: overrides.reach.unwrap_or(self.reach),
            outbound: overrides.outbound.unwrap_or(self.outbound),
            after_untrusted: overrides.after_untrusted.or(self.after_untrusted),
        }
    }
}

/// The key of the rule under the `tau` annotation.
const RULE_KEY: &str = "provenance";

/// `[tools.provenance.NAME]`: the keys set there replace the tool's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuleOverride {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reach: Option<Reach>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbound: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_untrusted: Option<AfterUntrusted>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_escalation_table() {
        let local = ProvenanceRule::default();
        let egress = ProvenanceRule::external();
        let outbound = ProvenanceRule {
            outbound: true,
            ..local
        };
        let run = ProvenanceRule {
            after_untrusted: Some(AfterUntrusted::Run),
            ..egress
        };
        let ask = ProvenanceRule {
            after_untrusted: Some(AfterUntrusted::Ask),
            ..local
        };
        use Escalation::*;
        use Tier::*;
        let cases = [
            // (rule, tier, read untrusted, steered, expected)
            (egress, Write, false, false, None),
            (egress, Write, true, false, Some(EgressAfterUntrusted)),
            (egress, Write, true, true, Some(EgressAfterUntrusted)),
            (local, Write, true, true, None),
            (run, Write, true, true, None),
            (ask, Write, true, false, Some(EgressAfterUntrusted)),
            (ask, Read, true, false, None),
            (ask, Read, true, true, Some(SteeredArguments)),
            (outbound, Read, true, false, None),
            (outbound, Read, true, true, Some(SteeredArguments)),
            (outbound, Read, false, true, None),
            (local, Read, true, true, None),
            (egress, Physical, true, true, None),
        ];
        for (rule, tier, read, steered, expected) in cases {
            assert_eq!(
                rule.escalation(tier, read, steered),
                expected,
                "{rule:?} {tier:?} read={read} steered={steered}"
            );
        }
    }

    #[test]
    fn overrides_replace_only_the_keys_they_set() {
        let rule = ProvenanceRule::external().with(&RuleOverride {
            trusted: Some(true),
            ..RuleOverride::default()
        });
        assert!(rule.trusted);
        assert_eq!(rule.reach, Reach::Egress);
        let parsed: RuleOverride = toml::from_str("reach = \"local\"").unwrap();
        assert_eq!(ProvenanceRule::external().with(&parsed).reach, Reach::Local);
        assert!(toml::from_str::<RuleOverride>("trust = true").is_err());
    }
}
