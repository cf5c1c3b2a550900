//! Every routine there is: those of `tau.toml` and those made in conversations, each
//! validated against the tools, with its on/off switch applied. A `tau.toml` routine that
//! does not validate is a config error; a stored one is reported and left out.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use tau_core::{ConfigError, Household, ToolCatalog};

use crate::def::{RoutineDef, defs_from_toml};
use crate::store::{RoutineStore, StoreError};
use crate::validate::{Checks, Origin, Routine, validate};

/// The routines, and the stored ones that could not be used (name, why).
#[derive(Debug, Default)]
pub struct Book {
    pub routines: Vec<Routine>,
    pub problems: Vec<(String, String)>,
}

impl Book {
    pub fn get(&self, name: &str) -> Option<&Routine> {
        self.routines.iter().find(|r| r.name() == name)
    }
}

/// Validates the `tau.toml` routines.
pub fn config_routines(
    defs: &[RoutineDef],
    checks: &Checks<'_>,
) -> Result<Vec<Routine>, ConfigError> {
    defs.iter()
        .map(|def| validate(def.clone(), Origin::Config, checks))
        .collect()
}

/// The routines of `tau.toml` as written (`[[routines]]`), checked against `tools` when
/// given; without them every key, trigger and action is checked, and the tools and their
/// schemas where the routines run; each owner is one of `people`.
pub fn toml_routines(
    items: &[toml::Value],
    zone: &TimeZone,
    env: &dyn Fn(&str) -> Option<String>,
    tools: Option<&ToolCatalog>,
    people: &Household,
) -> Result<Vec<Routine>, ConfigError> {
    let checks = Checks {
        tools,
        zone,
        env,
        now: Timestamp::now(),
        at_must_be_future: false,
        webhooks: None,
        people,
    };
    config_routines(&defs_from_toml(items.to_vec())?, &checks)
}

/// The `tau.toml` routines (already validated) and the stored ones, switches applied.
pub fn load(
    config: &[Routine],
    store: &RoutineStore,
    checks: &Checks<'_>,
) -> Result<Book, StoreError> {
    let mut book = Book {
        routines: config.to_vec(),
        problems: Vec::new(),
    };
    for row in store.stored()? {
        match row {
            Ok(stored) => {
                let name = stored.def.name.clone();
                if book.get(&name).is_some() {
                    book.problems.push((
                        name,
                        "a routine of this name is set up in tau.toml, which wins".to_owned(),
                    ));
                    continue;
                }
                let origin = Origin::Conversation {
                    approved_hash: stored.approved_hash,
                };
                match validate(stored.def, origin, checks) {
                    Ok(routine) => book.routines.push(routine),
                    Err(error) => book.problems.push((name, error.to_string())),
                }
            }
            Err(problem) => book.problems.push(problem),
        }
    }
    let switches = store.switches()?;
    for routine in &mut book.routines {
        if let Some(switch) = switches.get(routine.name()) {
            routine.enabled = switch.enabled;
        }
    }
    book.routines.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(book)
}
