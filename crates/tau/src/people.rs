//! `tau people`: the household. `list` reads `[[people]]` (and which people hold a TauBar
//! token of their own); `add` and `remove` edit `tau.toml` (`people_file.rs`); `token`
//! makes, replaces or revokes a person's own TauBar bearer token and `invite` a one-time
//! link to enroll a passkey, both kept in `state.db` only as their SHA-256.

use std::path::PathBuf;

use jiff::Timestamp;
use tau_core::{Household, PersonDef, display};
use tau_protocol::PersonName;
use tau_state::secret_sha256;

use crate::cli::AddPerson;
use crate::context::Context;
use crate::errors::usage;
use crate::people_file;

/// How long an invite link can be used.
const INVITE_HOURS: i64 = 24;

/// What `list` says of a home that names nobody.
const NOBODY: &str = "no [[people]] in tau.toml: tau knows one person, owner (TauBar's token, Telegram's owners, whoever sits at this terminal); add one with `tau people add NAME`\n";

pub(crate) fn list(ctx: &Context) -> anyhow::Result<String> {
    let household = ctx.loaded.config.household();
    if !household.is_named() {
        return Ok(NOBODY.to_owned());
    }
    let people = ctx.existing_state()?.map(|state| state.people());
    let mut out = String::new();
    for person in household.people() {
        let has_token = match &people {
            Some(people) => people.has_token(&person.name)?,
            None => false,
        };
        let mut line = person.name.to_string();
        if let Some(id) = person.telegram {
            line.push_str(&format!("  telegram {id}"));
        }
        if let Some(user) = &person.unix_user {
            line.push_str(&format!("  unix user {}", display(user)));
        }
        if let Some(language) = person.language {
            line.push_str(&format!("  language {}", language.code()));
        }
        line.push_str(if has_token {
            "  TauBar token: yes"
        } else {
            "  TauBar token: none"
        });
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(first) = household.people().first() {
        out.push_str(&format!(
            "TauBar's own token (`tau serve --print-token`) is {}'s\n",
            first.name
        ));
    }
    Ok(out)
}

/// The file `add` and `remove` edit: the one read, else where tau looks for one.
fn config_file(ctx: &Context) -> anyhow::Result<PathBuf> {
    ctx.loaded
        .path
        .clone()
        .or_else(|| tau_home::config_path(None, &*ctx.env).map(|(path, _)| path))
        .ok_or_else(|| usage("no config file: set HOME or XDG_CONFIG_HOME, or pass --config FILE"))
}

fn read_config(path: &std::path::Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(usage(format!("cannot read {}: {error}", path.display()))),
    }
}

pub(crate) fn add(ctx: &Context, add: &AddPerson) -> anyhow::Result<String> {
    let person = PersonDef {
        name: add.name.clone(),
        telegram: add.telegram,
        unix_user: add.unix_user.clone(),
        language: add.language.clone(),
    };
    let mut people = ctx.loaded.config.people.clone();
    people.push(person.clone());
    Household::from_config(&people).map_err(|e| usage(e.to_string()))?;
    let path = config_file(ctx)?;
    let text = read_config(&path)?;
    let edited = people_file::with_person(&text, &person);
    if people_file::people_in(&edited).as_ref() != Some(&people) {
        return Err(usage(format!(
            "{} does not read as tau expects; add this to it yourself:\n\n{}",
            path.display(),
            people_file::block(&person)
        )));
    }
    people_file::replace(&path, &edited)?;
    Ok(format!(
        "added {} to {}; a running `tau serve` knows them after a restart\n",
        person.name,
        path.display()
    ))
}

pub(crate) fn remove(ctx: &Context, name: &str) -> anyhow::Result<String> {
    let household = ctx.loaded.config.household();
    let person = known(&household, name)?;
    let path = config_file(ctx)?;
    let text = read_config(&path)?;
    let mut people = ctx.loaded.config.people.clone();
    people.retain(|p| p.name != name);
    let edited = people_file::without_person(&text, name)
        .filter(|edited| people_file::people_in(edited).as_ref() == Some(&people))
        .ok_or_else(|| {
            usage(format!(
                "cannot find {name}'s [[people]] entry in {} as tau writes one; remove it there yourself",
                path.display()
            ))
        })?;
    people_file::replace(&path, &edited)?;
    if let Some(state) = ctx.existing_state()? {
        // A conversation nobody was recorded for is the first person's; recorded now, it
        // does not pass to whoever comes first once they are gone.
        if household.first() == person {
            let people = state.people();
            for session in state.sessions().list_sessions()? {
                people.claim_conversation(&session.id, &person)?;
            }
        }
        state.people().revoke_token(&person)?;
        // A passkey signs in and approves as much as the token: it goes with them.
        state.passkeys().forget_person(person.as_str())?;
    }
    Ok(format!(
        "removed {name} from {}; their TauBar token, passkeys and sign-ins no longer work; a running `tau serve` forgets them after a restart\n",
        path.display()
    ))
}

/// `name` as the household knows them; exit 2 otherwise.
fn known(household: &Household, name: &str) -> anyhow::Result<PersonName> {
    household.get(name).map(|p| p.name.clone()).ok_or_else(|| {
        usage(format!(
            "no person is called '{name}'; `tau people list` names them"
        ))
    })
}

pub(crate) fn token(ctx: &Context, name: &str, revoke: bool) -> anyhow::Result<String> {
    let person = known(&ctx.loaded.config.household(), name)?;
    ctx.create_home()?;
    let people = ctx.state()?.people();
    if revoke {
        return Ok(if people.revoke_token(&person)? {
            format!("{person}'s TauBar token is revoked\n")
        } else {
            format!("{person} had no TauBar token\n")
        });
    }
    let secret = tau_home::token_file::generate()?;
    people.set_token(&person, &secret_sha256(&secret), Timestamp::now())?;
    Ok(format!("{secret}\n"))
}

pub(crate) fn invite(ctx: &Context, name: &str) -> anyhow::Result<String> {
    let person = known(&ctx.loaded.config.household(), name)?;
    ctx.create_home()?;
    let secret = tau_home::token_file::generate()?;
    // The link's secret is a passkey enrollment's: TauBar's `/enroll` takes it once.
    let now = Timestamp::now().as_second();
    ctx.state()?.passkeys().add_enrollment(
        &secret,
        person.as_str(),
        now,
        now + INVITE_HOURS * 3600,
    )?;
    Ok(format!(
        "{}/enroll#{secret}\n(for {person}, once, within {INVITE_HOURS} hours)\n",
        web_base(ctx)
    ))
}

/// Where TauBar is reached: its first allowed host, else its listen address.
fn web_base(ctx: &Context) -> String {
    let web = &ctx.loaded.config.web;
    match web.hosts.first() {
        Some(host) => format!("http://{host}"),
        None => format!("http://{}", web.listen),
    }
}

/// Who sits at this terminal (`--person`, else the person whose `unix_user` is this
/// account, else the only person); several and none matching exits 2 naming the flag.
pub(crate) fn at_terminal(ctx: &Context, flag: Option<&str>) -> anyhow::Result<PersonName> {
    let user = (ctx.env)("USER").or_else(|| (ctx.env)("LOGNAME"));
    ctx.loaded
        .config
        .household()
        .at_terminal(flag, user.as_deref())
        .map_err(|e| usage(e.to_string()))
}

/// The household as the hub holds it, with who alone may answer which questions.
pub(crate) fn hub_people(config: &crate::settings::TauConfig) -> tau_hub::HubPeople {
    let approvers = Approvers::from_config(config);
    tau_hub::HubPeople {
        household: config.household(),
        approvers: std::sync::Arc::new(move |row| {
            // The stored arguments are tau's own canonical JSON.
            let arguments = serde_json::from_str(&row.arguments).unwrap_or_default();
            approvers.of(&row.tool, &arguments)
        }),
    }
}

/// Who alone may answer a question, as `tau.toml` names them: `[tools.approvers]` by
/// tool, `approvers` on a `[[devices]]` entry (its `device_set` calls) and on an
/// `[mcp.servers.NAME]` entry (every tool of that server).
#[derive(Debug, Clone, Default)]
pub(crate) struct Approvers {
    tools: std::collections::BTreeMap<String, Vec<String>>,
    devices: std::collections::BTreeMap<String, Vec<String>>,
    servers: std::collections::BTreeMap<String, Vec<String>>,
}

/// The tool that acts on a device (its `device` argument names which).
const DEVICE_SET: &str = "device_set";

impl Approvers {
    pub(crate) fn from_config(config: &crate::settings::TauConfig) -> Self {
        let named = |list: &Vec<String>| !list.is_empty();
        Self {
            tools: config
                .tools
                .approvers
                .iter()
                .filter(|(_, list)| named(list))
                .map(|(tool, list)| (tool.clone(), list.clone()))
                .collect(),
            devices: config
                .devices
                .iter()
                .filter(|device| named(&device.approvers))
                .map(|device| (device.name.clone(), device.approvers.clone()))
                .collect(),
            servers: config
                .mcp
                .servers
                .iter()
                .filter(|(_, entry)| named(&entry.approvers))
                .map(|(server, entry)| (server.clone(), entry.approvers.clone()))
                .collect(),
        }
    }

    /// Every list with where it was written, for the check at start.
    fn lists(&self) -> impl Iterator<Item = (String, &Vec<String>)> {
        let tools = self
            .tools
            .iter()
            .map(|(tool, list)| (format!("tools.approvers.{tool}"), list));
        let devices = self
            .devices
            .iter()
            .map(|(device, list)| (format!("devices '{device}': approvers"), list));
        let servers = self
            .servers
            .iter()
            .map(|(server, list)| (format!("mcp.servers.{server}.approvers"), list));
        tools.chain(devices).chain(servers)
    }

    /// Checks that each approver is a person of `household`.
    pub(crate) fn check(&self, household: &Household) -> Result<(), String> {
        for (key, list) in self.lists() {
            for name in list {
                if !household.is_named() || household.get(name).is_none() {
                    return Err(format!(
                        "{key}: '{name}' is not a person of [[people]]; approvers name people there"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Who alone may answer a call of `tool` with `arguments`.
    pub(crate) fn of(&self, tool: &str, arguments: &serde_json::Value) -> Option<Vec<PersonName>> {
        let list = self.tools.get(tool).or_else(|| {
            if tool == DEVICE_SET {
                let device = arguments.get("device")?.as_str()?;
                self.devices.get(device)
            } else {
                let (server, _) = tool.split_once("__")?;
                self.servers.get(server)
            }
        })?;
        Some(
            list.iter()
                .filter_map(|name| PersonName::parse(name).ok())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn names(list: &[&str]) -> Option<Vec<PersonName>> {
        Some(list.iter().map(|n| PersonName::parse(n).unwrap()).collect())
    }

    #[test]
    fn a_tool_a_device_and_a_server_name_their_approvers() {
        let config: crate::settings::TauConfig = toml::from_str(
            r#"
            [tools.approvers]
            run_command = ["ana"]

            [[devices]]
            name = "front-door"
            label = "Front door"
            kind = "lock"
            command_topic = "home/door/set"
            actions = { lock = "LOCK", unlock = "UNLOCK" }
            approvers = ["ana", "bob"]

            [mcp.servers.office]
            command = "office"
            approvers = ["cyd"]
            "#,
        )
        .unwrap();
        let approvers = Approvers::from_config(&config);
        assert_eq!(approvers.of("run_command", &json!({})), names(&["ana"]));
        assert_eq!(
            approvers.of(
                DEVICE_SET,
                &json!({"device": "front-door", "action": "unlock"})
            ),
            names(&["ana", "bob"])
        );
        assert_eq!(approvers.of(DEVICE_SET, &json!({"device": "lamp"})), None);
        assert_eq!(
            approvers.of("office__send_email", &json!({})),
            names(&["cyd"])
        );
        assert_eq!(approvers.of("write_file", &json!({})), None);
        assert_eq!(
            approvers.check(&Household::default()),
            Err("tools.approvers.run_command: 'ana' is not a person of [[people]]; approvers name people there".to_owned())
        );
    }
}
