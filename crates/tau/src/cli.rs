//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// tau: a personal agent hub. Tier-2 tools (physical actions, self-written code) run only
/// after you say yes.
#[derive(Debug, Parser)]
#[command(name = "tau", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// Where tau keeps state.db, audit.jsonl, logs/ and workspace/ [env: TAU_HOME]
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// The config file (default: tau.toml in the XDG config directory; none is needed)
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The model, overriding [model] spec: ollama:MODEL, openai:MODEL, anthropic:MODEL,
    /// bedrock:MODEL, openai-compatible:MODEL@URL or replay:FILE
    #[arg(long, global = true, value_name = "SPEC")]
    pub model: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Chat in the terminal; prompts come line by line from the terminal or a pipe
    Chat {
        /// Resume this conversation, or start it under this name
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        #[command(flatten)]
        answers: AnswerArgs,
    },
    /// Chat full-screen: a streaming transcript and an approval card; without --session,
    /// pick a recent session or a new one
    Tui {
        /// Resume this conversation, or start it under this name
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
    },
    /// A scripted conversation, offline, with real approval prompts
    Demo {
        #[command(flatten)]
        answers: AnswerArgs,
    },
    /// The hub: TauBar (the web page) and every channel, one turn at a time per
    /// conversation; tier-2 questions are stored and survive a restart
    Serve {
        /// Print TauBar's token (made on first use) and exit
        #[arg(long)]
        print_token: bool,
    },
    /// Stored conversations
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Every tool with its tier and effect
    Tools,
    /// Routines: triggers that call tools through the gate
    Routines {
        #[command(subcommand)]
        command: RoutinesCommand,
    },
    /// Serve tau's tools to an MCP client, on stdio or (with --http) streamable HTTP;
    /// tier-2 calls are asked back to the client's user or refused
    Mcp {
        /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (loopback unless
        /// [mcp.server] token_env names a bearer token)
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
    /// The audit log
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The configuration
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// What this machine and config give tau: the sandbox's layers, the home's modes,
    /// the workspace boundary, the model's server; exit 1 when something needed is missing
    Doctor,
    /// Shell completions
    Completions { shell: clap_complete::Shell },
}

/// Where the answers to approval prompts come from.
#[derive(Debug, Args)]
pub(crate) struct AnswerArgs {
    /// When stdin is not a terminal, read the answers to approval prompts from it too, each
    /// from the next line, as a script or a test writes them. Without it they come from the
    /// controlling terminal, and with none every tier-2 call is refused
    #[arg(long)]
    pub answers_from_stdin: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// Every session, most recent first
    List,
    /// One session's messages
    Show {
        name: String,
        /// The messages as a JSON array in the Converse shape (the replay format)
        #[arg(long)]
        json: bool,
    },
    /// Deletes a session and its messages
    Delete { name: String },
}

#[derive(Debug, Subcommand)]
pub(crate) enum RoutinesCommand {
    /// Every routine with its trigger, action and last run
    List,
    /// One routine: what it does, its exemption and its last runs
    Show { name: String },
    /// Runs a routine's action now, through the gate; calls it is not exempt for are
    /// asked here
    Run {
        name: String,
        #[command(flatten)]
        answers: AnswerArgs,
    },
    /// Switches a routine on
    Enable { name: String },
    /// Switches a routine off; it stays set up
    Disable { name: String },
}

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Checks that no line of audit.jsonl was edited, dropped or reordered
    Verify,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Prints the effective config, or the first error with its key
    Check,
}
