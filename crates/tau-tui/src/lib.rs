//! tau-tui: the full-screen terminal channel (`tau tui`).
//!
//! Owns the TUI: the transcript that streams the model's text and shows every tool call
//! with its tier, status, who decided and how long it took; the approval card (a modal
//! with the tool, tier, tau's text of the effect and every argument whole, answered only
//! by a deliberate key); the input line, the status bar, the session picker, the terminal
//! modes and their restoration; and `TuiApprover`. Holds no policy: it renders the
//! channel protocol's events and answers the questions tau-core asks. Knows nothing of
//! models, tools, the gate's rules, the home or the audit log: the binary hands it an
//! agent built by tau-core, and the `state.db` handles `/grants` lists and revokes
//! through (in tau-core's words).
//!
//! Layout
//! - `app.rs`: the state and what keys and events do to it; `ui.rs`, `rows.rs`: the
//!   frame as a pure function of it; `run.rs`: the thin event loop
//! - `card.rs`: the approval card and its answer guard; `args.rs`: arguments pretty-printed
//! - `transcript.rs`: the conversation as data; `input.rs`: the input line and its history
//! - `approver.rs`: `TuiApprover`; `calls.rs`: the model-call counter for the status bar
//! - `picker.rs`: the session picker; `screen.rs`: terminal modes, restored on every exit
//! - `shelf.rs`: choosing a session over the caller's stored sessions; the count of
//!   questions waiting on other channels
//! - `commands.rs`: `/grants` and `/revoke`, answered by the TUI itself;
//!   `stored_grants.rs`: those over the grants kept in `state.db`
//! - `wrap.rs`: wrapping to a box's width; `texts.rs`: the words, in `en` and `tr`

mod app;
mod approver;
mod args;
mod calls;
mod card;
mod commands;
mod input;
mod picker;
mod rows;
mod run;
mod screen;
mod shelf;
mod stored_grants;
mod texts;
mod transcript;
mod ui;
mod wrap;

#[cfg(test)]
mod tests;

pub use approver::{NoYes, NoYesOf, Questions, TUI_CHANNEL, TuiApprover};
pub use calls::{MODEL_CALLS_HOOK, ModelCalls};
pub use commands::GrantCommands;
pub use picker::{Pick, SessionRow};
pub use run::{ChatSetup, Exit, chat, pick_session};
pub use screen::Screen;
pub use shelf::{Chosen, SessionShelf, choose_session, count_waiting_elsewhere};
pub use stored_grants::StoredGrants;

/// Why the TUI could not go on.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("the terminal failed: {0}")]
    Terminal(#[from] std::io::Error),
}
