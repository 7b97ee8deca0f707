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

use std::path::Path;

/// Whether the project in `cwd` is trusted for this run (`--trust`, or the
/// user's stored answer): its own hooks, MCP servers and `allow` rules apply
/// only then. A trust file that cannot be read trusts nothing (fails closed)
/// and says so in a warning.
pub fn project_trusted(agent_dir: &Path, cwd: &Path, flags: &GuardFlags) -> bool {
    match Trust::load(agent_dir, flags.trust) {
        Ok(trust) => trust.is_trusted(cwd),
        Err(error) => {
            tracing::warn!("{error}; this project is not trusted");
            false
        }
    }
}

/// What the sandbox contains in this process, for the policy. Until the
/// sandbox probes the kernel, bash is taken as uncontained, so `auto` asks.
pub fn sandbox_facts() -> SandboxFacts {
    SandboxFacts {
        active: false,
        network_allowed: true,
    }
}
