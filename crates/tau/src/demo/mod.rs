//! `tau demo`: `tau chat` on a replay shipped in the binary, offline. The model reads a
//! note, switches a lamp of tau's device registry with `device_set` (the card says so in
//! tau's words), reads the lamp's state back and writes a script and asks to run it; the
//! person answers the real approval prompts. Only the model is scripted: the tools, the
//! registry, the gate, the prompts and the audit log are the ones `tau chat` uses. It ends
//! with what the audit log recorded, a line per call, and the command to try next.

mod summary;

use std::sync::Arc;

use tau_agent::ScriptedModel;
use tau_protocol::SessionId;

use crate::chat::{self, Chat};
use crate::context::Context;
use crate::settings::Loaded;
use tau_home::Home;

const REPLAY: &str = include_str!("replay.json");
const PROMPT: &str = "Please do the evening routine from my note.";
const NOTE: &str = "# Evening routine\n\n- At sunset, turn on the living-room lamp.\n- Write a small script that counts the files in the workspace, and run it.\n";

const INTRO: &str = "\
tau demo: a scripted model with real tools and real approval prompts, all offline.
The lamp is a small MQTT device inside this process, in tau's device registry as
living-room-lamp; the workspace is a temporary folder.
Answer y (or e/evet) to run a tier-2 call; anything else refuses it.

";

/// `answers_from_stdin`: as `tau chat --answers-from-stdin`.
pub(crate) async fn run(ctx: &Context, answers_from_stdin: bool) -> anyhow::Result<()> {
    let dir = tempfile::Builder::new().prefix("tau-demo-").tempdir()?;
    let home = Home::at(dir.path());
    home.create(true)?;
    std::fs::write(home.workspace().join("note.md"), NOTE)?;
    tau_home::logging::init(&home, &*ctx.env, tau_models::is_unscrubbed_log_target)?;
    let lamp = tau_devices::demo_lamp::start(Arc::new(|now: &str| {
        crate::output::print(&format!(
            "  [demo lamp] the living-room lamp is now {}\n",
            tau_terminal::escape_for_terminal(now)
        ));
    }))
    .await?;

    let mut config = ctx.loaded.config.clone();
    config.tools.workspace = home.workspace();
    config.tools.mqtt.host = "127.0.0.1".to_owned();
    config.tools.mqtt.port = lamp.port();
    config.tools.mqtt.username = None;
    config.tools.mqtt.password_env = None;
    // The demo stays offline and the same every time: no MCP servers, one device.
    config.mcp.servers.clear();
    config.devices = vec![tau_devices::demo_lamp::device()];
    let demo = Context {
        home,
        loaded: Loaded {
            config,
            path: None,
            model_configured: true,
        },
        env: Box::new(|name| std::env::var(name).ok()),
        events: tau_core::EventBus::new(),
        state: std::sync::OnceLock::new(),
    };
    let model = Arc::new(ScriptedModel::from_json(REPLAY)?);
    let tools = demo.catalog().await?;
    crate::output::print(INTRO);
    chat::run(
        &demo,
        Chat {
            session: Some(SessionId::parse("demo")?),
            model,
            tools,
            prompts: Some(vec![PROMPT.to_owned()]),
            answers_from_stdin,
            person: None,
        },
    )
    .await?;
    lamp.stop();
    let audit = std::fs::read_to_string(demo.home.audit_log())?;
    crate::output::print(&summary::summary(&audit));
    Ok(())
}
