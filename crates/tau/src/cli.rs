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
        /// Who sits here, when tau.toml names several people and none by this unix user
        #[arg(long, value_name = "NAME")]
        person: Option<String>,
        #[command(flatten)]
        answers: AnswerArgs,
    },
    /// Chat full-screen: a streaming transcript and an approval card; without --session,
    /// pick a recent session or a new one
    Tui {
        /// Resume this conversation, or start it under this name
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        /// Who sits here, when tau.toml names several people and none by this unix user
        #[arg(long, value_name = "NAME")]
        person: Option<String>,
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
    /// Every question that waits for you, on every channel: its id, what it would run and
    /// where it is answered (only the channel that asked may answer it)
    Approvals,
    /// Grants ("yes, and allow this again"): what each covers, where, until when, its uses;
    /// and their revoke
    Grants {
        #[command(subcommand)]
        command: GrantsCommand,
    },
    /// Every tool with its tier and effect
    Tools,
    /// Devices tau knows by name: list, add, remove, and Home Assistant discovery
    Devices {
        #[command(subcommand)]
        command: DevicesCommand,
    },
    /// The household's people ([[people]] in tau.toml): list, add, remove, a person's own
    /// TauBar token, and a one-time link to enroll a passkey
    People {
        #[command(subcommand)]
        command: PeopleCommand,
    },
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
    /// Run `tau serve` as a systemd service: print its unit, or install it
    Service {
        #[command(subcommand)]
        command: ServiceCommand,
    },
    /// Copy tau's home into FILE (a tar with a manifest), also while `tau serve` runs:
    /// state.db, the audit log up to its anchored head, TauBar's token, the chat history;
    /// never a key or a secret
    Backup {
        /// The backup to write; an existing file is never overwritten
        file: PathBuf,
    },
    /// Bring a backup back into a home that holds no state yet (--home NEW); the audit
    /// log must verify there
    Restore {
        /// The backup `tau backup` wrote
        file: PathBuf,
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
pub(crate) enum GrantsCommand {
    /// Every live grant, oldest first
    List,
    /// One grant, also one that ended: what it covers, its uses, who made it
    Show { id: String },
    /// Ends a grant (or every live one with --all): the next such call is asked again
    Revoke {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        /// Every live grant
        #[arg(long)]
        all: bool,
    },
    /// Questions asked, approved and refused per tool, the median time to answer, and the
    /// calls approved often enough that a grant would cover them (from the audit log)
    Stats,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsCommand {
    /// Every session with messages, most recent first, with its title
    List {
        /// Also the sessions nobody wrote in yet
        #[arg(long)]
        all: bool,
    },
    /// Names a session (an empty title gives it back its first prompt's)
    Rename { name: String, title: String },
    /// The sessions whose title or message text holds TEXT
    Search { text: String },
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
pub(crate) enum PeopleCommand {
    /// Every person, with their Telegram id, unix user, language and whether they hold a
    /// TauBar token
    List,
    /// Adds a [[people]] entry at the end of tau.toml (the rest of the file stays as it is)
    Add(AddPerson),
    /// Removes a person's [[people]] entry from tau.toml and ends their TauBar token
    Remove { name: String },
    /// Prints a new TauBar bearer token of NAME's own (the one before stops working); with
    /// --revoke, ends it
    Token {
        name: String,
        #[arg(long)]
        revoke: bool,
    },
    /// Prints a one-time link that enrolls a passkey for NAME (valid 24 hours)
    Invite { name: String },
}

#[derive(Debug, Args)]
pub(crate) struct AddPerson {
    /// 3 to 32 of a-z, 0-9 and '-'
    pub name: String,
    /// Their Telegram user id: they own the bot
    #[arg(long, value_name = "ID")]
    pub telegram: Option<i64>,
    /// The unix account whose terminal is theirs
    #[arg(long, value_name = "USER")]
    pub unix_user: Option<String>,
    /// en or tr
    #[arg(long, value_name = "CODE")]
    pub language: Option<String>,
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
pub(crate) enum DevicesCommand {
    /// Every device: name, label, room, kind, actions, where it came from
    List,
    /// One device: its topics, the payload of each action, what discovery says now
    Show { name: String },
    /// Keeps a device in state.db (like a [[devices]] entry in tau.toml)
    Add(Box<AddDevice>),
    /// Removes a device added or pinned here (tau.toml's are edited there)
    Remove { name: String },
    /// Reads Home Assistant's discovery configs from the broker and proposes devices;
    /// nothing is added until `tau devices pin`
    Discover {
        /// The discovery prefix
        #[arg(long, default_value = "homeassistant")]
        prefix: String,
        /// Seconds to wait for one more config before the read ends
        #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
        wait: f64,
    },
    /// Adds the discovery proposal NAME; later discovery configs never change it
    Pin(PinDevice),
}

/// `tau devices add`
#[derive(Debug, Args)]
pub(crate) struct AddDevice {
    /// What the model names: 3 to 40 of a-z, 0-9 and '-'
    pub name: String,
    /// What you read on the card
    #[arg(long)]
    pub label: String,
    #[arg(long)]
    pub room: Option<String>,
    /// light, switch, plug, fan, lock, cover, garage, valve, climate, heater or sensor
    #[arg(long)]
    pub kind: String,
    #[arg(long, value_name = "TOPIC")]
    pub command_topic: Option<String>,
    #[arg(long, value_name = "TOPIC")]
    pub state_topic: Option<String>,
    /// An action and its payload, e.g. --action on=ON (repeat for each)
    #[arg(long, value_name = "NAME=PAYLOAD")]
    pub action: Vec<String>,
    /// An action that takes a number, e.g. --range set=5:30:0.5
    #[arg(long, value_name = "NAME=MIN:MAX[:STEP]")]
    pub range: Vec<String>,
    /// The unit of a range, e.g. --unit set=°C
    #[arg(long, value_name = "NAME=UNIT")]
    pub unit: Vec<String>,
    /// The payload of a range, with {value} where the number goes
    #[arg(long, value_name = "NAME=TEMPLATE")]
    pub payload_template: Vec<String>,
    /// Publish its commands retained
    #[arg(long)]
    pub retain: bool,
    /// Overrides the kind's lock class (true or false)
    #[arg(long, value_name = "BOOL")]
    pub high_risk: Option<bool>,
}

/// `tau devices pin`
#[derive(Debug, Args)]
pub(crate) struct PinDevice {
    /// The proposal's name, as `tau devices discover` shows it
    pub name: String,
    /// Keep it under another name
    #[arg(long = "as", value_name = "NAME")]
    pub as_name: Option<String>,
    /// Your own label instead of the one discovery gave
    #[arg(long)]
    pub label: Option<String>,
    /// Your own room instead of the one discovery gave
    #[arg(long)]
    pub room: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Checks that no line of audit.jsonl was edited, dropped or reordered
    Verify {
        /// Also proves the log extends this head, kept elsewhere (as `tau audit head`
        /// printed it)
        #[arg(long, value_name = "SEQ:HASH")]
        from: Option<String>,
    },
    /// Prints the chain's head as SEQ:HASH, to keep somewhere the log's writers cannot reach
    Head,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ServiceCommand {
    /// Prints a systemd unit that runs `tau serve` with this binary on this home
    Unit(ServiceScope),
    /// Writes that unit where systemd looks for it (~/.config/systemd/user/tau.service,
    /// or /etc/systemd/system/ with --system) and says how to enable it
    Install {
        #[command(flatten)]
        scope: ServiceScope,
        /// Replace a different tau.service that is there
        #[arg(long)]
        force: bool,
    },
}

/// Which systemd manager the unit is for.
#[derive(Debug, Args)]
pub(crate) struct ServiceScope {
    /// A system unit that runs tau as you, with the file system read-only but tau's home;
    /// without it, a unit for your own user manager (`systemctl --user`)
    #[arg(long)]
    pub system: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Prints the effective config, or the first error with its key
    Check,
}

/// What a command does when `tau.toml` does not read (a typo, a value out of range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadConfig {
    /// Exit 2 with the error: the command runs with what the config says.
    Refuse,
    /// Say the error on stderr (one line) and go on without the config: the command reads
    /// only tau's home, and the config gives it nothing but the zone times are shown in.
    GoOn,
    /// Report it among the other findings (`tau doctor`).
    Report,
}

impl Command {
    /// Read-only commands that need nothing but tau's home survive a bad config: a person
    /// who broke `tau.toml` still sees what waits for them and whether the log is intact.
    /// Those whose answer depends on the config (`tau grants list` shows the routines of
    /// `tau.toml`, `tau devices list` its devices, `tau tools` its tools) refuse, since
    /// without it they would say something untrue.
    pub(crate) fn bad_config(&self) -> BadConfig {
        match self {
            // Backup and restore read and write only tau's home: a broken config must not
            // stand between a person and a copy of their state.
            Command::Approvals
            | Command::Audit { .. }
            | Command::Backup { .. }
            | Command::Restore { .. } => BadConfig::GoOn,
            Command::Sessions { command } => match command {
                SessionsCommand::List { .. }
                | SessionsCommand::Search { .. }
                | SessionsCommand::Show { .. } => BadConfig::GoOn,
                SessionsCommand::Rename { .. } | SessionsCommand::Delete { .. } => {
                    BadConfig::Refuse
                }
            },
            Command::Doctor => BadConfig::Report,
            Command::Chat { .. }
            | Command::Tui { .. }
            | Command::Demo { .. }
            | Command::Serve { .. }
            | Command::Grants { .. }
            | Command::Tools
            | Command::Devices { .. }
            | Command::People { .. }
            | Command::Routines { .. }
            | Command::Mcp { .. }
            | Command::Config { .. }
            | Command::Service { .. }
            | Command::Completions { .. } => BadConfig::Refuse,
        }
    }
}
