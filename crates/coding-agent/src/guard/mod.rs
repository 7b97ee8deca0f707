//! The guard at the door: what runs in `before_tool_call`, in this order:
//! the permission [`policy`] (rules, modes, shell parsing, the deny and safe
//! lists), then command hooks, then an [`approval`] asked of the user
//! ([`Guard`], in [`gate`]); every decision is recorded ([`record`]).
//!
//! See `docs/permissions.md` for what users configure.

pub mod approval;
pub mod gate;
pub mod policy;
pub mod record;

pub use policy::{Decision, Mode, Policy, SandboxFacts, Verdict};
pub mod config;
pub mod trust;
pub mod updates;

pub use approval::{ApprovalAnswer, ApprovalRequest, Approver, NoApprover, RuleScope};
pub use config::{GuardFlags, GuardSetup};
pub use gate::{Guard, RuleFiles};
pub use record::CallDecision;
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

/// What the session's sandbox contains, for the policy: `auto` runs bash
/// unasked only while the kernel contains its writes.
pub fn sandbox_facts(status: &crate::sandbox::SandboxStatus) -> SandboxFacts {
    SandboxFacts {
        active: status.active,
        network_allowed: status.network_allowed,
    }
}
