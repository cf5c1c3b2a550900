//! tau: the command line. Parses arguments, loads the config, and runs a command.
//!
//! Owns the home directory layout, the audit log, the file log, session locks and the
//! commands; the chat itself is tau-terminal's, the policy tau-core's. Exit codes: 0 done,
//! 1 failed, 2 a usage or configuration mistake.

mod approvals;
mod audit;
mod boundary;
mod chat;
mod chat_history;
mod cli;
mod commands;
mod config_check;
mod context;
mod decisions;
mod demo;
mod devices;
mod doctor;
mod errors;
mod grant_stats;
mod grants;
mod hosted;
mod lock;
mod logging;
mod mcp;
mod paths;
mod private;
mod routines;
mod serve;
mod settings;
mod signals;
mod token_file;
mod tui;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::cli::{
    AuditCommand, Cli, Command, ConfigCommand, DevicesCommand, GrantsCommand, RoutinesCommand,
    SessionsCommand,
};
use crate::context::Context;
use crate::errors::exit_code;
use crate::paths::Home;

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
            eprintln!("tau: cannot start: {error}");
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
            eprintln!(
                "tau: {}",
                tau_core::display_multiline(&format!("{error:#}"))
            );
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
        eprintln!("tau: warning: cannot close its process to other programs of this user: {error}");
    }
}

fn print(text: &str) {
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let env: Box<paths::EnvFn> = Box::new(|name| std::env::var(name).ok());
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(shell, &mut Cli::command(), "tau", &mut std::io::stdout());
        return Ok(ExitCode::SUCCESS);
    }
    let home = Home::resolve(cli.home.as_deref(), &*env)?;
    let loaded = settings::load(cli.config.as_deref(), &*env, &home, cli.model.as_deref())?;
    let ctx = Context {
        home,
        loaded,
        env,
        events: tau_core::EventBus::new(),
        state: std::sync::OnceLock::new(),
    };
    match cli.command {
        Command::Chat { session, answers } => {
            let session = session.as_deref().map(commands::session_id).transpose()?;
            let model = ctx.model()?;
            ctx.home.create()?;
            logging::init(&ctx.home, &*ctx.env)?;
            let (tools, problem) = ctx.conversation_tools().await?;
            if let Some(problem) = &problem {
                eprintln!("tau: warning: {}", tau_core::display(problem));
            }
            let ended = chat::run(
                &ctx,
                chat::Chat {
                    session,
                    model,
                    tools,
                    prompts: None,
                    answers_from_stdin: answers.answers_from_stdin,
                },
            )
            .await?;
            return Ok(ended.exit_code());
        }
        Command::Tui { session } => {
            let session = session.as_deref().map(commands::session_id).transpose()?;
            let model = ctx.model()?;
            ctx.home.create()?;
            logging::init(&ctx.home, &*ctx.env)?;
            let (tools, problem) = ctx.conversation_tools().await?;
            return tui::run(&ctx, session, model, tools, problem.into_iter().collect()).await;
        }
        Command::Demo { answers } => demo::run(&ctx, answers.answers_from_stdin).await?,
        Command::Serve { print_token } => serve::run(&ctx, print_token).await?,
        Command::Sessions { command } => match command {
            SessionsCommand::List { all } => print(&commands::sessions_list(&ctx, all, None)?),
            SessionsCommand::Rename { name, title } => {
                print(&commands::sessions_rename(&ctx, &name, &title)?);
            }
            SessionsCommand::Search { text } => {
                print(&commands::sessions_list(&ctx, true, Some(&text))?);
            }
            SessionsCommand::Show { name, json } => {
                print(&commands::sessions_show(&ctx, &name, json)?);
            }
            SessionsCommand::Delete { name } => print(&commands::sessions_delete(&ctx, &name)?),
        },
        Command::Approvals => print(&approvals::list(&ctx)?),
        Command::Grants { command } => match command {
            GrantsCommand::List => print(&grants::list(&ctx)?),
            GrantsCommand::Show { id } => print(&grants::show(&ctx, &id)?),
            GrantsCommand::Revoke { id: Some(id), .. } => print(&grants::revoke(&ctx, &id)?),
            GrantsCommand::Revoke { id: None, .. } => print(&grants::revoke_all(&ctx)?),
            GrantsCommand::Stats => print(&grant_stats::stats(&ctx)?),
        },
        Command::Tools => {
            ctx.home.create()?;
            let tools = ctx.catalog_with_routines().await?;
            print(&commands::tools(&tools.catalog));
        }
        Command::Devices { command } => match command {
            DevicesCommand::List => print(&devices::list(&ctx)?),
            DevicesCommand::Show { name } => print(&devices::show(&ctx, &name)?),
            DevicesCommand::Add(add) => print(&devices::add(&ctx, &add)?),
            DevicesCommand::Remove { name } => print(&devices::remove(&ctx, &name)?),
            DevicesCommand::Discover { prefix, wait } => {
                print(&devices::discover(&ctx, &prefix, wait).await?);
            }
            DevicesCommand::Pin(pin) => print(&devices::pin(&ctx, &pin)?),
        },
        Command::Routines { command } => match command {
            RoutinesCommand::List => print(&routines::list(&ctx).await?),
            RoutinesCommand::Show { name } => print(&routines::show(&ctx, &name).await?),
            RoutinesCommand::Run { name, answers } => {
                if !routines::run(&ctx, &name, answers.answers_from_stdin).await? {
                    return Ok(ExitCode::from(1));
                }
            }
            RoutinesCommand::Enable { name } => print(&routines::switch(&ctx, &name, true).await?),
            RoutinesCommand::Disable { name } => {
                print(&routines::switch(&ctx, &name, false).await?);
            }
        },
        Command::Mcp { http } => mcp::run(&ctx, http).await?,
        Command::Audit { command } => {
            let (report, intact) = match command {
                AuditCommand::Verify { from } => audit::verify_command(&ctx, from.as_deref())?,
                AuditCommand::Head => audit::head_command(&ctx)?,
            };
            print(&report);
            if !intact {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Config {
            command: ConfigCommand::Check,
        } => print(&config_check::run(&ctx)?),
        Command::Doctor => {
            let (report, healthy) = doctor::run(&ctx).await;
            print(&report);
            if !healthy {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Completions { .. } => {}
    }
    Ok(ExitCode::SUCCESS)
}
