//! Every decision the guard makes about a call, as the event the modes write
//! (`permission_decision` in JSON and RPC output) and the session file keeps
//! (a `custom` entry, which readers that do not know it skip).

use serde::Serialize;
use serde_with::skip_serializing_none;

use super::approval::{ApprovalAnswer, RuleScope};
use super::policy::Decision;

/// The `customType` of the session entry, and the `type` of the event.
pub const DECISION_TYPE: &str = "permission_decision";

/// Who decided a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DecidedBy {
    /// The permission policy (rules, lists, mode).
    Policy,
    /// A PreToolUse command hook.
    Hook,
    /// The user (or, where no one can be asked, the refusal in their place).
    Approval,
}

/// What the approver answered, when the call was asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Answer {
    /// Allowed once.
    AllowOnce,
    /// Allowed for the session.
    AllowSession,
    /// Allowed, the rule written to the project's settings.
    AllowAlwaysProject,
    /// Allowed, the rule written to the global settings.
    AllowAlwaysGlobal,
    /// Refused.
    Deny,
}

impl From<&ApprovalAnswer> for Answer {
    fn from(answer: &ApprovalAnswer) -> Self {
        match answer {
            ApprovalAnswer::AllowOnce => Answer::AllowOnce,
            ApprovalAnswer::AllowSession => Answer::AllowSession,
            ApprovalAnswer::AllowAlways {
                scope: RuleScope::Project,
            } => Answer::AllowAlwaysProject,
            ApprovalAnswer::AllowAlways {
                scope: RuleScope::Global,
            } => Answer::AllowAlwaysGlobal,
            ApprovalAnswer::Deny { .. } => Answer::Deny,
        }
    }
}

/// The guard's decision about one call.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallDecision {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// `allow` (the call runs) or `deny` (the model reads `reason`); never `ask`.
    pub decision: Decision,
    /// Who decided.
    pub by: DecidedBy,
    /// Why: the policy's reason, the hook's, or what the model reads of a refusal.
    pub reason: String,
    /// The settings or flag rule that decided, or the rule an approval added.
    pub rule: Option<String>,
    /// The approver's answer, when the call was asked about.
    pub answer: Option<Answer>,
    /// The arguments the call runs with when a hook replaced the model's
    /// (`updatedInput`): the event and the session say what really ran.
    pub updated_input: Option<serde_json::Value>,
}

/// Where the guard sends its decisions (the session: its event stream and
/// its file).
pub type DecisionSink = dyn Fn(CallDecision) + Send + Sync;
