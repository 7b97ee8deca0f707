//! `PermissionRequest`: hooks that answer an approval in the user's place.
//! They run when a call would wait for someone's approval (the permission
//! policy or a PreToolUse hook asks), before anyone is asked; a hook that
//! allows or denies settles the call, one that says nothing leaves it to the
//! session's approver (and, where no one can approve, to its refusal).

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::io::{EventInput, PermissionDecision, ToolCallInput};
use super::{CommandHooks, HookEvent};

/// What the PermissionRequest hooks answered for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestAnswer {
    /// Run the call, as if the user approved it once.
    Allow {
        /// Replaces the arguments (judged by the policy's deny rules again).
        updated_input: Option<Value>,
        /// The hooks' `updatedPermissions`, one list per hook that allowed,
        /// as they gave them (the permission policy reads them:
        /// `guard::updates`).
        updated_permissions: Vec<Value>,
    },
    /// Refuse it; the model reads `reason`.
    Deny {
        /// What the model reads.
        reason: String,
        /// Stop the agent too (`interrupt: true`): the run is cancelled as
        /// by the user's Esc.
        interrupt: bool,
    },
}

/// A deny that said `interrupt: true` (or a PreToolUse `continue: false`):
/// the run stops as by the user's Esc (`cancel` is the run's), and the user
/// learns why (the model reads `reason` as the call's result).
pub fn stop_the_agent(event: HookEvent, reason: &str, cancel: &CancellationToken) {
    tracing::warn!("a {event} hook stopped the agent: {reason}");
    cancel.cancel();
}

impl CommandHooks {
    /// Runs the PermissionRequest hooks matching `call`'s tool; `None` when
    /// none is configured or none answered. A deny (exit 2, `behavior:
    /// "deny"`, `continue: false`) wins over an allow.
    pub async fn permission_request(
        &self,
        call: ToolCallInput,
        reason: &str,
        cancel: &CancellationToken,
    ) -> Option<RequestAnswer> {
        let fields = EventInput::PermissionRequest {
            call,
            reason: reason.to_owned(),
        };
        let outcome = self.run(fields, cancel).await?;
        let mut blocks = outcome.blocks;
        blocks.extend(outcome.stop);
        if !blocks.is_empty() {
            return Some(RequestAnswer::Deny {
                reason: format!("Blocked by PermissionRequest hook: {}", blocks.join("\n")),
                interrupt: outcome.interrupt,
            });
        }
        (outcome.permission == Some(PermissionDecision::Allow)).then_some(RequestAnswer::Allow {
            updated_input: outcome.updated_input,
            updated_permissions: outcome.updated_permissions,
        })
    }
}
