//! tau: the command line. Parses arguments, loads the config, and runs a command.
//!
//! Owns the audit log and the commands; the home and its files are tau-home's, the chat
//! itself tau-terminal's, the policy tau-core's. Exit codes: 0 done,
//! 1 failed, 2 a usage or configuration mistake. Nothing prints but through `output`: a
//! reader that went away never makes tau panic.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod approvals;
mod audit;
mod backup;
mod chat;
mod cli;
mod commands;
mod config_check;
mod context;
mod demo;
mod devices;
mod doctor;
mod errors;
mod grants;
mod hosted;
mod hub_lease;
mod mcp;
mod output;
mod owner;
mod people;
mod people_file;
mod routines;
mod serve;
mod serve_banner;
mod service;
mod settings;
mod start_checks;
mod store;
mod terminal;
mod tui;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::cli::{
    AuditCommand, BadConfig, Cli, Command, ConfigCommand, DevicesCommand, GrantsCommand,
    PeopleCommand, RoutinesCommand, ServiceCommand, SessionsCommand,
};
use crate::context::Context;
use crate::errors::exit_code;
use tau_home::Home;

fn main() -> ExitCode {
    // tau started again as the sandbox launcher: before any thread or argument parsing.
    if let Some(code) = tau_sandbox::launcher_main() {
        return code;
    }
    close_own_process();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            output::eprint_line(&format!("tau: cannot start: {error}"));
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(run(cli));
    // stdin is read on a blocking thread that cannot be interrupted; do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(error) => {
            // An error may quote a model's server or an MCP peer; line breaks stay.
            output::eprint_line(&format!(
                "tau: {}",
                tau_core::display_multiline(&format!("{error:#}"))
            ));
            ExitCode::from(exit_code(&error))
        }
    }
}

/// Makes tau's process non-dumpable, before any secret is read: `/proc/<tau>/environ`,
/// `mem`, `fd` and `maps` then belong to root and a process of the same user (a command
/// tau ran, an MCP server, anything else the person runs) cannot read tau's keys and tokens
/// there or attach to it; no core dump holds them either. Programs tau starts are dumpable
/// again after their `exec`, as usual.
fn close_own_process() {
    if let Err(error) =
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
    {
        output::eprint_line(&format!(
            "tau: warning: cannot close its process to other programs of this user: {error}"
        ));
    }
}

/// What every command but `completions` does before it runs, by what it does with a bad
/// config ([`BadConfig`]): refuse a home with a planted link, and for a command that reads
/// only the home, say what is wrong with the config in one line.
fn before_command(
    ctx: &Context,
    bad_config: BadConfig,
    config_error: Option<&anyhow::Error>,
) -> anyhow::Result<()> {
    // Where the store is, and a password where none may be, are said before anything runs
    // (`tau doctor` says it among its findings).
    if bad_config != BadConfig::Report {
        ctx.store_location()?;
    }
    match bad_config {
        BadConfig::Refuse => ctx.refuse_home_links(),
        BadConfig::GoOn => {
            if let Some(error) = config_error {
                output::eprint_line(&format!(
                    "tau: warning: {} (ignored: this command reads only tau's home)",
                    tau_core::display(&format!("{error:#}"))
                ));
            } else if let Err(error) = settings::zone(&ctx.loaded.config) {
                output::eprint_line(&format!(
                    "tau: warning: {}: {}; times are shown in the system's zone",
                    ctx.config_name(),
                    tau_core::display(&format!("{error:#}"))
                ));
            }
            // Never the workspace: these commands do not touch it.
            Ok(ctx.home.refuse_links(false)?)
        }
        // `tau doctor` says both among its findings.
        BadConfig::Report => Ok(()),
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let env: Box<tau_home::EnvFn> = Box::new(|name| std::env::var(name).ok());
    if let Command::Completions { shell } = cli.command {
        // Into memory first: clap_complete panics when the writer it is handed fails.
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "tau", &mut script);
        output::print(&String::from_utf8_lossy(&script));
        return Ok(ExitCode::SUCCESS);
    }
    let home = Home::resolve(cli.home.as_deref(), &*env)?;
    let model_flag = cli.model.clone();
    let bad_config = cli.command.bad_config();
    let (loaded, config_error) =
        match settings::load(cli.config.as_deref(), &*env, &home, cli.model.as_deref()) {
            Ok(loaded) => (loaded, None),
            Err(error) if bad_config != BadConfig::Refuse => (
                settings::without_file(&home, cli.model.as_deref()),
                Some(error),
            ),
            Err(error) => return Err(error),
        };
    let ctx = Context {
        home,
        loaded,
        env,
        events: tau_core::EventBus::new(),
        state: std::sync::OnceLock::new(),
    };
    before_command(&ctx, bad_config, config_error.as_ref())?;
    match cli.command {
        Command::Chat {
            session,
            answers,
            person,
        } => {
            let person = terminal::terminal_person(&ctx, person.as_deref())?;
            let session = session.as_deref().map(commands::session_id).transpose()?;
            let model = ctx.model()?;
            ctx.create_home()?;
            tau_home::logging::init(&ctx.home, &*ctx.env, tau_models::is_unscrubbed_log_target)?;
            let (tools, problem) = ctx.conversation_tools(person.clone()).await?;
            if let Some(problem) = &problem {
                output::eprint_line(&format!("tau: warning: {}", tau_core::display(problem)));
            }
            let ended = chat::run(
                &ctx,
                chat::Chat {
                    session,
                    model,
                    tools,
                    prompts: None,
                    answers_from_stdin: answers.answers_from_stdin,
                    person,
                },
            )
            .await?;
            return Ok(ended.exit_code());
        }
        Command::Tui { session, person } => {
            let person = terminal::terminal_person(&ctx, person.as_deref())?;
            let session = session.as_deref().map(commands::session_id).transpose()?;
            let model = ctx.model()?;
            ctx.create_home()?;
            tau_home::logging::init(&ctx.home, &*ctx.env, tau_models::is_unscrubbed_log_target)?;
            let (tools, problem) = ctx.conversation_tools(person.clone()).await?;
            let warnings = problem.into_iter().collect();
            return tui::run(&ctx, session, model, tools, warnings, person).await;
        }
        Command::Demo { answers } => demo::run(&ctx, answers.answers_from_stdin).await?,
        Command::Serve { print_token } => serve::run(&ctx, print_token).await?,
        Command::Sessions { command } => match command {
            SessionsCommand::List { all } => {
                output::print(&commands::sessions_list(&ctx, all, None)?);
            }
            SessionsCommand::Rename { name, title } => {
                output::print(&commands::sessions_rename(&ctx, &name, &title)?);
            }
            SessionsCommand::Search { text } => {
                output::print(&commands::sessions_list(&ctx, true, Some(&text))?);
            }
            SessionsCommand::Show { name, json } => {
                output::print(&commands::sessions_show(&ctx, &name, json)?);
            }
            SessionsCommand::Delete { name } => {
                output::print(&commands::sessions_delete(&ctx, &name)?);
            }
        },
        Command::Approvals => output::print(&approvals::list(&ctx)?),
        Command::Grants { command } => match command {
            GrantsCommand::List => output::print(&grants::list(&ctx)?),
            GrantsCommand::Show { id } => output::print(&grants::show(&ctx, &id)?),
            GrantsCommand::Revoke { id: Some(id), .. } => {
                output::print(&grants::revoke(&ctx, &id)?);
            }
            GrantsCommand::Revoke { id: None, .. } => output::print(&grants::revoke_all(&ctx)?),
            GrantsCommand::Stats => output::print(&audit::grant_stats(&ctx)?),
        },
        Command::Tools => {
            ctx.create_home()?;
            let tools = ctx.catalog_with_routines(None).await?;
            output::print(&tau_core::tools_table(&tools.catalog));
        }
        Command::Devices { command } => match command {
            DevicesCommand::List => output::print(&devices::list(&ctx)?),
            DevicesCommand::Show { name } => output::print(&devices::show(&ctx, &name)?),
            DevicesCommand::Add(add) => output::print(&devices::add(&ctx, &add)?),
            DevicesCommand::Remove { name } => output::print(&devices::remove(&ctx, &name)?),
            DevicesCommand::Discover { prefix, wait } => {
                output::print(&devices::discover(&ctx, &prefix, wait).await?);
            }
            DevicesCommand::Pin(pin) => output::print(&devices::pin(&ctx, &pin)?),
        },
        Command::People { command } => output::print(&match command {
            PeopleCommand::List => people::list(&ctx)?,
            PeopleCommand::Add(add) => people::add(&ctx, &add)?,
            PeopleCommand::Remove { name } => people::remove(&ctx, &name)?,
            PeopleCommand::Token { name, revoke } => people::token(&ctx, &name, revoke)?,
            PeopleCommand::Invite { name } => people::invite(&ctx, &name)?,
        }),
        Command::Routines { command } => match command {
            RoutinesCommand::List => output::print(&routines::list(&ctx).await?),
            RoutinesCommand::Show { name } => output::print(&routines::show(&ctx, &name).await?),
            RoutinesCommand::Run { name, answers } => {
                if !routines::run(&ctx, &name, answers.answers_from_stdin).await? {
                    return Ok(ExitCode::from(1));
                }
            }
            RoutinesCommand::Enable { name } => {
                output::print(&routines::switch(&ctx, &name, true).await?);
            }
            RoutinesCommand::Disable { name } => {
                output::print(&routines::switch(&ctx, &name, false).await?);
            }
        },
        Command::Mcp { http } => mcp::run(&ctx, http).await?,
        Command::Audit { command } => {
            let (report, intact) = match command {
                AuditCommand::Verify { from } => audit::verify_command(&ctx, from.as_deref())?,
                AuditCommand::Head => audit::head_command(&ctx)?,
            };
            output::print(&report);
            if !intact {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Config {
            command: ConfigCommand::Check,
        } => output::print(&config_check::run(&ctx)?),
        Command::Service { command } => match command {
            ServiceCommand::Unit(scope) => {
                output::print(&service::unit(&ctx, scope.system, model_flag.as_deref())?);
            }
            ServiceCommand::Install { scope, force } => output::print(&service::install(
                &ctx,
                scope.system,
                model_flag.as_deref(),
                force,
            )?),
        },
        Command::Backup { file } => output::print(&backup::backup(&ctx, &file)?),
        Command::Restore { file } => output::print(&backup::restore(&ctx, &file)?),
        Command::Doctor => {
            let (report, healthy) = doctor::run(&ctx, config_error.as_ref()).await;
            output::print(&report);
            if !healthy {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Completions { .. } => {}
    }
    Ok(ExitCode::SUCCESS)
}
