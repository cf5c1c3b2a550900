//! What every command starts from: the home, the config, the environment and the event
//! bus the audit log listens on.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use tau_agent::Model;
use tau_core::{AuditEvent, EventBus, ToolCatalog};
use tau_models::ModelBuildError;
use tau_protocol::PersonName;
use tau_sandbox::Sandbox;
use tau_state::StateDb;

use crate::errors::usage;
use crate::settings::{Loaded, NO_MODEL_HELP};
use crate::store::ConfiguredStore;
use tau_home::{EnvFn, Home};

/// How long a start waits to learn whether the model answers.
pub(crate) const MODEL_CHECK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

pub(crate) struct Context {
    pub home: Home,
    pub loaded: Loaded,
    pub env: Box<EnvFn>,
    /// Every event of this run; the command subscribes the audit log to it.
    pub events: EventBus,
    /// The store, opened once for the whole run: one connection per process, so no
    /// second open (and close) of `state.db` can drop the locks SQLite holds on it.
    pub state: OnceLock<StateDb>,
}

/// The tools of this run, and the error events of MCP servers that could not be used
/// (emitted once the audit log listens).
pub(crate) struct Tools {
    pub catalog: ToolCatalog,
    pub startup_errors: Vec<AuditEvent>,
    /// Records what discovery says about pinned devices while the tools are in use.
    pub watch: Option<tau_devices::DiscoveryWatch>,
}

impl Context {
    /// The `tau.toml` routines, checked against `catalog` when given.
    pub(crate) fn config_routines(
        &self,
        catalog: Option<&ToolCatalog>,
    ) -> anyhow::Result<Vec<tau_reflex::Routine>> {
        let zone = crate::settings::zone(&self.loaded.config)?;
        let shown = self.config_name();
        tau_reflex::toml_routines(
            &self.loaded.config.routines,
            &zone,
            &*self.env,
            catalog,
            &self.loaded.config.household(),
        )
        .map_err(|e| usage(format!("{shown}: {e}")))
    }

    /// The configured model; exit 2 with the help paragraph when there is none.
    pub(crate) fn model(&self) -> anyhow::Result<Arc<dyn Model>> {
        if !self.loaded.model_configured {
            return Err(usage(NO_MODEL_HELP));
        }
        self.build_model()
    }

    /// The model `[model]` (or `--model`) names, checked and built without connecting; a
    /// bad value names its key and the file, a missing API key its variable. Exit 2.
    pub(crate) fn build_model(&self) -> anyhow::Result<Arc<dyn Model>> {
        tau_models::build_model(&self.loaded.config.model, &*self.env).map_err(|error| {
            match (&error, &self.loaded.path) {
                (ModelBuildError::Config(_), Some(path)) => {
                    usage(format!("{}: {error}", path.display()))
                }
                _ => usage(error.to_string()),
            }
        })
    }

    /// What is wrong with the configured model, said at start: a server that does not
    /// answer, a key it refuses, a model it does not have, each with its provider's hint.
    /// Waits at most [`MODEL_CHECK_WAIT`]; a slower server is left to the first turn.
    pub(crate) async fn model_problem(&self) -> Option<String> {
        match tau_models::check_model(&self.loaded.config.model, &*self.env, MODEL_CHECK_WAIT).await
        {
            tau_models::Reachability::Problem(problem) => Some(problem),
            tau_models::Reachability::Reachable
            | tau_models::Reachability::NotChecked
            | tau_models::Reachability::NoAnswerYet => None,
        }
    }

    /// [`Context::catalog_with_routines`] with the model checked meanwhile.
    pub(crate) async fn conversation_tools(
        &self,
        person: Option<PersonName>,
    ) -> anyhow::Result<(Tools, Option<String>)> {
        let (tools, problem) =
            tokio::join!(self.catalog_with_routines(person), self.model_problem());
        Ok((tools?, problem))
    }

    /// [`Context::catalog`] with the model checked meanwhile: `tau serve`'s shared tools,
    /// each conversation adding the routine tools of its own person.
    pub(crate) async fn hub_tools(&self) -> anyhow::Result<(Tools, Option<String>)> {
        let (tools, problem) = tokio::join!(self.catalog(), self.model_problem());
        Ok((tools?, problem))
    }

    /// How config errors name the file: its path, else `tau.toml`.
    pub(crate) fn config_name(&self) -> String {
        self.loaded
            .path
            .as_ref()
            .map_or_else(|| "tau.toml".to_owned(), |p| p.display().to_string())
    }

    /// True when the workspace in use is the home's own `workspace/`: the config names
    /// none elsewhere.
    pub(crate) fn own_workspace(&self) -> bool {
        self.loaded.config.tools.workspace == self.home.workspace()
    }

    /// Creates the home (see [`Home::create`]); its `workspace/` only when it is the one
    /// in use.
    pub(crate) fn create_home(&self) -> anyhow::Result<()> {
        Ok(self.home.create(self.own_workspace())?)
    }

    /// Refuses a home in which an entry tau owns is a symbolic link (see
    /// [`Home::refuse_links`]).
    pub(crate) fn refuse_home_links(&self) -> anyhow::Result<()> {
        Ok(self.home.refuse_links(self.own_workspace())?)
    }

    /// The zone times are shown in: `[tools.clock] zone`, else the system's; the system's
    /// too when the configured one does not exist (a command that reads only the home
    /// says so and goes on; those that build tools refuse such a config first).
    pub(crate) fn shown_zone(&self) -> jiff::tz::TimeZone {
        crate::settings::zone(&self.loaded.config).unwrap_or_else(|_| jiff::tz::TimeZone::system())
    }

    /// Refuses a workspace that holds what tau trusts (see `tau_tools::check_workspace`).
    pub(crate) fn check_workspace(&self) -> anyhow::Result<()> {
        let programs = self
            .loaded
            .config
            .mcp
            .servers
            .iter()
            .map(|(name, server)| {
                let program = tau_tools::StartedProgram {
                    command: server.command.clone(),
                    args: server.args.clone(),
                };
                (name.clone(), program)
            })
            .collect();
        Ok(tau_tools::check_workspace(
            &self.loaded.config.tools.workspace,
            &self.home,
            self.loaded.path.as_deref(),
            &programs,
            &*self.env,
        )?)
    }

    /// Where the store is: `[state] url` or `TAU_STATE_URL`, else `state.db` in the home.
    pub(crate) fn store_location(&self) -> anyhow::Result<ConfiguredStore> {
        self.loaded
            .config
            .state
            .location(&*self.env, &self.home.state_db())
            .map_err(|e| usage(e.to_string()))
    }

    /// The store, opened (and created: `state.db` in a home that exists, the tables of a
    /// shared store) on first use.
    pub(crate) fn state(&self) -> anyhow::Result<StateDb> {
        if let Some(state) = self.state.get() {
            return Ok(state.clone());
        }
        let mut opened = self.store_location()?.open(&*self.env)?;
        // Of a store several hubs share, this home is one hub (a file's store is one hub's).
        if opened.is_shared() {
            self.create_home()?;
            let hub = tau_home::token_file::load_or_create(&self.home.hub_id())?;
            opened = opened.for_hub(&hub);
        }
        Ok(self.state.get_or_init(|| opened).clone())
    }

    /// The store when it exists; `None`, and nothing created, when `state.db` does not
    /// (a shared store always exists: it is opened as [`Context::state`] does).
    pub(crate) fn existing_state(&self) -> anyhow::Result<Option<StateDb>> {
        if let Some(state) = self.state.get() {
            return Ok(Some(state.clone()));
        }
        match self.store_location()? {
            ConfiguredStore::Home(path) => Ok(StateDb::open_existing(&path)?
                .map(|opened| self.state.get_or_init(|| opened).clone())),
            // A shared store always exists; this home is one of its hubs from the first use.
            ConfiguredStore::Shared(_) => self.state().map(Some),
        }
    }

    /// How commands (and MCP servers started as programs) are confined: tau's own
    /// executable is their launcher, and nothing of tau's home (but the workspace), its
    /// config file or `[tools.command] deny_read` can be read.
    pub(crate) fn sandbox(&self) -> Sandbox {
        let mut protected = vec![self.home.root().to_owned()];
        if let Some(file) = self
            .loaded
            .path
            .clone()
            .or_else(|| tau_home::config_path(None, &*self.env).map(|(path, _)| path))
        {
            protected.push(file);
        }
        let person = (self.env)("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        self.loaded
            .config
            .tools
            .command
            .sandbox(person.as_deref(), &protected)
    }

    /// `[tools]` as this process uses them. On a store several hubs share, the MQTT
    /// client ids carry this hub's id: a broker drops the older of two clients with one
    /// id, so two hubs with the same `tau.toml` on one broker would cut each other off.
    pub(crate) fn tools_config(&self) -> anyhow::Result<Cow<'_, tau_tools::ToolsConfig>> {
        let tools = &self.loaded.config.tools;
        // A file's store is one hub's: nothing to open (the home may not exist yet).
        if matches!(self.store_location()?, ConfiguredStore::Home(_)) {
            return Ok(Cow::Borrowed(tools));
        }
        let state = self.state()?;
        let (true, Some(hub)) = (state.is_shared(), state.hub()) else {
            return Ok(Cow::Borrowed(tools));
        };
        let mut tools = tools.clone();
        tools.mqtt.client_id = hub_client_id(&tools.mqtt.client_id, hub);
        Ok(Cow::Owned(tools))
    }

    /// The routines, switches and runs in `state.db`.
    pub(crate) fn routine_store(&self) -> anyhow::Result<Arc<tau_reflex::RoutineStore>> {
        Ok(Arc::new(tau_reflex::RoutineStore::new(
            self.state()?.routines(),
        )))
    }

    /// Every tool tau runs: the built-in ones and those of the configured MCP servers,
    /// with the tiers tau's manifest gives them. A server that cannot be used is skipped
    /// with a warning on stderr; the rest go on. A workspace across a trust boundary is
    /// refused first.
    pub(crate) async fn catalog(&self) -> anyhow::Result<Tools> {
        self.check_workspace()?;
        let builtins = tau_tools::audited_builtins(
            &*self.tools_config()?,
            &*self.env,
            self.sandbox(),
            Some(self.events.clone()),
        )
        .map_err(|e| usage(e.to_string()))?;
        let mut catalog = ToolCatalog::new();
        // Every tier-2 question flags the words of its arguments a reader could misread.
        catalog.add_card_writer(Arc::new(tau_core::LookalikeWriter));
        catalog.extend(builtins.tools)?;
        catalog.add_card_writer(builtins.card_writer);
        // What a grant of a tool that runs the workspace's files pins.
        catalog.set_workspace_pinner(builtins.pinner);
        let store = self.device_store()?;
        let registry = Arc::new(self.registry(&store)?);
        let watch = self.watch_discovery(&registry, Arc::clone(&store))?;
        // The registry writes the card of every call that names one of its devices.
        catalog.add_card_writer(Arc::new(tau_devices::DeviceCards {
            registry: Arc::clone(&registry),
            store: Some(Arc::clone(&store)),
            confirm_high_risk: self.loaded.config.approval.confirm_high_risk,
        }));
        catalog.extend(self.device_tools(registry, store)?.tools())?;
        let place = tau_mcp::Place {
            sandbox: self.sandbox(),
            workspace: self.loaded.config.tools.workspace.clone(),
        };
        let mcp =
            tau_mcp::connect_servers(&self.loaded.config.mcp, &self.events, &*self.env, &place)
                .await;
        for warning in &mcp.warnings {
            // The message quotes what the server said: escaped, like everything from a peer.
            crate::output::eprint_line(&format!(
                "tau: warning: {}",
                tau_core::display(&warning.to_string())
            ));
        }
        catalog.add_card_writer(mcp.card_writer());
        catalog.extend(mcp.tools)?;
        let unknown = catalog.set_rule_overrides(self.loaded.config.tools.provenance.clone());
        for name in unknown
            .iter()
            .filter(|name| !tau_reflex::ROUTINE_TOOL_NAMES.contains(&name.as_str()))
        {
            if name.contains("__") {
                // An MCP server's tool: the server may be down now, and its rule waits for it.
                crate::output::eprint_line(&format!(
                    "tau: warning: tools.provenance.{}: no such tool is connected now",
                    tau_core::display(name)
                ));
            } else {
                return Err(usage(format!(
                    "{}: tools.provenance.{}: no tool of that name (a rule for a tool that is not there protects nothing)",
                    self.config_name(),
                    tau_core::display(name)
                )));
            }
        }
        Ok(Tools {
            catalog,
            startup_errors: mcp
                .warnings
                .iter()
                .filter_map(tau_mcp::McpWarning::event)
                .collect(),
            watch,
        })
    }

    /// [`Context::catalog`] and the routine tools, for a conversation with `person`
    /// (`tau chat`, `tau tui`; `None` with no `[[people]]`), who owns the routines made
    /// there. `tau mcp` leaves them out: a routine's exemption outlives the call, so it is
    /// granted only where tau itself asks the person.
    pub(crate) async fn catalog_with_routines(
        &self,
        person: Option<PersonName>,
    ) -> anyhow::Result<Tools> {
        let mut tools = self.catalog().await?;
        let routine_tools = self.routine_tools(&tools.catalog)?;
        tools.catalog.extend(routine_tools.tools(person))?;
        Ok(tools)
    }

    /// What the routine tools of a conversation are made of, beside `catalog`.
    pub(crate) fn routine_tools(
        &self,
        catalog: &ToolCatalog,
    ) -> anyhow::Result<crate::hosted::RoutineTools> {
        Ok(crate::hosted::RoutineTools {
            store: self.routine_store()?,
            catalog: catalog.clone(),
            config: self.config_routines(None)?,
            zone: crate::settings::zone(&self.loaded.config)?,
            people: self.loaded.config.household(),
        })
    }
}

/// The longest suffix tau puts after `[tools.mqtt] client_id` (`-discovery`), and the
/// longest id a broker must accept (MQTT 3.1.1).
const LONGEST_CLIENT_SUFFIX: usize = 10;
const MAX_CLIENT_ID: usize = 23;
/// How much of the hub id a client id carries.
const HUB_TAG: usize = 6;

/// `id` cut to leave room for the hub's tag and tau's longest suffix, then `-` and the
/// hub id's first characters: `tau` on hub `1a2b3c…` is `tau-1a2b3c`.
fn hub_client_id(id: &str, hub: &str) -> String {
    let room = MAX_CLIENT_ID - LONGEST_CLIENT_SUFFIX - HUB_TAG - 1;
    let base: String = id.chars().take(room).collect();
    let tag: String = hub.chars().take(HUB_TAG).collect();
    format!("{base}-{tag}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hubs_client_id_carries_its_tag_and_leaves_room_for_every_suffix() {
        assert_eq!(hub_client_id("tau", "1a2b3c4d5e"), "tau-1a2b3c");
        let long = hub_client_id("a-very-long-client-id-x", "1a2b3c4d5e");
        assert_eq!(long, "a-very-1a2b3c");
        assert!(long.len() + "-discovery".len() <= MAX_CLIENT_ID);
        assert!(long.len() + "-routines".len() <= 14 + "-routines".len());
    }
}
