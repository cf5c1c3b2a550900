//! tau-telegram: tau's Telegram channel.
//!
//! Owns the Bot API side of a conversation on Telegram: long polling (the offset moves only
//! past handled updates; 429, 409 and lost connections handled), who may talk to the bot
//! (owners by numeric user id, in allowed chats; everyone else is ignored), answers
//! streamed by throttled edits, and the approval message whose buttons only an owner, in
//! the conversation's own chat, can use. Knows nothing of the agent loop, the gate or how
//! the hub stores sessions: it reads `ChannelEvent`s and talks to the hub through the
//! [`Hub`] trait, which `port.rs` makes of the `ChannelPort` `tau-hub` hands the channel
//! (and tests of a fake). Questions are the hub's durable approval rows, so they outlive restarts;
//! the channel only remembers where it stopped reading and which message shows which
//! question.
//!
//! Layout
//! - `config.rs`: `[telegram]`
//! - `api.rs`: the Bot API methods tau uses, read leniently; `updates.rs`: updates, field
//!   by field; `forwards.rs`: forwards and quotes, someone else's text; `poller.rs`: long
//!   polling
//! - `auth.rs`: owners and chats; `callback.rs`: what a button carries
//! - `html.rs`: escaping and packing into messages; `view.rs`: a streaming turn;
//!   `question.rs`: the approval message; `texts.rs`: en and tr
//! - `chat.rs`: one task per chat (pace, order, edits); `channel.rs`: updates to hub calls,
//!   events to chats; `store.rs`: what survives a restart; `hub.rs`: the [`Hub`] trait; `port.rs`:
//!   that trait over the hub's port, and the channel as the hub hosts it;
//!   `pending.rs`: `/pending`, what waits on every channel; `grants.rs`: `/grants`, what
//!   runs without a question, with Revoke buttons; `sessions.rs`: `/sessions`, `/search`
//!   and `/rename`, a chat's conversations by title

mod api;
mod auth;
mod callback;
mod channel;
mod chat;
mod config;
mod forwards;
mod grants;
mod html;
mod hub;
mod names;
mod pending;
mod poller;
mod port;
mod question;
mod sessions;
mod store;
mod texts;
mod updates;
mod view;

pub use api::ApiError;
pub use channel::{CHANNEL, TelegramChannel};
pub use config::{DEFAULT_API_URL, TelegramConfig};
pub use hub::{
    ChatConversation, Happened, Hub, HubError, HubEvent, PressRefusal, Question, RefusedPress,
    Reply, chat_of, conversation_key,
};
pub use poller::PollError;
pub use port::host;
pub use store::{Store, StoreError};
