//! The Landlock layer: read-only everywhere but the protected paths, read-write in the
//! workspace and the private temp dir; without network, no TCP and no abstract Unix
//! sockets; never a signal to a process outside the sandbox (tau's own included).

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use crate::carve::readable_roots;
use crate::policy::Launch;

/// Devices every program writes to.
const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// The ABI whose rights tau asks for; a kernel with fewer enforces what it has.
const TARGET: ABI = ABI::V8;

/// Restricts this process (and everything it starts) for good. Returns the kernel's
/// Landlock ABI, or why the files could not be confined.
pub(crate) fn restrict(launch: &Launch) -> Result<i32, String> {
    let mut handled = AccessFs::from_all(TARGET);
    if launch.network {
        // Connecting to a Unix socket by its path is network too; allowed with it.
        handled &= !AccessFs::ResolveUnix;
    }
    let read = AccessFs::from_read(TARGET);
    let mut scopes: BitFlags<Scope> = Scope::Signal.into();
    if !launch.network {
        scopes |= Scope::AbstractUnixSocket;
    }
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)
        .map_err(|e| e.to_string())?;
    if !launch.network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| e.to_string())?;
    }
    let writable: Vec<PathBuf> = launch
        .writable
        .iter()
        .cloned()
        .chain(DEVICES.iter().map(PathBuf::from))
        .collect();
    let status = ruleset
        .scope(scopes)
        .map_err(|e| e.to_string())?
        .create()
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(readable_roots(&launch.deny), read))
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(&writable, handled))
        .map_err(|e| e.to_string())?
        .restrict_self()
        .map_err(|e| e.to_string())?;
    match (status.ruleset, status.landlock) {
        (RulesetStatus::NotEnforced, landlock)
        | (_, landlock @ (LandlockStatus::NotEnabled | LandlockStatus::NotImplemented)) => {
            Err(why_not(landlock))
        }
        (
            RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced,
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            },
        ) => Ok(kernel_abi.unwrap_or(effective_abi as i32)),
    }
}

fn why_not(landlock: LandlockStatus) -> String {
    match landlock {
        LandlockStatus::NotEnabled => "Landlock is built into this kernel but not enabled; add \
             landlock to the lsm= list on the kernel command line"
            .to_owned(),
        LandlockStatus::NotImplemented => "this kernel has no Landlock, or something (a \
             container's seccomp profile) hides it; it needs Linux 5.13 or newer"
            .to_owned(),
        LandlockStatus::Available { .. } => "the kernel did not enforce the rules".to_owned(),
    }
}
