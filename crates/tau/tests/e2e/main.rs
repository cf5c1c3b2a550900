//! The end-to-end tests of the `tau` binary: each module drives the real binary in a home
//! of its own (a replay model, piped stdin, real peers). One test binary, not one a module:
//! the shared helpers in `common` compile once and one binary links, which keeps a clean
//! build's time and disk a fraction of what ~95 binaries cost.

#![allow(
    // A test fails by panicking: these are how its assertions stop it.
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

mod answers;
mod approvals;
mod audit_witness;
mod backup;
mod bad_config;
mod beside_serve;
mod browser;
mod browser_a11y;
mod browser_card;
mod browser_decisions;
mod browser_devices;
mod browser_grants;
mod browser_output;
mod browser_passkeys;
mod browser_phone;
mod browser_provenance;
mod browser_push;
mod browser_waiting;
mod browser_whole_card;
mod chat;
mod chat_editing;
mod chat_kill_steps;
mod cli;
mod closed_pipes;
mod config_check;
mod device_cards;
mod devices;
mod display;
mod docs_samples;
mod doctor;
mod effect_uncertain;
mod examples;
mod grant_trust;
mod grants;
mod home_files;
mod home_links;
mod home_versions;
mod hostile_listings;
mod hub_owner;
mod interactive;
mod long_arguments;
mod lookalikes;
mod mcp_bad_input;
mod mcp_client;
mod mcp_isolation;
mod mcp_server;
mod model_down;
mod peers_required;
mod people;
mod provenance_cards;
mod readouts;
mod routine_kill_steps;
mod routines;
mod sandbox;
mod sandbox_card;
mod sandbox_mcp;
mod sandbox_processes;
mod sandbox_reduced;
mod secrets;
mod serve;
mod serve_approvers;
mod serve_channels;
mod serve_checks;
mod serve_decisions;
mod serve_devices;
mod serve_flood_caps;
mod serve_floods;
mod serve_grant_pins;
mod serve_grants;
mod serve_hostile;
mod serve_kill_steps;
mod serve_passkeys;
mod serve_people;
mod serve_push;
mod serve_restart;
mod serve_routine_owner;
mod serve_routine_provenance;
mod serve_routines;
mod serve_systemd;
mod serve_telegram;
mod serve_telegram_devices;
mod serve_telegram_forwards;
mod serve_telegram_grants;
mod serve_telegram_people;
mod serve_telegram_sessions;
mod serve_titles;
mod serve_whole_card;
mod service;
mod shared_routines;
mod shared_store;
mod terminal_approvers;
mod terminal_person;
mod torture;
mod tui;
mod tui_person;
mod workspace_boundary;
