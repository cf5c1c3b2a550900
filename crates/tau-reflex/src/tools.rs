//! Routines from a conversation: `create_routine` (tier 2: the approval shows the whole
//! routine, and the person's yes is what registers it), `list_routines` (tier 0) and
//! `delete_routine` (tier 1).

use std::sync::Arc;

use async_trait::async_trait;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};
use tau_agent::{SharedTool, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::{Household, TauToolSpec, ToolCatalog};
use tau_protocol::{PersonName, Tier};

use crate::book::{self, Book};
use crate::def::RoutineDef;
use crate::store::RoutineStore;
use crate::validate::{Action, Checks, Origin, Routine, validate};

/// What the routine tools share.
pub struct RoutineToolsParts {
    pub store: Arc<RoutineStore>,
    /// The tools a routine may call (without the routine tools).
    pub catalog: ToolCatalog,
    /// The `tau.toml` routines, validated.
    pub config: Vec<Routine>,
    pub zone: TimeZone,
    /// The household routines' owners are of.
    pub people: Household,
    /// The person of the conversation these tools serve (`None` with no `[[people]]`):
    /// the owner of every routine made there.
    pub person: Option<PersonName>,
}

struct Shared {
    parts: RoutineToolsParts,
}

impl Shared {
    fn checks<'a>(&'a self, env: &'a dyn Fn(&str) -> Option<String>) -> Checks<'a> {
        Checks {
            tools: Some(&self.parts.catalog),
            zone: &self.parts.zone,
            env,
            now: Timestamp::now(),
            at_must_be_future: true,
            webhooks: None,
            people: &self.parts.people,
        }
    }
}

/// The three routine tools.
pub fn routine_tools(parts: RoutineToolsParts) -> Vec<SharedTool> {
    let shared = Arc::new(Shared { parts });
    vec![
        Arc::new(CreateRoutine::new(Arc::clone(&shared))),
        Arc::new(ListRoutines::new(Arc::clone(&shared))),
        Arc::new(DeleteRoutine::new(shared)),
    ]
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// What `create_routine` answers when the model names an owner other than the person of
/// its conversation (`{owner}`, `{person}`): a routine made here is theirs alone.
pub const OWNER_NOT_THE_PERSON: &str = "the routine was not registered: owner: a routine made in this conversation is {person}'s, not {owner}'s; leave owner out (each person sets up their own routines)";

/// What `delete_routine` answers in a conversation of another person than the routine's
/// owner (`{name}`, `{owner}`).
pub const DELETE_NOT_YOURS: &str =
    "routine '{name}' is {owner}'s; only they delete it, in a conversation of theirs";

/// Why `person` may not delete the stored routine `def`: it is another person's (one
/// made before routines had owners is the first person's, as validation reads it).
fn delete_refusal(def: &RoutineDef, people: &Household, person: &PersonName) -> Option<String> {
    let owner = def
        .owner
        .clone()
        .unwrap_or_else(|| people.first().to_string());
    (owner != person.as_str()).then(|| {
        DELETE_NOT_YOURS
            .replace("{name}", &def.name)
            .replace("{owner}", &tau_core::display(&owner))
    })
}

/// The owner of a routine made in a conversation of `person`: always them. `None` (no
/// `[[people]]`) leaves `owner` as given, for validation to refuse.
fn owned_by(def: &mut RoutineDef, person: Option<&PersonName>) -> Result<(), ToolError> {
    let Some(person) = person else {
        return Ok(());
    };
    if let Some(owner) = def.owner.as_deref()
        && owner != person.as_str()
    {
        return Err(ToolError::new(
            OWNER_NOT_THE_PERSON
                .replace("{person}", person.as_str())
                .replace("{owner}", &tau_core::display(owner)),
        ));
    }
    def.owner = Some(person.to_string());
    Ok(())
}

pub(crate) struct CreateRoutine {
    spec: ToolSpec,
    shared: Arc<Shared>,
}

impl CreateRoutine {
    fn new(shared: Arc<Shared>) -> Self {
        let spec = TauToolSpec::new(
            "create_routine",
            "Registers a routine that runs on its own in `tau serve`: one trigger (every, cron, at or mqtt) \
             and one action (a tool with fixed arguments, or a prompt run as a turn in the routine's own session). \
             The person approves the whole routine; afterwards its exact tool call runs without asking, \
             and any other tier-2 call is asked on its `ask` channel or refused.",
            Tier::Physical,
            "registers a routine that runs by itself; its exact tool call will then run without asking",
        )
        .provenance(tau_core::provenance::ProvenanceRule::TRUSTED_LOCAL)
        .input_schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "a-z, 0-9, '-' and '_', at most 48 characters"},
                "every": {"type": "string", "description": "a period, e.g. '10m', '1h30m', '2d'"},
                "cron": {"type": "string", "description": "a cron pattern in the person's time zone, e.g. '0 7 * * *'"},
                "at": {"type": "string", "description": "once, at a local time, e.g. '2026-12-24T18:00'"},
                "mqtt": {"type": "string", "description": "an MQTT topic filter, e.g. 'home/door/+'"},
                "payload": {"type": "string", "description": "with mqtt: only a message with exactly this payload"},
                "tool": {"type": "string", "description": "the tool to call"},
                "arguments": {"type": "object", "description": "the tool's fixed arguments"},
                "prompt": {"type": "string", "description": "instead of a tool: what to ask the agent each time"},
                "ask": {"type": "string", "enum": ["web", "telegram"], "description": "where other tier-2 calls are asked; without it they are refused"},
                "owner": {"type": "string", "description": "whose routine it is: always the person of this conversation, who it is when left out"},
            },
            "required": ["name"],
            "additionalProperties": false,
        }))
        .build();
        Self { spec, shared }
    }
}

#[async_trait]
impl Tool for CreateRoutine {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let invalid = |key: &str, message: &str| {
            let at = if key.is_empty() {
                String::new()
            } else {
                format!("{key}: ")
            };
            ToolError::new(format!("the routine was not registered: {at}{message}"))
        };
        let mut def = RoutineDef::from_json(input).map_err(|e| invalid(&e.key, &e.message))?;
        if def.webhook.is_some() {
            return Err(invalid(
                "webhook",
                "webhook routines are set up in tau.toml, where their secret is named",
            ));
        }
        if def.enabled.is_some() {
            return Err(invalid(
                "enabled",
                "a new routine starts enabled; `tau routines disable` switches it off",
            ));
        }
        let parts = &self.shared.parts;
        if parts.config.iter().any(|r| r.name() == def.name) {
            return Err(invalid(
                "name",
                &format!("a routine named '{}' is set up in tau.toml", def.name),
            ));
        }
        owned_by(&mut def, parts.person.as_ref())?;
        // What the person approved is exactly these arguments: the gate let this call run
        // with them and no others, in their own conversation, so the routine is theirs.
        // Its content hash (owner included) is the approval the exemption keeps.
        let approved_hash = def.content_hash();
        let routine = validate(
            def,
            Origin::Conversation {
                approved_hash: approved_hash.clone(),
            },
            &self.shared.checks(&no_env),
        )
        .map_err(|e| ToolError::new(format!("the routine was not registered: {e}")))?;
        let created = parts
            .store
            .create(&routine.def, &approved_hash, None, Timestamp::now())
            .map_err(|e| ToolError::new(e.to_string()))?;
        if !created {
            return Err(invalid(
                "name",
                &format!(
                    "a routine named '{}' exists; delete it first",
                    routine.name()
                ),
            ));
        }
        Ok(ToolOutput::text(format!(
            "routine '{}' registered: {}, {}. It runs while `tau serve` runs.",
            routine.name(),
            routine.trigger.describe(),
            describe_action(&routine.action)
        )))
    }
}

/// The action in words.
pub fn describe_action(action: &Action) -> String {
    match action {
        Action::Tool { tool, arguments } => {
            format!("calls {tool} {}", tau_core::sorted_json(arguments))
        }
        Action::Prompt { prompt } => format!("runs the prompt {}", Value::String(prompt.clone())),
    }
}

/// Every routine as `list_routines` and the web page show it: its definition (without a
/// webhook's secret variable), whether it is enabled, where it was set up, its last run;
/// then the stored routines that could not be used, with why.
pub fn routines_json(book: &Book, store: &RoutineStore) -> Result<Value, crate::store::StoreError> {
    let mut list = Vec::new();
    for routine in &book.routines {
        let last = store
            .runs(routine.name(), 1)?
            .into_iter()
            .next()
            .map(|run| json!({"outcome": run.outcome.as_str(), "at": run.started_at.to_string(), "trigger": run.trigger}));
        let mut entry = routine.def.to_json();
        if let Value::Object(map) = &mut entry {
            map.insert("enabled".into(), Value::Bool(routine.enabled));
            map.insert(
                "set_up_in".into(),
                Value::String(match routine.origin {
                    Origin::Config => "tau.toml".into(),
                    Origin::Conversation { .. } => "conversation".into(),
                }),
            );
            if routine.def.webhook.is_some() {
                map.insert(
                    "webhook".into(),
                    json!(format!("/hooks/{}", routine.name())),
                );
            }
            map.insert("last_run".into(), last.unwrap_or(Value::Null));
        }
        list.push(entry);
    }
    for (name, problem) in &book.problems {
        list.push(json!({"name": name, "problem": problem}));
    }
    Ok(Value::Array(list))
}

pub(crate) struct ListRoutines {
    spec: ToolSpec,
    shared: Arc<Shared>,
}

impl ListRoutines {
    fn new(shared: Arc<Shared>) -> Self {
        let spec = TauToolSpec::new(
            "list_routines",
            "Lists the routines: name, trigger, action, ask channel, whether enabled, where each was set up, and its last run.",
            Tier::Read,
            "reads the list of routines",
        )
        .provenance(tau_core::provenance::ProvenanceRule::TRUSTED_LOCAL)
        .input_schema(json!({"type": "object", "properties": {}, "additionalProperties": false}))
        .build();
        Self { spec, shared }
    }
}

#[async_trait]
impl Tool for ListRoutines {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, _input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let parts = &self.shared.parts;
        let mut checks = self.shared.checks(&no_env);
        checks.at_must_be_future = false;
        let book = book::load(&parts.config, &parts.store, &checks)
            .map_err(|e| ToolError::new(e.to_string()))?;
        let list = routines_json(&book, &parts.store).map_err(|e| ToolError::new(e.to_string()))?;
        Ok(ToolOutput::json(list))
    }
}

pub(crate) struct DeleteRoutine {
    spec: ToolSpec,
    shared: Arc<Shared>,
}

impl DeleteRoutine {
    fn new(shared: Arc<Shared>) -> Self {
        let spec = TauToolSpec::new(
            "delete_routine",
            "Deletes a routine that was made in a conversation; it stops running. Routines in tau.toml are removed there.",
            Tier::Write,
            "deletes a routine made in a conversation",
        )
        .provenance(tau_core::provenance::ProvenanceRule::TRUSTED_LOCAL)
        .input_schema(json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": false,
        }))
        .build();
        Self { spec, shared }
    }
}

#[async_trait]
impl Tool for DeleteRoutine {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let name = input.get("name").and_then(Value::as_str).ok_or_else(|| {
            ToolError::new("invalid arguments for delete_routine: name must be a string")
        })?;
        let parts = &self.shared.parts;
        if parts.config.iter().any(|r| r.name() == name) {
            return Err(ToolError::new(format!(
                "routine '{name}' is set up in tau.toml; it is removed there"
            )));
        }
        if let Some(person) = &parts.person
            && let Some(stored) = parts
                .store
                .get(name)
                .map_err(|e| ToolError::new(e.to_string()))?
            && let Some(refusal) = delete_refusal(&stored.def, &parts.people, person)
        {
            return Err(ToolError::new(refusal));
        }
        if parts
            .store
            .delete(name)
            .map_err(|e| ToolError::new(e.to_string()))?
        {
            Ok(ToolOutput::text(format!("routine '{name}' deleted")))
        } else {
            Err(ToolError::new(format!(
                "there is no routine named '{name}'"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_routine_made_in_a_conversation_is_its_persons_whatever_the_model_says() {
        assert_eq!(
            OWNER_NOT_THE_PERSON,
            "the routine was not registered: owner: a routine made in this conversation is {person}'s, not {owner}'s; leave owner out (each person sets up their own routines)"
        );
        let ana = PersonName::parse("ana").unwrap();
        let mut def = RoutineDef::default();
        owned_by(&mut def, Some(&ana)).unwrap();
        assert_eq!(def.owner.as_deref(), Some("ana"));
        owned_by(&mut def, Some(&ana)).unwrap();
        assert_eq!(
            def.owner.as_deref(),
            Some("ana"),
            "naming the person is fine"
        );
        def.owner = Some("bob".into());
        assert_eq!(
            owned_by(&mut def, Some(&ana)).unwrap_err().to_string(),
            "the routine was not registered: owner: a routine made in this conversation is ana's, not bob's; leave owner out (each person sets up their own routines)"
        );
        assert_eq!(def.owner.as_deref(), Some("bob"), "nothing was changed");
        // With no people the owner stays as given, for validation to refuse.
        owned_by(&mut def, None).unwrap();
        assert_eq!(def.owner.as_deref(), Some("bob"));
    }

    #[test]
    fn only_its_owner_deletes_a_routine() {
        assert_eq!(
            DELETE_NOT_YOURS,
            "routine '{name}' is {owner}'s; only they delete it, in a conversation of theirs"
        );
        let defs: Vec<tau_core::PersonDef> = ["ana", "bob"]
            .iter()
            .map(|name| tau_core::PersonDef {
                name: (*name).into(),
                telegram: None,
                unix_user: None,
                language: None,
            })
            .collect();
        let people = Household::from_config(&defs).unwrap();
        let (ana, bob) = (
            PersonName::parse("ana").unwrap(),
            PersonName::parse("bob").unwrap(),
        );
        let mut def = RoutineDef {
            name: "porch".into(),
            owner: Some("bob".into()),
            ..RoutineDef::default()
        };
        assert_eq!(delete_refusal(&def, &people, &bob), None);
        assert_eq!(
            delete_refusal(&def, &people, &ana).as_deref(),
            Some("routine 'porch' is bob's; only they delete it, in a conversation of theirs")
        );
        // Made before routines had owners: the first person's.
        def.owner = None;
        assert_eq!(delete_refusal(&def, &people, &ana), None);
        assert!(delete_refusal(&def, &people, &bob).is_some());
    }
}
