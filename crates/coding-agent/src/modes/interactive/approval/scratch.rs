//! SCRATCH: a copy of the approval interface `guard` lands in
//! `guard/approval.rs`; deleted when theirs is on main.

use tokio_util::sync::CancellationToken;

/// A call the policy asks the user about.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub tool_name: String,
    /// The call's arguments.
    pub args: serde_json::Value,
    /// Why the policy asks.
    pub reason: String,
    /// The rule that would allow this call.
    pub suggested_rule: Option<String>,
}

/// Where an "always" rule is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleScope {
    /// `.coding-agent/settings.json` of the project.
    Project,
    /// The global settings.
    Global,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run this call.
    AllowOnce,
    /// Run it, and add the suggested rule for the session.
    AllowSession,
    /// Run it, and write the suggested rule.
    AllowAlways {
        /// Which settings file.
        scope: RuleScope,
    },
    /// Do not run it.
    Deny {
        /// What the model reads.
        reason: Option<String>,
    },
}

/// Asks the user.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// The user's answer to `request`.
    async fn approve(&self, request: ApprovalRequest, cancel: &CancellationToken)
    -> ApprovalAnswer;
}
