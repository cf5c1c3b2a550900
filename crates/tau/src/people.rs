//! `tau people`: the household. `list` reads `[[people]]` (and which people hold a TauBar
//! token of their own); `add` and `remove` edit `tau.toml` (`people_file.rs`); `token`
//! makes, replaces or revokes a person's own TauBar bearer token and `invite` a one-time
//! link to enroll a passkey, both kept in `state.db` only as their SHA-256.

use std::path::PathBuf;

use jiff::{SignedDuration, Timestamp};
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
        state.people().revoke_token(&person)?;
    }
    Ok(format!(
        "removed {name} from {}; their TauBar token no longer works; a running `tau serve` forgets them after a restart\n",
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
    let now = Timestamp::now();
    let expires = now
        .checked_add(SignedDuration::from_hours(INVITE_HOURS))
        .map_err(|e| anyhow::anyhow!("cannot tell when the invite ends: {e}"))?;
    ctx.state()?
        .people()
        .add_invite(&person, &secret_sha256(&secret), now, expires)?;
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

/// The household as the hub holds it, with who alone may answer which questions.
pub(crate) fn hub_people(config: &crate::settings::TauConfig) -> tau_hub::HubPeople {
    tau_hub::HubPeople {
        household: config.household(),
        approvers: std::sync::Arc::new(|_| None),
    }
}
