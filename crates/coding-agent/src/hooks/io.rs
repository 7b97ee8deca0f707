//! The JSON a hook reads on stdin and the JSON it may write on stdout, in
//! Claude Code's exact shapes (field names included), so scripts written for
//! Claude Code read and answer them unchanged.

use agent_core::ToolCallContext;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::HookEvent;

/// What a hook reads on stdin: the fields every event shares, then the
/// event's name and its own.
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
    /// `hook_event_name` and the fields only that event has.
    #[serde(flatten)]
    pub event: EventInput,
}

/// One event's part of [`HookInput`]: its name as `hook_event_name` and
/// exactly its own fields, so no event shows another's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "hook_event_name")]
pub enum EventInput {
    /// Before a tool runs.
    PreToolUse(ToolCallInput),
    /// After a tool ran.
    PostToolUse {
        /// The call.
        #[serde(flatten)]
        call: ToolCallInput,
        /// The result as the session file saves it
        /// (`{"content": [...], "details": ..., "isError": bool}`).
        tool_response: Value,
    },
    /// After a tool failed (PostToolUse runs only after one that did not).
    PostToolUseFailure {
        /// The call.
        #[serde(flatten)]
        call: ToolCallInput,
        /// What the model reads of the failure (the result's text).
        error: String,
        /// True when the user's abort ended the call.
        is_interrupt: bool,
    },
    /// A call is about to wait for the user's approval: a hook may answer
    /// in the user's place.
    PermissionRequest {
        /// The call, with the arguments the user would be shown.
        #[serde(flatten)]
        call: ToolCallInput,
        /// Why it needs approval (ours; Claude Code has no such field).
        reason: String,
    },
    /// A prompt is submitted.
    UserPromptSubmit {
        /// The prompt's text.
        prompt: String,
    },
    /// The agent would stop.
    Stop {
        /// True when the agent already goes on because a Stop hook blocked
        /// (a hook checks it to avoid keeping the agent going forever).
        stop_hook_active: bool,
        /// The text of the model's last answer.
        last_assistant_message: String,
    },
    /// A session starts, is cleared or was compacted.
    SessionStart {
        /// `startup`, `resume`, `clear` or `compact`.
        source: String,
    },
    /// The conversation is about to be compacted.
    PreCompact {
        /// `manual` (`/compact`, RPC `compact`) or `auto` (the context
        /// passed its threshold, or overflowed).
        trigger: String,
        /// The focus given to `/compact` (`""` without one).
        custom_instructions: String,
    },
    /// The session ends.
    SessionEnd {
        /// `clear` (a new session replaces it), `prompt_input_exit` (the
        /// user quit the interactive UI) or `other` (a run ended).
        reason: String,
    },
    /// The agent waits for the user.
    Notification {
        /// What to tell the user.
        message: String,
        /// `permission_prompt`.
        notification_type: String,
    },
}

impl EventInput {
    /// The event these fields are for.
    pub fn event(&self) -> HookEvent {
        match self {
            EventInput::PreToolUse(_) => HookEvent::PreToolUse,
            EventInput::PostToolUse { .. } => HookEvent::PostToolUse,
            EventInput::PostToolUseFailure { .. } => HookEvent::PostToolUseFailure,
            EventInput::PermissionRequest { .. } => HookEvent::PermissionRequest,
            EventInput::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            EventInput::Stop { .. } => HookEvent::Stop,
            EventInput::SessionStart { .. } => HookEvent::SessionStart,
            EventInput::PreCompact { .. } => HookEvent::PreCompact,
            EventInput::SessionEnd { .. } => HookEvent::SessionEnd,
            EventInput::Notification { .. } => HookEvent::Notification,
        }
    }

    /// What the event's matchers select on, as in Claude Code: the tool's
    /// name, SessionStart's source, PreCompact's trigger, SessionEnd's
    /// reason, the notification's type; `None` for the events without a
    /// matcher (every hook of theirs runs).
    pub fn matched(&self) -> Option<&str> {
        if let Some(call) = self.call() {
            return Some(&call.tool_name);
        }
        match self {
            EventInput::SessionStart { source } => Some(source),
            EventInput::PreCompact { trigger, .. } => Some(trigger),
            EventInput::SessionEnd { reason } => Some(reason),
            EventInput::Notification {
                notification_type, ..
            } => Some(notification_type),
            _ => None,
        }
    }

    /// The call of a tool event (what a handler's `if` judges); `None` for
    /// the other events.
    pub fn call(&self) -> Option<&ToolCallInput> {
        match self {
            EventInput::PreToolUse(call)
            | EventInput::PostToolUse { call, .. }
            | EventInput::PostToolUseFailure { call, .. }
            | EventInput::PermissionRequest { call, .. } => Some(call),
            _ => None,
        }
    }
}

/// The fields of the tool events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallInput {
    /// The tool's name (ours: `bash`, `read`, `mcp__server__tool`).
    pub tool_name: String,
    /// The validated arguments.
    pub tool_input: Value,
    /// The call's id.
    pub tool_use_id: String,
}

impl ToolCallInput {
    /// The fields of `call`, with its validated arguments.
    pub fn of(call: &ToolCallContext<'_>) -> Self {
        ToolCallInput {
            tool_name: call.tool_call.name.clone(),
            tool_input: call.args.clone(),
            tool_use_id: call.tool_call.id.clone(),
        }
    }
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
    pub decision: Option<HookDecision>,
    /// Why, with `decision`.
    pub reason: Option<String>,
    /// The event's own answer.
    pub hook_specific_output: Option<HookSpecificOutput>,
}

/// The top-level `decision`. Another value makes the answer one that does
/// not fit (a warning, or a block with `"onError": "block"`) as in Claude
/// Code, whose schema has only these two: read as a string, `"deny"` there
/// let the call run unseen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookDecision {
    /// Refuse (the call, the prompt, the compaction) or, on Stop, go on.
    Block,
    /// PreToolUse's older form of `permissionDecision: "allow"`.
    Approve,
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
    /// PermissionRequest: the answer given in the user's place.
    pub decision: Option<PermissionRequestAnswer>,
}

/// PermissionRequest's `decision`: `{"behavior": "allow", "updatedInput":
/// {...}}` or `{"behavior": "deny", "message": "..."}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequestAnswer {
    /// Allow or deny the call.
    pub behavior: PermissionBehavior,
    /// Allow: the arguments the tool runs with instead (the whole input).
    pub updated_input: Option<Value>,
    /// Deny: what the model reads.
    pub message: Option<String>,
    /// Deny: stop the agent too, as the user's Esc does (Claude Code's
    /// `interrupt`).
    pub interrupt: Option<bool>,
    /// Allow: rules to add from now on (Claude Code's entries, e.g.
    /// `{"type": "addRules", "rules": [...], "behavior": "allow",
    /// "destination": "session"}`), read by `guard::updates`.
    pub updated_permissions: Option<Value>,
}

/// PermissionRequest's `decision.behavior`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionBehavior {
    /// Run the call, as if the user approved it once.
    Allow,
    /// Refuse it, as if the user denied it.
    Deny,
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
            event: EventInput::PreToolUse(ToolCallInput {
                tool_name: "bash".into(),
                tool_input: json!({"command": "ls"}),
                tool_use_id: "call_1".into(),
            }),
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
    fn each_event_adds_its_name_and_only_its_own_fields() {
        let call = ToolCallInput {
            tool_name: "read".into(),
            tool_input: json!({"path": "a"}),
            tool_use_id: "c".into(),
        };
        let cases = [
            (
                EventInput::PostToolUse {
                    call: call.clone(),
                    tool_response: json!({"isError": false}),
                },
                json!({"tool_name": "read", "tool_input": {"path": "a"}, "tool_use_id": "c",
                       "tool_response": {"isError": false}}),
            ),
            (
                EventInput::PostToolUseFailure {
                    call: call.clone(),
                    error: "Command exited with code 1".into(),
                    is_interrupt: false,
                },
                json!({"tool_name": "read", "tool_input": {"path": "a"}, "tool_use_id": "c",
                       "error": "Command exited with code 1", "is_interrupt": false}),
            ),
            (
                EventInput::PermissionRequest {
                    call: call.clone(),
                    reason: "needs approval".into(),
                },
                json!({"tool_name": "read", "tool_input": {"path": "a"}, "tool_use_id": "c",
                       "reason": "needs approval"}),
            ),
            (
                EventInput::UserPromptSubmit {
                    prompt: "hi".into(),
                },
                json!({"prompt": "hi"}),
            ),
            (
                EventInput::Stop {
                    stop_hook_active: true,
                    last_assistant_message: "done".into(),
                },
                json!({"stop_hook_active": true, "last_assistant_message": "done"}),
            ),
            (
                EventInput::SessionStart {
                    source: "resume".into(),
                },
                json!({"source": "resume"}),
            ),
            (
                EventInput::PreCompact {
                    trigger: "manual".into(),
                    custom_instructions: "keep the API".into(),
                },
                json!({"trigger": "manual", "custom_instructions": "keep the API"}),
            ),
            (
                EventInput::SessionEnd {
                    reason: "clear".into(),
                },
                json!({"reason": "clear"}),
            ),
            (
                EventInput::Notification {
                    message: "m".into(),
                    notification_type: "permission_prompt".into(),
                },
                json!({"message": "m", "notification_type": "permission_prompt"}),
            ),
        ];
        for (event, mut expected) in cases {
            expected["hook_event_name"] = json!(event.event().name());
            let input = HookInput {
                session_id: "s1".into(),
                transcript_path: String::new(),
                cwd: "/repo".into(),
                permission_mode: "default".into(),
                event,
            };
            let mut value = serde_json::to_value(&input).unwrap();
            for shared in ["session_id", "transcript_path", "cwd", "permission_mode"] {
                value.as_object_mut().unwrap().remove(shared).unwrap();
            }
            assert_eq!(value, expected);
        }
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
                decision: Some(HookDecision::Block),
                reason: Some("why".into()),
                hook_specific_output: Some(HookSpecificOutput {
                    hook_event_name: Some("PreToolUse".into()),
                    permission_decision: Some(PermissionDecision::Deny),
                    permission_decision_reason: Some("no".into()),
                    updated_input: Some(json!({"command": "ls -a"})),
                    additional_context: Some("ctx".into()),
                    updated_mcp_tool_output: Some(json!("out")),
                    decision: None,
                }),
            }
        );
    }
}
