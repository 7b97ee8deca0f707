//! The guard at the door: what runs in `before_tool_call`, in this order:
//! the permission [`policy`] (rules, modes, shell parsing, the deny and safe
//! lists), then command hooks, then an approval asked of the user.
//!
//! See `docs/permissions.md` for what users configure.

pub mod policy;

pub use policy::{Decision, Mode, Policy, SandboxFacts, Verdict};
pub mod config;
pub mod trust;

pub use config::{GuardFlags, GuardSetup};
pub use trust::Trust;

/// What the sandbox contains in this process, for the policy. Until the
/// sandbox probes the kernel, bash is taken as uncontained, so `auto` asks.
pub fn sandbox_facts() -> SandboxFacts {
    SandboxFacts {
        active: false,
        network_allowed: true,
    }
}
