//! The JSON a hook reads on stdin and the JSON it may write on stdout, in
//! Claude Code's exact shapes (field names included), so scripts written for
//! Claude Code read and answer them unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::HookEvent;

/// What a hook reads on stdin. Fields an event does not have are left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookInput {
    /// The session's id.
    pub session_id: String,
    /// The session file (`""` when the session is not saved).
    pub transcript_path: String,
    /// The working directory.
    pub cwd: String,
    /// The permission mode (`default`, `acceptEdits`, `plan`, `bypassPermissions`, ...).
    pub permission_mode: String,
    /// The event's name.
    pub hook_event_name: HookEvent,
    /// Tool events: the tool's name (ours: `bash`, `read`, `mcp__server__tool`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Tool events: the validated arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Value>,
    /// Tool events: the call's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// PostToolUse: the result as the session file saves it
    /// (`{"content": [...], "details": ..., "isError": bool}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
    /// UserPromptSubmit: the prompt's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// SessionStart: `startup`, `resume` or `clear`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Stop: true when the agent already goes on because a Stop hook blocked
    /// (a hook checks it to avoid keeping the agent going forever).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_hook_active: Option<bool>,
    /// Stop: the text of the model's last answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<String>,
}

/// What a hook may write on stdout (read when it exits 0). Every field is
/// optional; unknown fields are ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    /// `false` stops the agent after this call (with `stopReason`).
    #[serde(rename = "continue")]
    pub continue_: Option<bool>,
    /// Shown to the user when `continue` is false.
    pub stop_reason: Option<String>,
    /// Claude Code hides the hook's stdout from its transcript; ours never
    /// shows it, so this is accepted and has no effect.
    pub suppress_output: Option<bool>,
    /// A warning shown to the user.
    pub system_message: Option<String>,
    /// `"block"` (PostToolUse, Stop, UserPromptSubmit; PreToolUse's older
    /// form) or `"approve"` (PreToolUse's older form of `allow`).
    pub decision: Option<String>,
    /// Why, with `decision`.
    pub reason: Option<String>,
    /// The event's own answer.
    pub hook_specific_output: Option<HookSpecificOutput>,
}

/// `hookSpecificOutput`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpecificOutput {
    /// The event the answer is for.
    pub hook_event_name: Option<String>,
    /// PreToolUse: `allow`, `deny`, `ask` or `defer`.
    pub permission_decision: Option<PermissionDecision>,
    /// PreToolUse: to the model on deny, to the user otherwise.
    pub permission_decision_reason: Option<String>,
    /// PreToolUse: the arguments the tool runs with instead (the whole input).
    pub updated_input: Option<Value>,
    /// Text added for the model.
    pub additional_context: Option<String>,
    /// PostToolUse: what the model reads instead of the tool's output (a
    /// string, or content blocks).
    #[serde(rename = "updatedMCPToolOutput")]
    pub updated_mcp_tool_output: Option<Value>,
}

/// PreToolUse's `permissionDecision`, weakest first: across hooks the
/// strongest wins (deny > defer > ask > allow, as Claude Code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionDecision {
    /// Skip the approval prompt (deny rules still hold).
    Allow,
    /// Ask the user.
    Ask,
    /// Leave it to the usual flow (the policy and its approval), whatever
    /// other hooks allowed or asked: Claude Code ranks it above `ask`.
    Defer,
    /// Refuse the call; the reason goes to the model.
    Deny,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn pre_tool_use_input_has_claude_codes_field_names_and_nothing_else() {
        let input = HookInput {
            session_id: "s1".into(),
            transcript_path: "/tmp/s.jsonl".into(),
            cwd: "/repo".into(),
            permission_mode: "default".into(),
            hook_event_name: HookEvent::PreToolUse,
            tool_name: Some("bash".into()),
            tool_input: Some(json!({"command": "ls"})),
            tool_use_id: Some("call_1".into()),
            tool_response: None,
            prompt: None,
            source: None,
            stop_hook_active: None,
            last_assistant_message: None,
        };
        assert_eq!(
            serde_json::to_value(&input).unwrap(),
            json!({
                "session_id": "s1",
                "transcript_path": "/tmp/s.jsonl",
                "cwd": "/repo",
                "permission_mode": "default",
                "hook_event_name": "PreToolUse",
                "tool_name": "bash",
                "tool_input": {"command": "ls"},
                "tool_use_id": "call_1"
            })
        );
    }

    #[test]
    fn claude_codes_output_shape_parses_field_by_field() {
        let output: HookOutput = serde_json::from_value(json!({
            "continue": false,
            "stopReason": "done",
            "suppressOutput": true,
            "systemMessage": "note",
            "decision": "block",
            "reason": "why",
            "unknownField": 1,
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "no",
                "updatedInput": {"command": "ls -a"},
                "additionalContext": "ctx",
                "updatedMCPToolOutput": "out"
            }
        }))
        .unwrap();
        assert_eq!(
            output,
            HookOutput {
                continue_: Some(false),
                stop_reason: Some("done".into()),
                suppress_output: Some(true),
                system_message: Some("note".into()),
                decision: Some("block".into()),
                reason: Some("why".into()),
                hook_specific_output: Some(HookSpecificOutput {
                    hook_event_name: Some("PreToolUse".into()),
                    permission_decision: Some(PermissionDecision::Deny),
                    permission_decision_reason: Some("no".into()),
                    updated_input: Some(json!({"command": "ls -a"})),
                    additional_context: Some("ctx".into()),
                    updated_mcp_tool_output: Some(json!("out")),
                }),
            }
        );
    }
}
