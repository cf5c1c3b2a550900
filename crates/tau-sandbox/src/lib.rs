//! tau-sandbox: the sandbox around code tau runs for the model (`run_command`) and the MCP
//! servers it starts as programs.
//!
//! Owns what such a program may touch and the setup that enforces it, in the child, before
//! the program's `exec`: files (Landlock: read-only everywhere, read-write only in the
//! workspace and a private temp dir, nothing at all of the paths tau protects), network
//! (none unless asked: a network namespace, seccomp refusing sockets, Landlock refusing TCP),
//! processes (a PID namespace; with `sandbox = "reduced"`, where a machine allows none, a
//! process group the program cannot leave and a subreaper that stops everything below
//! it), privileges (every capability dropped, `no_new_privs`), and failing closed with a
//! text naming the layer that is missing.
//! Knows nothing of tools, approvals, channels or the config file: callers say what is
//! protected and where the workspace is.
//!
//! tau's code forbids `unsafe`, so nothing runs between `fork` and `exec`. Instead tau starts
//! its own executable with a hidden first argument (`__sandbox`), which sets the layers up
//! on itself and then becomes the program. The binary hands such a start to
//! [`launcher_main`] before anything else runs (no runtime, no threads).
//!
//! Layout
//! - `policy.rs`: what a program may touch (the launch request tau passes on)
//! - `carve.rs`: "read everywhere but these paths" as Landlock rules
//! - `files.rs` (Landlock), `syscalls.rs` (seccomp), `namespaces.rs`, `privileges.rs`
//!   (capabilities): the layers
//! - `launcher.rs`, `watch.rs`: the two stages of a start, inside the child
//! - `report.rs`: how the child tells tau it is ready or why it refused
//! - `spawn.rs`: tau's side: the command that starts a program in the sandbox
//! - `procs.rs`: processes as `/proc` shows them
//! - `probe.rs`: which layers this machine has (`tau doctor`)

mod carve;
mod files;
mod launcher;
mod namespaces;
mod policy;
mod privileges;
mod probe;
pub mod procs;
mod report;
mod spawn;
mod syscalls;
mod watch;

pub use launcher::launcher_main;
pub use policy::{DEFAULT_DENY_READ, SandboxMode, expand_home};
pub use probe::{Availability, DoctorRow, Layers, probe};
pub use report::{Refusal, SandboxLayer};
pub use spawn::{
    Allowance, Confinement, Lifeline, Pending, Prepared, Sandbox, SandboxError, Started,
};
