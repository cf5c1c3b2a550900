//! tau-telegram
mod api; mod auth; mod callback; mod config; mod html; mod poller; mod updates;
