//! tau-telegram
mod api; mod auth; mod callback; mod config; mod html; mod hub; mod poller; mod question; mod store; mod texts; mod updates;
