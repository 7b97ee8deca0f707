//! The policy as Landlock rules, applied to the calling thread (and so to
//! every process it then starts), and the probe that asks the kernel what it
//! supports. Landlock rules only add rights: reading (and executing) is
//! granted on `/`, every right on the writable roots and the
//! [`WRITABLE_DEVICES`]; TCP connect and bind are handled (so refused) unless
//! the policy allows the network; abstract unix sockets outside the sandbox
//! are out of reach.

#[cfg(target_os = "linux")]
use super::policy::WRITABLE_DEVICES;
use super::policy::{SandboxMode, SandboxPolicy};

/// The Landlock ABI whose rights the rules ask for. Pinned (as the crate
/// advises) so a newer kernel never silently changes what is restricted;
/// v6 adds abstract-unix-socket scoping to v4's TCP and v5's device ioctls.
#[cfg(target_os = "linux")]
const PINNED_ABI: landlock::ABI = landlock::ABI::V6;

/// The first ABI that restricts truncation: below it `truncate -s 0 FILE`
/// works anywhere, so writes are not contained.
pub const WRITES_CONTAINED_FROM_ABI: u8 = 3;

/// The first ABI that restricts TCP connect and bind.
pub const NETWORK_CONTAINED_FROM_ABI: u8 = 4;

/// The first ABI that keeps abstract unix sockets outside the sandbox out
/// of reach.
pub const ABSTRACT_SOCKETS_CONTAINED_FROM_ABI: u8 = 6;

/// Why restricting failed. Serialisable: a remote helper's probe answers
/// with it (`docs/remote.md`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum KernelError {
    /// The kernel has no Landlock (not built in, or not enabled at boot),
    /// or a seccomp filter refuses its first system call: the `landlock`
    /// crate cannot tell them apart. A refusal further on is
    /// [`KernelError::Refused`], with the kernel's words.
    #[error(
        "Landlock is not available (it needs Linux 5.13 or newer with `landlock` in the `lsm=` boot parameter and, in a container, a seccomp profile that allows its system calls)"
    )]
    Unavailable,
    /// The kernel refused the rules.
    #[error("Landlock refused the sandbox rules: {0}")]
    Refused(String),
}

/// What the kernel enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Enforced {
    /// The Landlock ABI in effect (capped at the pinned ABI).
    pub abi: u8,
}

impl Enforced {
    /// Whether every write outside the policy's roots is refused.
    pub fn writes_contained(self) -> bool {
        self.abi >= WRITES_CONTAINED_FROM_ABI
    }

    /// Whether TCP connect and bind can be refused.
    pub fn network_contained(self) -> bool {
        self.abi >= NETWORK_CONTAINED_FROM_ABI
    }
}

/// Restricts the calling thread, and every process it starts from now on,
/// to `policy`. Irreversible. `Off` restricts nothing.
#[cfg(target_os = "linux")]
pub fn restrict_current_thread(policy: &SandboxPolicy) -> Result<Enforced, KernelError> {
    use landlock::{
        Access, AccessFs, AccessNet, LandlockStatus, PathBeneath, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };

    if policy.mode == SandboxMode::Off {
        return Ok(Enforced { abi: 0 });
    }
    let refused = |error: landlock::RulesetError| KernelError::Refused(error.to_string());
    // All but making device nodes: a character device made in the
    // workspace (root may) would alias `/dev/kmsg` or a disk, writable.
    let writable = AccessFs::from_all(PINNED_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(PINNED_ABI))
        .map_err(refused)?
        .scope(Scope::AbstractUnixSocket)
        .map_err(refused)?;
    if !policy.allow_network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(refused)?;
    }
    let status = ruleset
        .create()
        .map_err(refused)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(PINNED_ABI)))
        .map_err(refused)?
        .add_rules(path_beneath_rules(WRITABLE_DEVICES, writable))
        .map_err(refused)?
        .add_rules(
            opened_roots(policy)
                .into_iter()
                .map(|root| Ok(PathBeneath::new(root, writable))),
        )
        .map_err(refused)?
        .restrict_self()
        .map_err(refused)?;
    match (status.ruleset, status.landlock) {
        (RulesetStatus::NotEnforced, _) => Err(KernelError::Unavailable),
        (_, LandlockStatus::Available { effective_abi, .. }) => Ok(Enforced {
            abi: (effective_abi.min(PINNED_ABI)) as u8,
        }),
        (_, LandlockStatus::NotEnabled | LandlockStatus::NotImplemented) => {
            Err(KernelError::Unavailable)
        }
    }
}

/// The policy's writable roots, opened, each only if what was opened is
/// the root it names: a root swapped for a link between the policy's check
/// ([`SandboxPolicy::effective_roots`]) and the open is left out (and said
/// on stderr, which the command's output shows), never followed.
#[cfg(target_os = "linux")]
fn opened_roots(policy: &SandboxPolicy) -> Vec<landlock::PathFd> {
    use std::io::Write;
    use std::os::fd::{AsFd, AsRawFd};

    let mut opened = Vec::new();
    for root in policy.effective_roots() {
        let Ok(fd) = landlock::PathFd::new(&root) else {
            continue;
        };
        let at = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd()));
        match at {
            Ok(at) if at == root => opened.push(fd),
            // Said where it can be: a stderr that is gone must not panic
            // the helper before the command starts (see `helper::run_if_invoked`).
            _ => {
                let _ = writeln!(
                    std::io::stderr(),
                    "coding-agent sandbox: {} moved while this command started; it is not writable",
                    root.display()
                );
            }
        }
    }
    opened
}

/// Without Landlock nothing can be restricted.
#[cfg(not(target_os = "linux"))]
pub fn restrict_current_thread(policy: &SandboxPolicy) -> Result<Enforced, KernelError> {
    match policy.mode {
        SandboxMode::Off => Ok(Enforced { abi: 0 }),
        SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => Err(KernelError::Unavailable),
    }
}

/// What the kernel would enforce, found by restricting a short-lived thread
/// of this process (a restriction covers only the thread that makes it, and
/// ends with it). `Err` when Landlock is missing.
pub fn probe() -> Result<Enforced, KernelError> {
    let policy = SandboxPolicy::for_workspace(SandboxMode::ReadOnly, &[]);
    std::thread::spawn(move || restrict_current_thread(&policy))
        .join()
        .unwrap_or_else(|_| Err(KernelError::Refused("the probe thread panicked".into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment_follows_the_abi() {
        let v2 = Enforced { abi: 2 };
        assert!(!v2.writes_contained() && !v2.network_contained());
        let v3 = Enforced { abi: 3 };
        assert!(v3.writes_contained() && !v3.network_contained());
        let v6 = Enforced { abi: 6 };
        assert!(v6.writes_contained() && v6.network_contained());
    }
}
