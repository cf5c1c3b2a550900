//! The seccomp layer. Always: no kernel keyring (where credentials live), no io_uring (its
//! operations would pass this filter by), no BPF or perf events. Without network: no
//! socket of any kind (a connected pair of Unix sockets, which reaches nothing outside, is
//! still allowed), and no `connect`, `bind`, `listen` or `accept`. A denied call fails with
//! `EPERM`; the program goes on and says what failed. With `sandbox = "reduced"` (no PID
//! namespace) also no `setsid` or `setpgid`: the program and everything it starts stay in
//! the process group the launcher made, which one `kill` stops whole, however fast its
//! processes fork and exit.
//!
//! The filter checks the architecture first (another one is killed: a 32-bit system call
//! would not be checked) and denies the x32 numbers of the same calls.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The x32 ABI's calls are the x86_64 numbers with this bit set.
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// Calls no sandboxed program makes.
const ALWAYS_DENIED: [i64; 10] = [
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_kexec_load,
];

/// Calls that would take a process out of the launcher's process group.
const GROUP_CALLS: [i64; 2] = [libc::SYS_setsid, libc::SYS_setpgid];

/// Calls only a program with network makes.
const NETWORK_CALLS: [i64; 6] = [
    libc::SYS_socket,
    libc::SYS_connect,
    libc::SYS_bind,
    libc::SYS_listen,
    libc::SYS_accept,
    libc::SYS_accept4,
];

fn arch() -> Result<TargetArch, String> {
    #[cfg(target_arch = "x86_64")]
    return Ok(TargetArch::x86_64);
    #[cfg(target_arch = "aarch64")]
    return Ok(TargetArch::aarch64);
    #[allow(unreachable_code)]
    Err(format!(
        "tau has no seccomp filter for this architecture ({})",
        std::env::consts::ARCH
    ))
}

/// The filter's rules: each listed call is denied (with its conditions, when it has some).
fn rules(network: bool, reduced: bool) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut denied: Vec<(i64, Vec<SeccompRule>)> =
        ALWAYS_DENIED.iter().map(|nr| (*nr, Vec::new())).collect();
    if reduced {
        denied.extend(GROUP_CALLS.iter().map(|nr| (*nr, Vec::new())));
    }
    if !network {
        denied.extend(NETWORK_CALLS.iter().map(|nr| (*nr, Vec::new())));
        // A socketpair reaches nothing outside; only the Unix kind is made.
        let not_unix = SeccompRule::new(vec![
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )
            .map_err(|e| e.to_string())?,
        ])
        .map_err(|e| e.to_string())?;
        denied.push((libc::SYS_socketpair, vec![not_unix]));
    }
    #[cfg(target_arch = "x86_64")]
    {
        let x32: Vec<(i64, Vec<SeccompRule>)> = denied
            .iter()
            .map(|(nr, rules)| (nr | X32_BIT, rules.clone()))
            .collect();
        denied.extend(x32);
    }
    Ok(denied.into_iter().collect())
}

/// The compiled filter.
pub(crate) fn filter(network: bool, reduced: bool) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(
        rules(network, reduced)?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch()?,
    )
    .map_err(|e| e.to_string())?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
}

/// Installs the filter on this process, for good.
pub(crate) fn restrict(network: bool, reduced: bool) -> Result<(), String> {
    let program = filter(network, reduced)?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn without_network_every_socket_call_is_denied_with_network_none_is() {
        let without = rules(false, false).unwrap();
        let with = rules(true, false).unwrap();
        for nr in NETWORK_CALLS {
            assert_eq!(without.get(&nr).map(Vec::len), Some(0), "{nr}");
            assert!(!with.contains_key(&nr), "{nr}");
        }
        assert_eq!(without.get(&libc::SYS_socketpair).map(Vec::len), Some(1));
        for nr in ALWAYS_DENIED {
            assert!(without.contains_key(&nr) && with.contains_key(&nr), "{nr}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_x32_numbers_are_denied_too() {
        let without = rules(false, true).unwrap();
        assert!(without.contains_key(&(libc::SYS_socket | X32_BIT)));
        assert!(without.contains_key(&(libc::SYS_setsid | X32_BIT)));
        assert!(without.contains_key(&(libc::SYS_keyctl | X32_BIT)));
    }

    #[test]
    fn only_the_reduced_sandbox_keeps_the_program_in_its_process_group() {
        for network in [false, true] {
            let reduced = rules(network, true).unwrap();
            let full = rules(network, false).unwrap();
            for nr in GROUP_CALLS {
                assert_eq!(reduced.get(&nr).map(Vec::len), Some(0), "{nr}");
                assert!(!full.contains_key(&nr), "{nr}");
            }
        }
    }

    #[test]
    fn the_filter_compiles() {
        for (network, reduced) in [(false, false), (true, false), (false, true), (true, true)] {
            assert!(!filter(network, reduced).unwrap().is_empty());
        }
    }
}
